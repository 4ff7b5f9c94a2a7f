package inbound_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/smtp"
	"net/textproto"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/httpapi/apitest"
	"github.com/govkit/govkit/notify/inbound"
	"github.com/govkit/govkit/notify/mailcatcher"
	"github.com/govkit/govkit/notify/subscription"
)

func TestMain(m *testing.M) { apitest.Main(m) }

// env is the whole service under test (apitest: the API on a loopback
// listener, the embedded store, outbound mail to a catcher) with its
// inbound SMTP server listening on loopback.
type env struct {
	*apitest.Env
	smtpAddr string
	// stop stops the inbound server (the test's cleanup stops it anyway).
	stop func(context.Context) error
	// inboundLog is the inbound server's own log.
	inboundLog *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the service with config trees merged over apitest's (inbound
// domain invalid.local, unsubThreshold 2).
func start(t testing.TB, trees ...map[string]any) *env {
	t.Helper()
	return startWith(t, apitest.Options{Config: trees})
}

// startWith is start with apitest's options (a shared store of wrong-code
// counters, say).
func startWith(t testing.TB, o apitest.Options) *env {
	t.Helper()
	e := &env{Env: apitest.Start(t, o), inboundLog: &syncBuffer{}}
	e.smtpAddr, e.stop = e.startInbound(t, e.App.Subscriptions)
	return e
}

// startInbound starts an inbound server of e's service on loopback, with
// subs as its subscription service: e's own, or another node's.
func (e *env) startInbound(t testing.TB, subs *subscription.Service) (addr string, stop func(context.Context) error) {
	t.Helper()
	srv, _, err := inbound.New(inbound.Options{
		Config: e.Config, Store: e.Store, Subscriptions: subs, HTTPHost: e.URL,
		Logger: slog.New(slog.NewTextHandler(e.inboundLog, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop, err = srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return addr, stop
}

// send delivers msg to the inbound server in one SMTP transaction and
// returns the server's refusal, if any (a *textproto.Error).
func (e *env) send(t testing.TB, from string, to []string, msg string) error {
	t.Helper()
	c, err := smtp.Dial(e.smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mx.sender.test"); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail(from); err != nil {
		return err
	}
	for _, r := range to {
		if err := c.Rcpt(r); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(msg)); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// code is the SMTP reply code of err, or 250 for nil.
func code(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 250
	}
	var te *textproto.Error
	if !errors.As(err, &te) {
		t.Fatalf("not an SMTP reply: %v", err)
	}
	return te.Code
}

// reply is err as "code text", e.g. "550 5.7.1 Relaying denied", or
// "250" for nil.
func reply(t *testing.T, err error) string {
	t.Helper()
	var te *textproto.Error
	if err != nil && errors.As(err, &te) {
		return fmt.Sprintf("%d %s", te.Code, te.Msg)
	}
	return fmt.Sprint(code(t, err))
}

var confirmationCodeRe = regexp.MustCompile(`Enter (\d+) on screen`)

// subscribe subscribes address to service as a subscriber does through
// the API: an anonymous POST, then the confirmation link with the code
// from the confirmation mail. It returns the subscription's id.
func (e *env) subscribe(t testing.TB, service, address string) string {
	t.Helper()
	before := len(e.Mail.Mails())
	r := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": service, "channel": "email", "userChannelId": address}, apitest.Anonymous...).Expect(t, 200).Map(t)
	id := r["id"].(string)
	m := e.WaitMail(t, before+1)[before]
	match := confirmationCodeRe.FindStringSubmatch(m.Text)
	if match == nil {
		t.Fatalf("no confirmation code in %q", m.Text)
	}
	e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode="+match[1], nil, apitest.Anonymous...).Expect(t, 200)
	return id
}

// subscription reads a subscription as an administrator.
func (e *env) subscription(t *testing.T, id string) map[string]any {
	t.Helper()
	filter := url.QueryEscape(fmt.Sprintf(`{"where":{"id":%q}}`, id))
	var subs []map[string]any
	e.Do(t, "GET", "/api/subscriptions?filter="+filter, nil).Expect(t, 200).JSON(t, &subs)
	if len(subs) != 1 {
		t.Fatalf("subscription %s: %d found", id, len(subs))
	}
	return subs[0]
}

// bounces lists the bounce records through the API.
func (e *env) bounces(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	e.Do(t, "GET", "/api/bounces", nil).Expect(t, 200).JSON(t, &out)
	return out
}

// notify sends a unicast email notification of service to address
// through the API and returns the mail the SMTP server received.
func (e *env) notify(t testing.TB, service, address string) mailcatcher.Mail {
	t.Helper()
	before := len(e.Mail.Mails())
	n := e.Do(t, "POST", "/api/notifications", map[string]any{
		"serviceName": service, "channel": "email", "userChannelId": address,
		"message": map[string]any{"from": "no_reply@invalid.local", "subject": "Road closures", "textBody": "Highway 1 is closed."},
	}).Expect(t, 200).Map(t)
	if n["state"] != "sent" {
		t.Fatalf("notification %v", n)
	}
	return e.WaitMail(t, before+1)[before]
}

func header(m mailcatcher.Mail, name string) string {
	for k, v := range m.Headers {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

var mailtoRe = regexp.MustCompile(`<mailto:([^>]+)>`)

// dsn is a bounce as receiving servers write them (RFC 3464): a human
// part, the delivery status and the returned headers.
func dsn(bounceAddr, recipient, status string) string {
	return "From: Mail Delivery System <MAILER-DAEMON@mx.example.net>\r\n" +
		"To: " + bounceAddr + "\r\n" +
		"Subject: Undelivered Mail Returned to Sender\r\n" +
		"Date: Mon, 02 Mar 2026 10:00:00 +0000\r\n" +
		"Auto-Submitted: auto-replied\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: multipart/report; report-type=delivery-status; boundary=\"r1\"\r\n" +
		"\r\n" +
		"--r1\r\n" +
		"Content-Type: text/plain\r\n" +
		"\r\n" +
		"Your message could not be delivered to one or more recipients.\r\n" +
		"--r1\r\n" +
		"Content-Type: message/delivery-status\r\n" +
		"\r\n" +
		"Reporting-MTA: dns; mx.example.net\r\n" +
		"\r\n" +
		"Final-Recipient: rfc822; " + recipient + "\r\n" +
		"Action: failed\r\n" +
		"Status: " + status + "\r\n" +
		"\r\n" +
		"--r1\r\n" +
		"Content-Type: text/rfc822-headers\r\n" +
		"\r\n" +
		"Return-Path: <" + bounceAddr + ">\r\n" +
		"Subject: Road closures\r\n" +
		"\r\n" +
		"--r1--\r\n"
}

// waitFor polls cond until it holds, failing t after a generous bound
// that only keeps a broken test from hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
