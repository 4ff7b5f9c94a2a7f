package inbound_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var undoURLRe = regexp.MustCompile(`https?://\S+/unsubscribe/undo\?unsubscriptionCode=[^\s"<]+`)

func TestListUnsubscribeByMail(t *testing.T) {
	e := start(t)
	const reader = "reader@example.com"
	roads := e.subscribe(t, "roads", reader)
	ferries := e.subscribe(t, "ferries", reader)
	m := e.notify(t, "roads", reader)
	match := mailtoRe.FindStringSubmatch(header(m, "List-Unsubscribe"))
	if match == nil {
		t.Fatalf("no mailto in List-Unsubscribe %q", header(m, "List-Unsubscribe"))
	}
	unAddr := match[1]
	if !strings.HasPrefix(unAddr, "un-"+roads+"-") || !strings.HasSuffix(unAddr, "@invalid.local") {
		t.Fatalf("List-Unsubscribe address %q", unAddr)
	}
	wrongCode := strings.Replace(unAddr, "un-"+roads+"-", "un-"+roads+"-9", 1)

	t.Run("mail from another address is refused and changes nothing", func(t *testing.T) {
		if c := code(t, e.send(t, "someone.else@example.com", []string{unAddr}, "Subject: unsubscribe\r\n\r\n")); c != 550 {
			t.Fatalf("reply %d, want 550", c)
		}
		if s := e.subscription(t, roads)["state"]; s != "confirmed" {
			t.Fatalf("state %v", s)
		}
	})
	t.Run("a wrong code is refused", func(t *testing.T) {
		if c := code(t, e.send(t, reader, []string{wrongCode}, "unsubscribe\r\n")); c != 550 {
			t.Fatalf("reply %d, want 550", c)
		}
		if s := e.subscription(t, roads)["state"]; s != "confirmed" {
			t.Fatalf("state %v", s)
		}
	})
	t.Run("a null sender is refused at RCPT", func(t *testing.T) {
		err := e.send(t, "", []string{unAddr}, "unsubscribe\r\n")
		if got := reply(t, err); !strings.HasPrefix(got, "550 5.7.1") {
			t.Fatalf("reply %v, want 550 5.7.1", err)
		}
	})
	t.Run("an unknown subscription is refused", func(t *testing.T) {
		unknown := "un-0123456789abcdef01234567-12345@invalid.local"
		if c := code(t, e.send(t, reader, []string{unknown}, "unsubscribe\r\n")); c != 550 {
			t.Fatalf("reply %d, want 550", c)
		}
	})

	before := len(e.Mail.Mails())
	t.Run("mail from the subscriber's address unsubscribes, ignoring case", func(t *testing.T) {
		if err := e.send(t, "Reader@Example.COM", []string{unAddr}, "Subject: unsubscribe\r\n\r\nunsubscribe\r\n"); err != nil {
			t.Fatalf("refused: %v", err)
		}
		if s := e.subscription(t, roads)["state"]; s != "deleted" {
			t.Fatalf("state %v", s)
		}
		if s := e.subscription(t, ferries)["state"]; s != "confirmed" {
			t.Fatalf("the other service's subscription is %v", s)
		}
	})
	var undo string
	t.Run("the acknowledgement is sent, with a working undo link", func(t *testing.T) {
		ack := e.WaitMail(t, before+1)[before]
		if ack.Subject != "Un-subscription acknowledgement" || ack.Envelope.To[0] != reader {
			t.Fatalf("acknowledgement %q to %v", ack.Subject, ack.Envelope.To)
		}
		undo = undoURLRe.FindString(ack.Text)
		if !strings.HasPrefix(undo, e.URL+"/api/subscriptions/"+roads+"/unsubscribe/undo?") {
			t.Fatalf("undo link %q in %q", undo, ack.Text)
		}
	})
	t.Run("a second unsubscription of a deleted subscription is refused, as by the API", func(t *testing.T) {
		if c := code(t, e.send(t, reader, []string{unAddr}, "unsubscribe\r\n")); c != 550 {
			t.Fatalf("reply %d, want 550", c)
		}
	})
	t.Run("undo restores the subscription", func(t *testing.T) {
		e.Do(t, "GET", strings.TrimPrefix(undo, e.URL), nil, "is_anonymous", "true").Expect(t, http.StatusOK)
		if s := e.subscription(t, roads)["state"]; s != "confirmed" {
			t.Fatalf("state %v", s)
		}
	})
	t.Run("the code never reaches the log", func(t *testing.T) {
		code := strings.TrimSuffix(strings.TrimPrefix(unAddr, "un-"+roads+"-"), "@invalid.local")
		if log := e.inboundLog.String(); strings.Contains(log, "-"+code+"@") || strings.Contains(log, reader) || !strings.Contains(log, roads) {
			t.Fatalf("log shows the code or the address, or not the subscription:\n%s", log)
		}
	})
}

