package inbound_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/govkit/govkit/notify/inbound"
)

// conn is a raw SMTP connection, for what a well-behaved client library
// would not send.
type conn struct {
	t *testing.T
	*textproto.Conn
	nc net.Conn
}

// dial connects and reads the greeting, failing t unless it is 220.
func (e *env) dial(t *testing.T) *conn {
	t.Helper()
	c := e.dialRaw(t)
	if code, msg := c.response(); code != 220 {
		t.Fatalf("greeting %d %s", code, msg)
	}
	return c
}

func (e *env) dialRaw(t *testing.T) *conn {
	t.Helper()
	nc, err := net.Dial("tcp", e.smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	// A bound on every read only keeps a broken test from hanging.
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &conn{t: t, Conn: textproto.NewConn(nc), nc: nc}
}

func (c *conn) response() (int, string) {
	c.t.Helper()
	code, msg, err := c.ReadResponse(0)
	if err != nil {
		c.t.Fatalf("reading the reply: %v", err)
	}
	return code, msg
}

// cmd sends one command line and returns the reply.
func (c *conn) cmd(format string, args ...any) (int, string) {
	c.t.Helper()
	if err := c.PrintfLine(format, args...); err != nil {
		c.t.Fatal(err)
	}
	return c.response()
}

func (c *conn) expect(want int, format string, args ...any) string {
	c.t.Helper()
	code, msg := c.cmd(format, args...)
	if code != want {
		c.t.Fatalf("%s: %d %s, want %d", fmt.Sprintf(format, args...), code, msg, want)
	}
	return msg
}

// closed reports whether the server ends the connection: the next read
// finds EOF (after any last replies).
func (c *conn) closed() bool {
	r := bufio.NewReader(c.nc)
	for {
		if _, err := r.ReadString('\n'); err != nil {
			return !isTimeout(err)
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestEHLOAdvertisesTheLimitsAndNoAUTH(t *testing.T) {
	e := start(t)
	c := e.dial(t)
	ext := c.expect(250, "EHLO mx.sender.test")
	for _, want := range []string{"SIZE 1000000", "LIMITS RCPTMAX=10"} {
		if !strings.Contains(ext, want) {
			t.Errorf("EHLO lacks %q:\n%s", want, ext)
		}
	}
	if strings.Contains(ext, "AUTH") {
		t.Errorf("EHLO offers AUTH:\n%s", ext)
	}
	if strings.Contains(ext, "STARTTLS") {
		t.Errorf("EHLO offers STARTTLS without a certificate:\n%s", ext)
	}
	if code, _ := c.cmd("AUTH PLAIN AGFkbWluAHNlY3JldA=="); code < 500 {
		t.Errorf("AUTH answered %d", code)
	}
}

func TestMessageSizeLimit(t *testing.T) {
	e := start(t, map[string]any{"email": map[string]any{"bounce": map[string]any{"unsubThreshold": 100.0}}})
	const reader = "reader@example.com"
	e.subscribe(t, "roads", reader)
	bn := e.notify(t, "roads", reader).Envelope.From

	t.Run("a declared size over the limit is refused at MAIL", func(t *testing.T) {
		c := e.dial(t)
		c.expect(250, "EHLO mx.sender.test")
		c.expect(552, "MAIL FROM:<> SIZE=%d", inbound.MaxMessageBytes+1)
	})
	t.Run("data over the limit is refused and nothing is written", func(t *testing.T) {
		c := e.dial(t)
		c.expect(250, "EHLO mx.sender.test")
		c.expect(250, "MAIL FROM:<>")
		c.expect(250, "RCPT TO:<%s>", bn)
		c.expect(354, "DATA")
		w := c.DotWriter()
		msg := dsn(bn, reader, "5.1.1")
		pad := strings.Repeat(strings.Repeat("x", 98)+"\r\n", inbound.MaxMessageBytes/100+1)
		if _, err := w.Write([]byte(strings.Replace(msg, "--r1--", pad+"--r1--", 1))); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if code, msg := c.response(); code != 552 {
			t.Fatalf("reply %d %s, want 552", code, msg)
		}
		if bs := e.bounces(t); len(bs) != 0 {
			t.Fatalf("records %v", bs)
		}
	})
	t.Run("data just under the limit is accepted and kept whole", func(t *testing.T) {
		msg := dsn(bn, reader, "5.1.1")
		pad := strings.Repeat(strings.Repeat("y", 98)+"\r\n", (inbound.MaxMessageBytes-len(msg))/100-1)
		msg = strings.Replace(msg, "--r1--", pad+"--r1--", 1)
		if err := e.send(t, "", []string{bn}, msg); err != nil {
			t.Fatalf("refused: %v", err)
		}
		bs := e.bounces(t)
		if len(bs) != 1 || bs[0]["bounceMessages"].([]any)[0].(map[string]any)["message"] != msg {
			t.Fatalf("the message was not kept whole")
		}
	})
}

func TestRecipientLimit(t *testing.T) {
	e := start(t)
	c := e.dial(t)
	c.expect(250, "EHLO mx.sender.test")
	c.expect(250, "MAIL FROM:<>")
	for i := range inbound.MaxRecipients {
		c.expect(250, "RCPT TO:<bn-0123456789abcdef0123456%x-1@invalid.local>", i)
	}
	c.expect(452, "RCPT TO:<bn-0123456789abcdef01234567-2@invalid.local>")
}

func TestCommandLimitEndsTheConnection(t *testing.T) {
	e := start(t)
	c := e.dial(t)
	c.expect(250, "EHLO mx.sender.test")
	c.expect(250, "MAIL FROM:<x@example.com>")
	for range inbound.MaxCommands - 1 {
		c.expect(550, "RCPT TO:<x@example.com>")
	}
	c.expect(421, "RCPT TO:<x@example.com>")
	if !c.closed() {
		t.Fatal("the connection stays open")
	}
}

func TestOverlongLineEndsTheConnection(t *testing.T) {
	e := start(t)
	c := e.dial(t)
	c.expect(250, "EHLO mx.sender.test")
	c.expect(500, "MAIL FROM:<%s@example.com>", strings.Repeat("a", inbound.MaxLineLength+10))
	if !c.closed() {
		t.Fatal("the connection stays open")
	}
}

func TestConnectionLimits(t *testing.T) {
	// maxClients 2: two connections at once, whoever holds them.
	e := start(t, map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"options": map[string]any{"maxClients": 2.0}}}})
	first := e.dial(t)
	if code, _ := e.greeting(t, "127.0.0.2"); code != 220 {
		t.Fatalf("second connection greeted %d", code)
	}
	if code, _ := e.greeting(t, "127.0.0.3"); code != 421 {
		t.Fatalf("a connection over the limit was greeted %d", code)
	}
	first.expect(221, "QUIT")
	waitFor(t, "a connection to be accepted again", func() bool {
		code, _ := e.greeting(t, "127.0.0.3")
		return code == 220
	})
}

func TestSilentClientsAreDisconnected(t *testing.T) {
	e := start(t, map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"options": map[string]any{"socketTimeout": 1000.0}}}})
	c := e.dial(t)
	c.expect(250, "EHLO mx.sender.test")
	if code, msg := c.response(); code != 421 {
		t.Fatalf("after silence: %d %s, want 421", code, msg)
	}
	if !c.closed() {
		t.Fatal("the connection stays open")
	}
}

