package channel_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/mailcatcher"
)

func TestSend(t *testing.T) {
	catcher := mailcatcher.New(mailcatcher.Options{})
	addr, stop, err := catcher.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	var mu sync.Mutex
	var swift []map[string]any
	var paths []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		swift = append(swift, b)
		paths = append(paths, r.URL.Path)
		mu.Unlock()
	}))
	defer fake.Close()
	cfg, err := config.New(map[string]any{
		"sms": map[string]any{"provider": "swift", "providerSettings": map[string]any{"swift": map[string]any{"accountKey": "k", "apiUrlPrefix": fake.URL + "/"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	s, warnings, err := channel.FromConfig(cfg, channel.Options{SMTP: &email.SMTPConfig{Host: host, Port: p, IgnoreTLS: true, Name: "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(warnings) != 0 {
		t.Fatalf("warnings %v", warnings)
	}
	ctx := context.Background()

	t.Run("email goes over SMTP with subject, text and HTML", func(t *testing.T) {
		if err := s.Send(ctx, channel.Message{Channel: "email", To: "a@example.org", From: "no_reply@example.org", Subject: "Hi", Text: "text", HTML: "<p>html</p>"}); err != nil {
			t.Fatal(err)
		}
		ms := catcher.Mails()
		if len(ms) != 1 || ms[0].Subject != "Hi" || !strings.Contains(ms[0].Text, "text") || !strings.Contains(ms[0].HTML, "html") || ms[0].Envelope.To[0] != "a@example.org" {
			t.Fatalf("caught %+v", ms)
		}
	})
	t.Run("sms goes to the configured provider with the subscription as reference", func(t *testing.T) {
		if err := s.Send(ctx, channel.Message{Channel: "sms", To: "250 555", Text: "hello", SubscriptionID: "abc"}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(swift) != 1 || swift[0]["MessageBody"] != "hello" || swift[0]["Reference"] != "abc" || !strings.HasPrefix(paths[0], "/k/") {
			t.Fatalf("swift got %v %v", paths, swift)
		}
	})
	t.Run("an unknown channel is an error", func(t *testing.T) {
		if err := s.Send(ctx, channel.Message{Channel: "fax", To: "1"}); !errors.Is(err, channel.ErrUnknownChannel) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestFromConfigWithoutSMTPWarnsAndStaysOffline(t *testing.T) {
	cfg, err := config.New()
	if err != nil {
		t.Fatal(err)
	}
	s, warnings, err := channel.FromConfig(cfg, channel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	joined := strings.Join(warnings, "\n")
	if !strings.Contains(joined, "email.smtp") {
		t.Fatalf("warnings %q", joined)
	}
}