func TestListUnsubscribeByMailDisabled(t *testing.T) {
	e := start(t, map[string]any{"email": map[string]any{"listUnsubscribeByEmail": map[string]any{"enabled": false}}})
	id := e.subscribe(t, "roads", "reader@example.com")
	sub := e.subscription(t, id)
	err := e.send(t, "reader@example.com", []string{fmt.Sprintf("un-%s-%s@invalid.local", id, sub["unsubscriptionCode"])}, "unsubscribe\r\n")
	if c := code(t, err); c != 550 {
		t.Fatalf("reply %v, want 550", err)
	}
	if s := e.subscription(t, id)["state"]; s != "confirmed" {
		t.Fatalf("state %v", s)
	}
}

func TestRecipientsAreRefusedAtRCPT(t *testing.T) {
	e := start(t)
	tests := []struct {
		name, rcpt string
		reply      string
	}{
		{"another domain: no relaying", "someone@example.com", "550 5.7.1"},
		{"an un- address at another domain", "un-0123456789abcdef01234567-12345@example.com", "550 5.7.1"},
		{"an ordinary mailbox at the inbound domain", "postmaster@invalid.local", "550 5.1.1"},
		{"a local part of another form", "undo-1-12345@invalid.local", "550 5.1.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := e.send(t, "sender@example.com", []string{tc.rcpt}, "x\r\n")
			if got := reply(t, err); !strings.HasPrefix(got, tc.reply) {
				t.Fatalf("reply %v, want %s", err, tc.reply)
			}
		})
	}
}

