package mailcatcher_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/mailcatcher"
)

// start runs a catcher and an email sender pointed at it.
func start(t *testing.T, opts mailcatcher.Options) (*mailcatcher.Catcher, *email.Sender, *httptest.Server) {
	t.Helper()
	opts.Logger = slog.New(slog.DiscardHandler)
	c := mailcatcher.New(opts)
	if opts.Dir != "" {
		var err error
		if c, err = mailcatcher.Open(opts); err != nil {
			t.Fatal(err)
		}
	}
	addr, stop, err := c.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stop(ctx)
	})
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	snd, err := email.New(email.SMTPConfig{Host: host, Port: p}, email.Addressing{InboundDomain: "localhost", Bounce: true, ListUnsubscribeByEmail: true},
		email.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = snd.Close() })
	web := httptest.NewServer(http.StripPrefix("/mail", c.Handler()))
	t.Cleanup(web.Close)
	return c, snd, web
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func push(subject string) email.Message {
	return email.Message{
		From:    "Notify <no_reply@invalid.local>",
		To:      "alice@example.com",
		Subject: subject,
		Text:    "Dear <Alice>, the road is closed.",
		HTML:    `<p onclick="x()">Road <b>closed</b></p><script>alert(1)</script><img src="https://tracker.example/p.gif">`,
		Push: &email.Push{
			ListID:             email.ListID("http://localhost:3000", "roads"),
			UnsubscribeURL:     "http://localhost:3000/api/subscriptions/65a1/unsubscribe?unsubscriptionCode=12345",
			SubscriptionID:     "65a1",
			UnsubscriptionCode: "12345",
		},
	}
}

func TestCaughtMailReadBackOverHTTP(t *testing.T) {
	_, snd, web := start(t, mailcatcher.Options{})
	if err := snd.Send(context.Background(), push("Road closure <b>now</b>")); err != nil {
		t.Fatal(err)
	}

	res, body := get(t, web.URL+"/mail/api/mails")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET api/mails: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var mails []mailcatcher.Mail
	if err := json.Unmarshal([]byte(body), &mails); err != nil {
		t.Fatal(err)
	}
	if len(mails) != 1 {
		t.Fatalf("%d mails, want 1", len(mails))
	}
	m := mails[0]
	checks := []struct{ name, got, want string }{
		{"envelope sender is the VERP address", m.Envelope.From, "bn-65a1-12345@localhost"},
		{"envelope recipient", strings.Join(m.Envelope.To, ","), "alice@example.com"},
		{"From header", m.From, "Notify <no_reply@invalid.local>"},
		{"To header", m.To, "alice@example.com"},
		{"Subject", m.Subject, "Road closure <b>now</b>"},
		{"text body", strings.TrimSpace(m.Text), "Dear <Alice>, the road is closed."},
		{"List-Id", m.Headers["List-Id"][0], "<http://localhost:3000/roads>"},
		{"List-Unsubscribe-Post", m.Headers["List-Unsubscribe-Post"][0], "List-Unsubscribe=One-Click"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !strings.Contains(m.HTML, "Road <b>closed</b>") {
		t.Errorf("html = %q", m.HTML)
	}
	if m.Received.IsZero() || m.Received.Location() != time.UTC || m.Size == 0 || m.ID == 0 {
		t.Errorf("received/size/id = %v %d %d", m.Received, m.Size, m.ID)
	}

	t.Run("the list page escapes what mail contains", func(t *testing.T) {
		res, page := get(t, web.URL+"/mail/")
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET /mail/: %d", res.StatusCode)
		}
		if !strings.Contains(page, "Road closure &lt;b&gt;now&lt;/b&gt;") || strings.Contains(page, "<b>now</b>") {
			t.Errorf("subject is not escaped on the list page:\n%s", page)
		}
		if !strings.Contains(page, fmt.Sprintf(`href="m/%d/"`, m.ID)) || !strings.Contains(page, "alice@example.com") {
			t.Errorf("list page lacks the message link or recipient:\n%s", page)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("list page CSP = %q", csp)
		}
	})
	t.Run("the message page escapes text and frames HTML in a sandbox", func(t *testing.T) {
		res, page := get(t, fmt.Sprintf("%s/mail/m/%d/", web.URL, m.ID))
		if res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
		for _, want := range []string{"Dear &lt;Alice&gt;", `<iframe sandbox="allow-popups allow-popups-to-escape-sandbox" src="html"`, "bn-65a1-12345@localhost", "List-Unsubscribe"} {
			if !strings.Contains(page, want) {
				t.Errorf("message page lacks %q", want)
			}
		}
		if strings.Contains(page, "<script>") || strings.Contains(page, "<p onclick") {
			t.Error("the HTML body leaked into the message page unescaped")
		}
	})
	t.Run("the HTML body is served under a sandboxing CSP", func(t *testing.T) {
		res, page := get(t, fmt.Sprintf("%s/mail/m/%d/html", web.URL, m.ID))
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"sandbox", "default-src 'none'", "img-src data:"} {
			if !strings.Contains(csp, want) {
				t.Errorf("CSP %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "allow-scripts") || strings.Contains(csp, "allow-same-origin") {
			t.Errorf("CSP %q lets the mail run scripts or share our origin", csp)
		}
		if !strings.Contains(page, "Road <b>closed</b>") || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("html endpoint: %q", page)
		}
	})
	t.Run("the source is plain text", func(t *testing.T) {
		res, src := get(t, fmt.Sprintf("%s/mail/m/%d/raw", web.URL, m.ID))
		if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") || !strings.Contains(src, "List-Unsubscribe:") {
			t.Errorf("raw: %s %q", res.Header.Get("Content-Type"), src)
		}
	})
	t.Run("one message as JSON", func(t *testing.T) {
		_, b := get(t, fmt.Sprintf("%s/mail/api/mails/%d", web.URL, m.ID))
		var one mailcatcher.Mail
		if err := json.Unmarshal([]byte(b), &one); err != nil || one.ID != m.ID || one.Subject != m.Subject {
			t.Errorf("one = %+v (%v)", one, err)
		}
	})
}

