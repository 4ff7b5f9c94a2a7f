package inbound_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/httpapi/apitest"
	"github.com/govkit/govkit/notify/subscription"
)

// mta is a sending server at a loopback address of its own (Linux routes
// all of 127/8 to the loopback interface), speaking SMTP through go-smtp's
// client, so that each test client has a budget of its own.
type mta struct {
	t    *testing.T
	from string // its address, e.g. 127.0.0.2
	c    *smtp.Client
}

// connect opens a connection from address from to the inbound server at
// addr, greets it and starts a transaction with a null sender, as bounces
// come.
func connect(t *testing.T, from, addr string) *mta {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// A bound on every read only keeps a broken test from hanging.
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := smtp.NewClient(nc)
	t.Cleanup(func() { c.Close() })
	if err := c.Hello("mx." + from + ".test"); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("", nil); err != nil {
		t.Fatal(err)
	}
	return &mta{t: t, from: from, c: c}
}

// sender starts a new transaction from address from.
func (m *mta) sender(from string) {
	m.t.Helper()
	if err := m.c.Reset(); err != nil {
		m.t.Fatal(err)
	}
	if err := m.c.Mail(from, nil); err != nil {
		m.t.Fatal(err)
	}
}

// rcpt sends RCPT TO and returns the reply code (250 when accepted).
func (m *mta) rcpt(to string) int {
	m.t.Helper()
	err := m.c.Rcpt(to, nil)
	if err == nil {
		return 250
	}
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		m.t.Fatalf("RCPT %s: %v", to, err)
	}
	return se.Code
}

// data sends msg and returns the reply code.
func (m *mta) data(msg string) int {
	m.t.Helper()
	w, err := m.c.Data()
	if err != nil {
		m.t.Fatal(err)
	}
	if _, err := w.Write([]byte(msg)); err != nil {
		m.t.Fatal(err)
	}
	err = w.Close()
	var se *smtp.SMTPError
	switch {
	case err == nil:
		return 250
	case errors.As(err, &se):
		return se.Code
	}
	m.t.Fatal(err)
	return 0
}