func TestBouncesCountAndUnsubscribeOverTheThreshold(t *testing.T) {
	e := start(t) // unsubThreshold 2
	const reader = "reader@example.com"
	ids := []string{e.subscribe(t, "roads", reader), e.subscribe(t, "ferries", reader), e.subscribe(t, "parks", reader)}
	other := e.subscribe(t, "roads", "other@example.com")

	// The bounce address is the one the service really sends from.
	m := e.notify(t, "roads", reader)
	bn := m.Envelope.From
	if !strings.HasPrefix(bn, "bn-"+ids[0]+"-") || !strings.HasSuffix(bn, "@invalid.local") {
		t.Fatalf("envelope sender %q is not the VERP bounce address", bn)
	}

	first := dsn(bn, reader, "5.1.1")
	t.Run("a hard bounce creates the bounce record", func(t *testing.T) {
		if err := e.send(t, "", []string{bn}, first); err != nil {
			t.Fatalf("refused: %v", err)
		}
		bs := e.bounces(t)
		if len(bs) != 1 {
			t.Fatalf("%d bounce records", len(bs))
		}
		b := bs[0]
		if b["channel"] != "email" || b["userChannelId"] != reader || b["hardBounceCount"] != 1.0 || b["state"] != "active" {
			t.Fatalf("record %v", b)
		}
		if v, ok := b["latestNotificationStarted"]; !ok || v != nil {
			t.Errorf("latestNotificationStarted %v (present %v), want null", v, ok)
		}
		msgs := b["bounceMessages"].([]any)
		msg := msgs[0].(map[string]any)
		if len(msgs) != 1 || msg["message"] != first {
			t.Fatalf("bounceMessages %v", msgs)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", msg["date"].(string)); err != nil {
			t.Errorf("date %v: %v", msg["date"], err)
		}
	})
	transient := dsn(bn, reader, "4.2.2")
	t.Run("a transient failure is recorded first and not counted", func(t *testing.T) {
		if err := e.send(t, "", []string{bn}, transient); err != nil {
			t.Fatalf("refused: %v", err)
		}
		b := e.bounces(t)[0]
		msgs := b["bounceMessages"].([]any)
		if b["hardBounceCount"] != 1.0 || len(msgs) != 2 || msgs[0].(map[string]any)["message"] != transient || msgs[1].(map[string]any)["message"] != first {
			t.Fatalf("record %v", b)
		}
	})
	t.Run("a bounce naming another recipient is recorded and not counted", func(t *testing.T) {
		if err := e.send(t, "", []string{bn}, dsn(bn, "someone@example.org", "5.1.1")); err != nil {
			t.Fatalf("refused: %v", err)
		}
		if b := e.bounces(t)[0]; b["hardBounceCount"] != 1.0 || len(b["bounceMessages"].([]any)) != 3 {
			t.Fatalf("record %v", b)
		}
	})
	t.Run("reaching the threshold unsubscribes nobody", func(t *testing.T) {
		if err := e.send(t, "", []string{bn}, dsn(bn, reader, "5.1.1")); err != nil {
			t.Fatalf("refused: %v", err)
		}
		if b := e.bounces(t)[0]; b["hardBounceCount"] != 2.0 || b["state"] != "active" {
			t.Fatalf("record %v", b)
		}
		for _, id := range ids {
			if s := e.subscription(t, id)["state"]; s != "confirmed" {
				t.Fatalf("subscription %s is %v", id, s)
			}
		}
	})
	before := len(e.Mail.Mails())
	t.Run("passing it unsubscribes the address from all its services and closes the record", func(t *testing.T) {
		if err := e.send(t, "", []string{bn}, dsn(bn, reader, "5.4.4")); err != nil {
			t.Fatalf("refused: %v", err)
		}
		b := e.bounces(t)[0]
		if b["hardBounceCount"] != 3.0 || b["state"] != "deleted" {
			t.Fatalf("record %v", b)
		}
		for _, id := range ids {
			if s := e.subscription(t, id)["state"]; s != "deleted" {
				t.Fatalf("subscription %s is %v", id, s)
			}
		}
		if s := e.subscription(t, other)["state"]; s != "confirmed" {
			t.Fatalf("another address's subscription is %v", s)
		}
	})
	t.Run("the acknowledgement names every service and undo restores them all", func(t *testing.T) {
		ack := e.WaitMail(t, before+1)[before]
		for _, name := range []string{"roads", "ferries", "parks"} {
			if !strings.Contains(ack.Text, name) {
				t.Errorf("acknowledgement does not name %s: %q", name, ack.Text)
			}
		}
		undo := undoURLRe.FindString(ack.Text)
		if undo == "" {
			t.Fatalf("no undo link in %q", ack.Text)
		}
		e.Do(t, "GET", strings.TrimPrefix(undo, e.URL), nil, "is_anonymous", "true").Expect(t, http.StatusOK)
		for _, id := range ids {
			if s := e.subscription(t, id)["state"]; s != "confirmed" {
				t.Fatalf("subscription %s is %v after undo", id, s)
			}
		}
	})
	t.Run("the next bounce starts a new record", func(t *testing.T) {
		if err := e.send(t, "", []string{bn}, dsn(bn, reader, "5.1.1")); err != nil {
			t.Fatalf("refused: %v", err)
		}
		bs := e.bounces(t)
		if len(bs) != 2 || bs[1]["state"] != "active" || bs[1]["hardBounceCount"] != 1.0 {
			t.Fatalf("records %v", bs)
		}
	})
}

