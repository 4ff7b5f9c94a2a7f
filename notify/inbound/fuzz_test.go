package inbound_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/httpapi/apitest"
	"github.com/govkit/govkit/notify/subscription"
)

// FuzzInboundSMTP sends whatever envelope sender, recipient and message the
// fuzzer makes to a running inbound server over SMTP, the service behind it
// on the embedded store. The corpus starts from the addresses the service
// really sends from (a subscription's bn- and un- addresses with their
// right codes) and from bounces and MIME structures of every kind, so the
// fuzzer reaches the bounce and unsubscribe handling, not only the
// recipient parser.
//
// What must hold for any input:
//   - every command is answered with an SMTP reply: the connection is never
//     dropped, and the next input finds the server serving;
//   - a bystander subscription, whose codes are in no input, is neither
//     unsubscribed nor charged a bounce: only the right code acts on a
//     subscription.
//
// The budgets of wrong codes are lifted for this server (a subscription
// service of its own), or the first few guesses would spend them and every
// later input would stop at RCPT with 450.
func FuzzInboundSMTP(f *testing.F) {
	e := &env{Env: apitest.Start(f, apitest.Options{Config: []map[string]any{{
		"email": map[string]any{"bounce": map[string]any{"unsubThreshold": 1e9}},
	}}}), inboundLog: &syncBuffer{}}
	subs := subscription.New(subscription.Options{
		Config: e.Config, Store: e.Store, Channel: e.App.Channel, Logger: slog.New(slog.DiscardHandler),
		AttemptLimits: subscription.AttemptLimits{PerClient: 1 << 30, PerSubscription: 1 << 30, Window: time.Minute},
	})
	f.Cleanup(func() { subs.Close() })
	e.smtpAddr, e.stop = e.startInbound(f, subs)

	const reader, bystander = "reader@example.com", "bystander@example.com"
	e.subscribe(f, "roads", reader)
	victim := e.subscribe(f, "roads", bystander)
	m := e.notify(f, "roads", reader)
	bn := m.Envelope.From
	match := mailtoRe.FindStringSubmatch(header(m, "List-Unsubscribe"))
	if match == nil {
		f.Fatalf("no mailto in List-Unsubscribe %q", header(m, "List-Unsubscribe"))
	}
	un := match[1]

	seeds := []struct{ from, rcpt, msg string }{
		{"", bn, dsn(bn, reader, "5.1.1")},
		{"", bn, dsn(bn, reader, "4.2.2")},
		{"", bn, dsn(bn, bystander, "5.1.1")},
		{"", bn, "Subject: Undelivered\r\n\r\n550 5.1.1 " + reader + " unknown\r\n"},
		{"", bn, "Content-Type: multipart/mixed; boundary=a\r\n\r\n--a\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Transfer-Encoding: base64\r\n\r\nNTUwIDUuMS4x\r\n--b--\r\n--a--\r\n"},
		{"", bn, "Content-Type: message/rfc822\r\n\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=E9=3D\r\n"},
		{"", bn, "this line is no header\r\n\r\n"},
		{reader, un, "Subject: unsubscribe\r\n\r\n"},
		{"someone.else@example.com", un, "unsubscribe\r\n"},
		{"", strings.Replace(bn, "-", "-9", 1), dsn(bn, reader, "5.1.1")},
		{reader, "un-0123456789abcdef01234567-12345@invalid.local", "x"},
		{reader, "postmaster@invalid.local", "x"},
		{reader, "reader@elsewhere.example", "x"},
		{reader, `"bn-x"@invalid.local`, ""},
	}
	for _, s := range seeds {
		f.Add(s.from, s.rcpt, []byte(s.msg))
	}

	f.Fuzz(func(t *testing.T, from, rcpt string, msg []byte) {
		// CR and LF would end the command early: a client cannot send them
		// inside an address (go-smtp's client refuses them before sending).
		if strings.ContainsAny(from+rcpt, "\r\n") {
			t.Skip()
		}
		nc, err := net.DialTimeout("tcp", e.smtpAddr, 10*time.Second)
		if err != nil {
			t.Fatalf("the server stopped accepting: %v", err)
		}
		// A bound on every read only keeps a broken server from hanging
		// the fuzzer.
		_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
		c := smtp.NewClient(nc)
		defer c.Close()
		if err := c.Hello("mx.fuzz.test"); err != nil {
			t.Fatalf("EHLO: %v", err)
		}
		var ended bool // the server said it closes the connection
		if step(t, "MAIL", c.Mail(from, nil), &ended) && step(t, "RCPT", c.Rcpt(rcpt, nil), &ended) {
			w, err := c.Data()
			if step(t, "DATA", err, &ended) {
				if _, err := w.Write(msg); err != nil {
					t.Fatalf("writing the message: %v", err)
				}
				step(t, "end of DATA", w.Close(), &ended)
			}
		}
		if err := c.Quit(); err != nil && !ended {
			t.Fatalf("QUIT: %v", err)
		}

		ctx := context.Background()
		s, err := e.Store.Subscriptions().FindByID(ctx, victim)
		if err != nil {
			t.Fatal(err)
		}
		if s.State != "confirmed" {
			t.Fatalf("from %q to %q: the bystander's subscription is %s", from, rcpt, s.State)
		}
		if n, err := e.Store.Bounces().Count(ctx, bson.D{{Key: "userChannelId", Value: bystander}}); err != nil || n != 0 {
			t.Fatalf("from %q to %q: %d bounce records for the bystander (%v)", from, rcpt, n, err)
		}
	})
}

// step reports whether an SMTP command was accepted; a refusal is an
// answer too, but anything else (the connection dropped, a reply that is
// no SMTP reply) fails t. A refusal that says the server closes the
// connection (421, or go-smtp's 500 for a line over its length limit)
// sets *ended: QUIT then has no one to answer it.
func step(t *testing.T, what string, err error, ended *bool) bool {
	t.Helper()
	var se *smtp.SMTPError
	switch {
	case err == nil:
		return true
	case errors.As(err, &se):
		if se.Code < 400 || se.Code > 599 {
			t.Fatalf("%s answered %d", what, se.Code)
		}
		if se.Code == 421 || strings.Contains(strings.ToLower(se.Message), "closing connection") {
			*ended = true
		}
		return false
	case errors.Is(err, io.EOF):
		t.Fatalf("%s: the server hung up", what)
	}
	// go-smtp's client checks some arguments itself (a length, a
	// character) and refuses to send them: nothing reached the server.
	if strings.Contains(err.Error(), "smtp:") {
		return false
	}
	t.Fatalf("%s: %v", what, err)
	return false
}
