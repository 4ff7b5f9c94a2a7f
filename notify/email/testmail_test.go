package email_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/govkit/govkit/notify/email"
)

// fakeEthereal answers POST /user as the Ethereal account API does, with an
// account whose SMTP server is the given sink.
func fakeEthereal(t *testing.T, s *sink, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	host, _, _ := net.SplitHostPort(s.addr)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var body map[string]string
		if r.Method != http.MethodPost || r.URL.Path != "/user" || r.Header.Get("Content-Type") != "application/json" ||
			json.NewDecoder(r.Body).Decode(&body) != nil || body["requestor"] == "" {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "error": "bad request"})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"status": "success",
			"user":   "jane.doe@ethereal.email",
			"pass":   "etherealpass",
			"smtp":   map[string]any{"host": host, "port": s.port(t), "secure": false},
			"imap":   map[string]any{"host": "imap.ethereal.email", "port": 993, "secure": true},
			"pop3":   map[string]any{"host": "pop3.ethereal.email", "port": 995, "secure": true},
			"web":    "https://ethereal.email",
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

type memStore struct {
	mu    sync.Mutex
	acct  *email.TestAccount
	saves int
}

func (m *memStore) LoadTestAccount(context.Context) (email.TestAccount, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.acct == nil {
		return email.TestAccount{}, false, nil
	}
	return *m.acct, true, nil
}

func (m *memStore) SaveTestAccount(_ context.Context, a email.TestAccount) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.acct = &a
	m.saves++
	return nil
}

func TestTestMailIsCreatedAtFirstSend(t *testing.T) {
	s := startSink(t, "127.0.0.1", func(s *sink) { s.auth = "jane.doe@ethereal.email:etherealpass" })
	var calls atomic.Int32
	api := fakeEthereal(t, s, &calls)
	store := &memStore{}
	snd := email.NewTestMail(&email.Ethereal{APIURL: api.URL, Store: store}, email.Addressing{}, quiet)
	t.Cleanup(func() { _ = snd.Close() })

	if calls.Load() != 0 {
		t.Fatal("the account service was called before any mail was sent")
	}
	for i := 0; i < 3; i++ {
		if err := snd.Send(context.Background(), plain("a@example.com")); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("account service called %d times, want once", calls.Load())
	}
	if len(s.messages()) != 3 {
		t.Errorf("sink got %d messages, want 3", len(s.messages()))
	}
	if store.saves != 1 || store.acct.Pass != "etherealpass" || store.acct.Web != "https://ethereal.email" {
		t.Errorf("stored account = %+v after %d saves", store.acct, store.saves)
	}
	raw, _ := json.Marshal(store.acct)
	for _, key := range []string{`"user"`, `"pass"`, `"smtp":{"host"`, `"imap"`, `"web"`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("stored JSON %s lacks %s (the original's etherealAccount shape)", raw, key)
		}
	}
}

func TestTestMailUsesStoredAccount(t *testing.T) {
	s := startSink(t, "127.0.0.1", nil)
	var calls atomic.Int32
	api := fakeEthereal(t, s, &calls)
	host, _, _ := net.SplitHostPort(s.addr)
	store := &memStore{acct: &email.TestAccount{User: "old@ethereal.email", SMTP: email.Endpoint{Host: host, Port: s.port(t)}}}
	snd := email.NewTestMail(&email.Ethereal{APIURL: api.URL, Store: store}, email.Addressing{}, quiet)
	t.Cleanup(func() { _ = snd.Close() })
	if err := snd.Send(context.Background(), plain("a@example.com")); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 {
		t.Errorf("a new account was made although one is stored")
	}
}

func TestTestMailUnavailable(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"status":"error","error":"Too many accounts created"}`))
	}))
	t.Cleanup(refusing.Close)
	cases := []struct {
		name, api, want string
	}{
		{"unreachable service", closedURL, "connect"},
		{"service refuses with its message", refusing.URL, "Too many accounts created"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snd := email.NewTestMail(&email.Ethereal{APIURL: tc.api}, email.Addressing{}, quiet)
			t.Cleanup(func() { _ = snd.Close() })
			err := snd.Send(context.Background(), plain("a@example.com"))
			var se *email.SendError
			if !errors.As(err, &se) || se.Stage != email.StageTestMail || se.Permanent {
				t.Fatalf("err = %v, want a transient test-mail SendError", err)
			}
			if !errors.Is(err, email.ErrTestMailUnavailable) || !strings.Contains(err.Error(), "email.smtp") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q should say to configure email.smtp and contain %q", err, tc.want)
			}
		})
	}
}

func TestTestMailFailureIsRememberedBriefly(t *testing.T) {
	var calls atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"status":"error","error":"maintenance"}`))
	}))
	t.Cleanup(api.Close)
	snd := email.NewTestMail(&email.Ethereal{APIURL: api.URL}, email.Addressing{}, quiet)
	t.Cleanup(func() { _ = snd.Close() })
	for i := 0; i < 5; i++ {
		if err := snd.Send(context.Background(), plain("a@example.com")); !errors.Is(err, email.ErrTestMailUnavailable) {
			t.Fatalf("send %d: err = %v", i, err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("account service called %d times for 5 sends in a row, want 1", calls.Load())
	}
}