func TestBounceRules(t *testing.T) {
	e := start(t, map[string]any{"email": map[string]any{"bounce": map[string]any{
		"unsubThreshold": 100.0, "subjectRegex": "^Undelivered",
	}}})
	const reader = "reader@example.com"
	id := e.subscribe(t, "roads", reader)
	bn := e.notify(t, "roads", reader).Envelope.From
	tests := []struct {
		name  string
		msg   string
		count float64 // hardBounceCount after it
	}{
		{"a subject that does not match subjectRegex is not counted",
			strings.Replace(dsn(bn, reader, "5.1.1"), "Subject: Undelivered", "Subject: Automatic reply", 1), 0},
		{"X-Failed-Recipients overrides the recipient of the body",
			strings.Replace(dsn(bn, "alias@example.net", "5.1.1"), "MIME-Version", "X-Failed-Recipients: "+reader+"\r\nMIME-Version", 1), 1},
		{"X-Failed-Recipients naming another address is not counted",
			strings.Replace(dsn(bn, reader, "5.1.1"), "MIME-Version", "X-Failed-Recipients: alias@example.net\r\nMIME-Version", 1), 1},
		{"the body is the text when there is no delivery status",
			"From: postmaster@example.net\r\nSubject: Undelivered mail\r\nContent-Type: text/plain\r\n\r\n<" + reader + ">: host said: 550 5.1.1 unknown user\r\n", 2},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.send(t, "", []string{bn}, tc.msg); err != nil {
				t.Fatalf("refused: %v", err)
			}
			b := e.bounces(t)[0]
			if b["hardBounceCount"] != tc.count || len(b["bounceMessages"].([]any)) != i+1 {
				t.Fatalf("record %v", b)
			}
		})
	}
	if s := e.subscription(t, id)["state"]; s != "confirmed" {
		t.Fatalf("state %v", s)
	}
}

func TestBounceOfASubscriptionWithoutCodeCounts(t *testing.T) {
	e := start(t, map[string]any{"subscription": map[string]any{"anonymousUnsubscription": map[string]any{"code": map[string]any{"required": false}}}})
	const reader = "reader@example.com"
	id := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "roads", "channel": "email", "userChannelId": reader, "state": "confirmed"}).Expect(t, 200).Map(t)["id"].(string)
	bn := e.notify(t, "roads", reader).Envelope.From
	if bn != "bn-"+id+"-@invalid.local" {
		t.Fatalf("envelope sender %q", bn)
	}
	if err := e.send(t, "", []string{bn}, dsn(bn, reader, "5.1.1")); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if bs := e.bounces(t); len(bs) != 1 || bs[0]["hardBounceCount"] != 1.0 {
		t.Fatalf("records %v", bs)
	}
}

func TestBouncesForNoConfirmedSubscriptionAreDropped(t *testing.T) {
	e := start(t)
	const reader = "reader@example.com"
	id := e.subscribe(t, "roads", reader)
	code := e.subscription(t, id)["unsubscriptionCode"].(string)
	unconfirmed := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "parks", "channel": "email", "userChannelId": reader}, "is_anonymous", "true").Expect(t, 200).Map(t)["id"].(string)
	sms := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "roads", "channel": "sms", "userChannelId": "2505550100", "state": "confirmed", "unsubscriptionCode": "11111"}).Expect(t, 200).Map(t)["id"].(string)
	tests := []struct{ name, addr string }{
		{"a wrong code", "bn-" + id + "-" + code + "0@invalid.local"},
		{"an unknown id", "bn-0123456789abcdef01234567-" + code + "@invalid.local"},
		{"an unconfirmed subscription", "bn-" + unconfirmed + "-" + e.subscription(t, unconfirmed)["unsubscriptionCode"].(string) + "@invalid.local"},
		{"an SMS subscription", "bn-" + sms + "-11111@invalid.local"},
	}
	for _, tc := range tests {
		t.Run(tc.name+" is accepted and not recorded", func(t *testing.T) {
			if err := e.send(t, "", []string{tc.addr}, dsn(tc.addr, reader, "5.1.1")); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if bs := e.bounces(t); len(bs) != 0 {
				t.Fatalf("records %v", bs)
			}
		})
	}
}