func TestUnknownMessagesAre404(t *testing.T) {
	_, _, web := start(t, mailcatcher.Options{})
	for _, path := range []string{"/mail/m/99/", "/mail/m/x/html", "/mail/api/mails/99", "/mail/m/1/raw"} {
		t.Run(path, func(t *testing.T) {
			if res, _ := get(t, web.URL+path); res.StatusCode != http.StatusNotFound {
				t.Errorf("status %d, want 404", res.StatusCode)
			}
		})
	}
}

func TestKeepsOnlyTheNewestMessages(t *testing.T) {
	c, snd, _ := start(t, mailcatcher.Options{MaxMessages: 3})
	for i := 1; i <= 5; i++ {
		if err := snd.Send(context.Background(), email.Message{From: "a@example.org", To: "b@example.org", Subject: fmt.Sprintf("m%d", i), Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, m := range c.Mails() {
		got = append(got, m.Subject)
	}
	if strings.Join(got, ",") != "m5,m4,m3" {
		t.Errorf("kept %v, want the newest three, newest first", got)
	}
}

func TestKeepsWithinTheByteBudget(t *testing.T) {
	c, snd, _ := start(t, mailcatcher.Options{MaxBytes: 3000})
	for i := 1; i <= 4; i++ {
		if err := snd.Send(context.Background(), email.Message{From: "a@example.org", To: "b@example.org", Subject: fmt.Sprintf("m%d", i), Text: strings.Repeat("x", 1000)}); err != nil {
			t.Fatal(err)
		}
	}
	mails := c.Mails()
	total := 0
	for _, m := range mails {
		total += m.Size
	}
	if total > 3000 || len(mails) == 0 || mails[0].Subject != "m4" {
		t.Errorf("kept %d mails, %d bytes; newest %q", len(mails), total, mails[0].Subject)
	}
}

func TestStopClosesTheSMTPPort(t *testing.T) {
	c := mailcatcher.New(mailcatcher.Options{Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	addr, stop, err := c.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	greeting := make([]byte, 64)
	n, _ := conn.Read(greeting)
	_ = conn.Close()
	if !strings.HasPrefix(string(greeting[:n]), "220 ") {
		t.Fatalf("greeting %q", greeting[:n])
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := stop(sctx); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		_ = conn.Close()
		t.Error("the SMTP port still accepts connections after stop")
	}
}