// from makes API requests from a loopback address of its own (an
// anonymous caller, since only 127.0.0.1 is an admin address).
func httpFrom(addr string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (e *env) unsubscribeOverHTTP(t *testing.T, from, id, code string) int {
	t.Helper()
	res, err := httpFrom(from).Get(e.URL + "/api/subscriptions/" + id + "/unsubscribe?unsubscriptionCode=" + code)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// wrongCode is a code that is not code.
func wrongCode(code string, i int) string {
	w := strings.Repeat("9", len(code)-1) + string(rune('0'+i%10))
	if w == code {
		w = "x" + w
	}
	return w
}

func TestBounceCodeGuessesSpendTheClientsBudget(t *testing.T) {
	e := start(t)
	const reader = "reader@example.com"
	id := e.subscribe(t, "roads", reader)
	code := e.subscription(t, id)["unsubscriptionCode"].(string)
	bn := func(c string) string { return "bn-" + id + "-" + c + "@invalid.local" }
	limits := subscription.DefaultAttemptLimits

	attacker := connect(t, "127.0.0.2", e.smtpAddr)
	for i := range limits.PerClient {
		// accepted and dropped, as the original does, but counted
		if got := attacker.rcpt(bn(wrongCode(code, i))); got != 250 {
			t.Fatalf("wrong code %d answered %d", i+1, got)
		}
	}
	t.Run("once the client's budget is spent, even the right code is refused with 450", func(t *testing.T) {
		if got := attacker.rcpt(bn(code)); got != 450 {
			t.Fatalf("right code after %d wrong ones answered %d, want 450", limits.PerClient, got)
		}
		fresh := connect(t, "127.0.0.2", e.smtpAddr)
		fresh.sender(reader)
		if got := fresh.rcpt("un-" + id + "-" + code + "@invalid.local"); got != 450 {
			t.Fatalf("list-unsubscribe address answered %d on a new connection, want 450", got)
		}
	})
	t.Run("the API's budget is the same one", func(t *testing.T) {
		if got := e.unsubscribeOverHTTP(t, "127.0.0.2", id, code); got != http.StatusTooManyRequests {
			t.Fatalf("unsubscribe over HTTP from the same client: %d, want 429", got)
		}
	})
	t.Run("another sending server's bounce with the right code still counts", func(t *testing.T) {
		mx := connect(t, "127.0.0.3", e.smtpAddr)
		if got := mx.rcpt(bn(code)); got != 250 {
			t.Fatalf("RCPT answered %d", got)
		}
		if got := mx.data(dsn(bn(code), reader, "5.1.1")); got != 250 {
			t.Fatalf("DATA answered %d", got)
		}
		if bs := e.bounces(t); len(bs) != 1 || bs[0]["hardBounceCount"] != 1.0 {
			t.Fatalf("records %v", bs)
		}
	})
	if s := e.subscription(t, id)["state"]; s != "confirmed" {
		t.Fatalf("the subscription is %v", s)
	}
}

func TestListUnsubscribeCodeGuessesAreRefusedOnceTheBudgetIsSpent(t *testing.T) {
	e := start(t)
	const reader = "reader@example.com"
	id := e.subscribe(t, "roads", reader)
	code := e.subscription(t, id)["unsubscriptionCode"].(string)
	un := func(c string) string { return "un-" + id + "-" + c + "@invalid.local" }
	guesser := connect(t, "127.0.0.2", e.smtpAddr)
	guesser.sender(reader)
	for i := range subscription.DefaultAttemptLimits.PerClient {
		if got := guesser.rcpt(un(wrongCode(code, i))); got != 550 {
			t.Fatalf("wrong code %d answered %d, want 550", i+1, got)
		}
	}
	if got := guesser.rcpt(un(code)); got != 450 {
		t.Fatalf("right code after the budget is spent answered %d, want 450", got)
	}
	t.Run("the subscriber's own client still unsubscribes by mail", func(t *testing.T) {
		if err := e.send(t, reader, []string{un(code)}, "Subject: unsubscribe\r\n\r\n"); err != nil {
			t.Fatalf("refused: %v", err)
		}
		if s := e.subscription(t, id)["state"]; s != "deleted" {
			t.Fatalf("the subscription is %v", s)
		}
	})
}

func TestCodeGuessesFromManyClientsSpendTheSubscriptionsBudgetOnEveryNode(t *testing.T) {
	r := testsvc.RequireRedis(t)
	shared := ratelimit.NewRedis(r.Client, r.Prefix)
	e := startWith(t, apitest.Options{Attempts: shared})
	// A second node: its own subscription service and inbound server on
	// the same store, with the counters in the same Redis.
	other := subscription.New(subscription.Options{Config: e.Config, Store: e.Store, Channel: e.App.Channel, Attempts: shared})
	t.Cleanup(func() { _ = other.Close() })
	otherAddr, _ := e.startInbound(t, other)

	const reader = "reader@example.com"
	id := e.subscribe(t, "roads", reader)
	code := e.subscription(t, id)["unsubscriptionCode"].(string)
	bystander := e.subscribe(t, "parks", "someone@example.com")
	bystanderCode := e.subscription(t, bystander)["unsubscriptionCode"].(string)
	bn := func(id, c string) string { return "bn-" + id + "-" + c + "@invalid.local" }

	limits := subscription.DefaultAttemptLimits
	// Each client stays under its own budget; together they spend the
	// subscription's, half on each node.
	half := limits.PerSubscription / 2
	a := connect(t, "127.0.0.2", e.smtpAddr)
	b := connect(t, "127.0.0.3", otherAddr)
	for i := range half {
		if got := a.rcpt(bn(id, wrongCode(code, i))); got != 250 {
			t.Fatalf("node 1: wrong code answered %d", got)
		}
		if got := b.rcpt(bn(id, wrongCode(code, i+half))); got != 250 {
			t.Fatalf("node 2: wrong code answered %d", got)
		}
	}
	for _, n := range []struct{ name, addr string }{{"node 1", e.smtpAddr}, {"node 2", otherAddr}} {
		c := connect(t, "127.0.0.4", n.addr)
		if got := c.rcpt(bn(id, code)); got != 450 {
			t.Fatalf("%s: a third client's right code answered %d, want 450", n.name, got)
		}
		t.Run("other subscriptions are not affected ("+n.name+")", func(t *testing.T) {
			if got := c.rcpt(bn(bystander, bystanderCode)); got != 250 {
				t.Fatalf("RCPT answered %d", got)
			}
		})
	}
	if got := e.unsubscribeOverHTTP(t, "127.0.0.4", id, code); got != http.StatusTooManyRequests {
		t.Fatalf("unsubscribe over HTTP: %d, want 429", got)
	}
}

func TestBounceThresholdUnsubscribesDespiteTheSendersSpentBudget(t *testing.T) {
	e := start(t) // unsubThreshold 2: the third hard bounce unsubscribes
	const reader = "reader@example.com"
	roads := e.subscribe(t, "roads", reader)
	ferries := e.subscribe(t, "ferries", reader)
	bn := e.notify(t, "roads", reader).Envelope.From
	other := e.subscribe(t, "parks", "someone@example.com")
	wrong := "bn-" + other + "-" + wrongCode(e.subscription(t, other)["unsubscriptionCode"].(string), 0) + "@invalid.local"

	// A large sending server: bounces for our subscribers, and some bounce
	// addresses it mangled, each a wrong code against its budget.
	mx := connect(t, "127.0.0.2", e.smtpAddr)
	for range 2 {
		if got := mx.rcpt(bn); got != 250 {
			t.Fatalf("RCPT answered %d", got)
		}
		if got := mx.data(dsn(bn, reader, "5.1.1")); got != 250 {
			t.Fatalf("DATA answered %d", got)
		}
		if err := mx.c.Mail("", nil); err != nil {
			t.Fatal(err)
		}
	}
	for range subscription.DefaultAttemptLimits.PerClient - 1 {
		if got := mx.rcpt(wrong); got != 250 {
			t.Fatalf("RCPT answered %d", got)
		}
	}
	// The last bounce is accepted at RCPT with one wrong code left; the
	// next recipient spends the budget before DATA.
	if got := mx.rcpt(bn); got != 250 {
		t.Fatalf("RCPT answered %d", got)
	}
	if got := mx.rcpt(wrong); got != 250 {
		t.Fatalf("RCPT answered %d", got)
	}
	if got := mx.data(dsn(bn, reader, "5.1.1")); got != 250 {
		t.Fatalf("DATA of the bounce over the threshold answered %d, want 250", got)
	}
	for _, id := range []string{roads, ferries} {
		if s := e.subscription(t, id)["state"]; s != "deleted" {
			t.Fatalf("subscription %s is %v after passing the threshold", id, s)
		}
	}
}