func TestBounceHandlingOff(t *testing.T) {
	e := start(t, map[string]any{"email": map[string]any{"bounce": map[string]any{"enabled": false}}})
	id := e.subscribe(t, "roads", "reader@example.com")
	bn := "bn-" + id + "-" + e.subscription(t, id)["unsubscriptionCode"].(string) + "@invalid.local"
	if err := e.send(t, "", []string{bn}, dsn(bn, "reader@example.com", "5.1.1")); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if bs := e.bounces(t); len(bs) != 0 {
		t.Fatalf("records %v", bs)
	}
}

func TestMalformedBounceIsAnswered451AndNothingWritten(t *testing.T) {
	e := start(t)
	const reader = "reader@example.com"
	e.subscribe(t, "roads", reader)
	bn := e.notify(t, "roads", reader).Envelope.From
	tests := []struct{ name, msg string }{
		{"a header that does not parse", "this line is no header\r\n\r\n550 5.1.1 " + reader + "\r\n"},
		{"a report without its closing boundary", strings.TrimSuffix(dsn(bn, reader, "5.1.1"), "--r1--\r\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := e.send(t, "", []string{bn}, tc.msg)
			if c := code(t, err); c != 451 {
				t.Fatalf("reply %v, want 451", err)
			}
			if bs := e.bounces(t); len(bs) != 0 {
				t.Fatalf("records %v", bs)
			}
		})
	}
}

func TestConcurrentBouncesLoseNoCount(t *testing.T) {
	// All from 127.0.0.1, so the per-address limit is raised.
	e := start(t, map[string]any{"email": map[string]any{"bounce": map[string]any{"unsubThreshold": 100.0},
		"inboundSmtpServer": map[string]any{"options": map[string]any{"maxClientsPerAddress": 8.0}}}})
	const reader = "reader@example.com"
	e.subscribe(t, "roads", reader)
	bn := e.notify(t, "roads", reader).Envelope.From
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if err := e.send(t, "", []string{bn}, dsn(bn, reader, fmt.Sprintf("5.1.%d", i))); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("refused: %v", err)
	}
	bs := e.bounces(t)
	if len(bs) != 1 || bs[0]["hardBounceCount"] != float64(n) || len(bs[0]["bounceMessages"].([]any)) != n {
		t.Fatalf("after %d bounces at once: %v", n, bs)
	}
}

func TestABounceToTheSameAddressTwiceCountsOnce(t *testing.T) {
	e := start(t)
	const reader = "reader@example.com"
	e.subscribe(t, "roads", reader)
	bn := e.notify(t, "roads", reader).Envelope.From
	if err := e.send(t, "", []string{bn, strings.ToUpper(bn[:2]) + bn[2:]}, dsn(bn, reader, "5.1.1")); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if bs := e.bounces(t); len(bs) != 1 || bs[0]["hardBounceCount"] != 1.0 || len(bs[0]["bounceMessages"].([]any)) != 1 {
		t.Fatalf("records %v", bs)
	}
}

func TestBounceWithHostileBytesIsStoredAsValidText(t *testing.T) {
	e := start(t)
	const reader = "reader@example.com"
	e.subscribe(t, "roads", reader)
	bn := e.notify(t, "roads", reader).Envelope.From
	msg := strings.Replace(dsn(bn, reader, "5.1.1"), "could not be delivered", "could not\x00 be \xff\xfe delivered {\"$where\": 1}", 1)
	if err := e.send(t, "", []string{bn}, msg); err != nil {
		t.Fatalf("refused: %v", err)
	}
	b := e.bounces(t)
	if len(b) != 1 {
		t.Fatalf("records %v", b)
	}
	got := b[0]["bounceMessages"].([]any)[0].(map[string]any)["message"]
	if want := strings.ToValidUTF8(msg, "\uFFFD"); got != want {
		t.Fatalf("stored %q, want %q", got, want)
	}
}