func TestStopEndsIdleConnectionsAndLetsTransactionsFinish(t *testing.T) {
	e := start(t)
	const reader = "reader@example.com"
	e.subscribe(t, "roads", reader)
	bn := e.notify(t, "roads", reader).Envelope.From

	idle := e.dial(t)
	idle.expect(250, "EHLO mx.idle.test")
	busy := e.dial(t)
	busy.expect(250, "EHLO mx.busy.test")
	busy.expect(250, "MAIL FROM:<>")
	busy.expect(250, "RCPT TO:<%s>", bn)

	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		stopped <- e.stop(ctx)
	}()
	if !idle.closed() {
		t.Fatal("an idle connection stays open while the server stops")
	}
	busy.expect(354, "DATA")
	w := busy.DotWriter()
	_, _ = w.Write([]byte(dsn(bn, reader, "5.1.1")))
	_ = w.Close()
	if code, msg := busy.response(); code != 250 {
		t.Fatalf("the open transaction was answered %d %s", code, msg)
	}
	if !busy.closed() {
		t.Fatal("the connection stays open after its transaction")
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
	if bs := e.bounces(t); len(bs) != 1 || bs[0]["hardBounceCount"] != 1.0 {
		t.Fatalf("records %v", bs)
	}
}

func TestManyMessagesOnOneConnection(t *testing.T) {
	e := start(t, map[string]any{"email": map[string]any{"bounce": map[string]any{"unsubThreshold": 1000.0}}})
	const reader = "reader@example.com"
	e.subscribe(t, "roads", reader)
	bn := e.notify(t, "roads", reader).Envelope.From
	c := e.dial(t)
	c.expect(250, "EHLO mx.sender.test")
	const messages = inbound.MaxCommands // twice the commands the limit allows without a message
	for range messages {
		c.expect(250, "MAIL FROM:<>")
		c.expect(250, "RCPT TO:<%s>", bn)
		c.expect(354, "DATA")
		w := c.DotWriter()
		_, _ = w.Write([]byte(dsn(bn, reader, "5.1.1")))
		_ = w.Close()
		if code, msg := c.response(); code != 250 {
			t.Fatalf("reply %d %s", code, msg)
		}
	}
	if bs := e.bounces(t); len(bs) != 1 || bs[0]["hardBounceCount"] != float64(messages) {
		t.Fatalf("records %v", bs)
	}
}

func TestStopRightAfterStart(t *testing.T) {
	e := start(t)
	for range 20 {
		srv, _, err := inbound.New(inbound.Options{Config: e.Config, Store: e.Store, Subscriptions: e.App.Subscriptions})
		if err != nil {
			t.Fatal(err)
		}
		_, stop, err := srv.Start(context.Background(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = stop(ctx)
		cancel()
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	}
}

// greeting dials the inbound server from a loopback address of its own and
// returns the greeting's code.
func (e *env) greeting(t *testing.T, from string) (int, net.Conn) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	nc, err := d.Dial("tcp", e.smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	code, _, err := textproto.NewConn(nc).ReadResponse(0)
	if err != nil {
		t.Fatalf("greeting: %v", err)
	}
	return code, nc
}

func TestConnectionsPerClientAddress(t *testing.T) {
	t.Run("by default one address holds five connections", func(t *testing.T) {
		e := start(t)
		for i := range inbound.DefaultMaxClientsPerAddress {
			if code, _ := e.greeting(t, "127.0.0.2"); code != 220 {
				t.Fatalf("connection %d greeted %d", i+1, code)
			}
		}
		if code, _ := e.greeting(t, "127.0.0.2"); code != 421 {
			t.Fatalf("connection %d from one address greeted %d, want 421", inbound.DefaultMaxClientsPerAddress+1, code)
		}
		if code, _ := e.greeting(t, "127.0.0.3"); code != 220 {
			t.Fatalf("another address greeted %d", code)
		}
	})
	t.Run("the per-address limit is configurable", func(t *testing.T) {
		e := start(t, map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"options": map[string]any{"maxClientsPerAddress": 2.0}}}})
		_, first := e.greeting(t, "127.0.0.2")
		e.greeting(t, "127.0.0.2")
		if code, _ := e.greeting(t, "127.0.0.2"); code != 421 {
			t.Fatalf("third connection greeted %d, want 421", code)
		}
		first.Close()
		waitFor(t, "a connection from the address to be accepted again", func() bool {
			code, _ := e.greeting(t, "127.0.0.2")
			return code == 220
		})
	})
}

// goSMTP connects with go-smtp's client from address from.
func (e *env) goSMTP(t *testing.T, from string) *smtp.Client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	nc, err := d.Dial("tcp", e.smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := smtp.NewClient(nc)
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("mx.sender.test"); err != nil {
		t.Fatal(err)
	}
	return c
}

// until runs step every 20 ms until it fails, and returns its error; a
// generous bound only keeps a broken test from hanging.
func until(t *testing.T, step func() error) error {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := step(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the server kept the connection")
	return nil
}

func TestNOOPDoesNotKeepAConnection(t *testing.T) {
	e := start(t, map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"options": map[string]any{"idleTimeout": 1000.0}}}})
	c := e.goSMTP(t, "127.0.0.2")
	err := until(t, func() error {
		if err := c.Noop(); err != nil {
			return err
		}
		return c.Reset() // RSET, VRFY, HELP: no transaction either
	})
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 421 {
		if !errors.Is(err, io.EOF) {
			t.Fatalf("ended with %v, want 421 or the connection closed", err)
		}
	}
	t.Run("a sender that delivers is served", func(t *testing.T) {
		const reader = "reader@example.com"
		e.subscribe(t, "roads", reader)
		bn := e.notify(t, "roads", reader).Envelope.From
		c := e.goSMTP(t, "127.0.0.2")
		if err := c.SendMail("", []string{bn}, strings.NewReader(dsn(bn, reader, "5.1.1"))); err != nil {
			t.Fatalf("refused: %v", err)
		}
	})
}

func TestASessionEndsAfterMaxSessionTime(t *testing.T) {
	e := start(t, map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"options": map[string]any{"maxSessionTime": 1000.0}}}})
	c := e.goSMTP(t, "127.0.0.2")
	// Every step is a transaction's (MAIL), so the connection is never
	// idle; only its age ends it (20 ms apart, far fewer than MaxCommands
	// fit in a second).
	err := until(t, func() error {
		if err := c.Mail("", nil); err != nil {
			return err
		}
		return c.Reset()
	})
	var se *smtp.SMTPError
	if errors.As(err, &se) && se.Code != 421 {
		t.Fatalf("ended with %v, want 421 or the connection closed", err)
	}
}
