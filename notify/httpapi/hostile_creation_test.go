package httpapi_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// mailsTo counts the caught mails to addr.
func mailsTo(e *apitest.Env, addr string) int {
	n := 0
	for _, m := range e.Mail.Mails() {
		for _, to := range m.Envelope.To {
			if to == addr {
				n++
			}
		}
	}
	return n
}

// TestAnonymousSubscriptionsAreLimited reproduces finding 6 of the second
// hostile review over real HTTP: 40 anonymous POST /subscriptions from one
// address sent 40 confirmation mails to one address in 0.1 s, and SMS
// confirmations to +1-900 numbers. Afterwards, with the defaults, a
// client creates 20 subscriptions an hour, an address gets 10
// confirmation requests an hour whoever asks, and a spent budget is 429
// with Retry-After before anything is stored or sent; an SMS number
// pattern keeps confirmations from numbers the service does not serve.
// Administrators are not limited.
func TestAnonymousSubscriptionsAreLimited(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{
		"trustedReverseProxyIps": []any{"127.0.0.1"},
		// NANP numbers outside the 9xx area codes (900 is premium rate)
		"sms": map[string]any{"allowedNumberRegex": `^\+?1?[2-8]\d{9}$`},
	}}})
	from := func(addr string) []string { return []string{"X-Forwarded-For", addr} }
	create := func(t *testing.T, to string, headers ...string) *apitest.Response {
		t.Helper()
		return e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "news", "channel": "email", "userChannelId": to}, headers...)
	}
	count := func(t *testing.T) int {
		t.Helper()
		var c map[string]float64
		e.Do(t, "GET", "/api/subscriptions/count", nil).Expect(t, http.StatusOK).JSON(t, &c)
		return int(c["count"])
	}
	refused := func(t *testing.T, r *apitest.Response) {
		t.Helper()
		r.Expect(t, http.StatusTooManyRequests)
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || s > 3600 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
	}

	t.Run("one address gets 10 confirmation requests an hour, from one client or many", func(t *testing.T) {
		for i := range 10 {
			create(t, "victim@example.com", from(fmt.Sprintf("198.51.100.%d", i+1))...).Expect(t, http.StatusOK)
		}
		before := count(t)
		refused(t, create(t, "victim@example.com", from("198.51.100.50")...))
		refused(t, create(t, "Victim@Example.COM", from("198.51.100.51")...))
		if n := mailsTo(e, "victim@example.com"); n != 10 {
			t.Fatalf("%d confirmation mails to the victim, want 10", n)
		}
		if count(t) != before {
			t.Fatal("a refused subscription was stored")
		}
	})
	t.Run("one client creates 20 subscriptions an hour", func(t *testing.T) {
		for i := range 20 {
			create(t, fmt.Sprintf("reader%d@example.com", i), from("203.0.113.7")...).Expect(t, http.StatusOK)
		}
		refused(t, create(t, "reader99@example.com", from("203.0.113.7")...))
		t.Run("another client is not affected (control)", func(t *testing.T) {
			create(t, "reader99@example.com", from("203.0.113.8")...).Expect(t, http.StatusOK)
		})
		t.Run("an IPv6 client counts by its /64", func(t *testing.T) {
			for i := range 20 {
				create(t, fmt.Sprintf("six%d@example.com", i), from(fmt.Sprintf("2001:db8:1:2::%x", i+1))...).Expect(t, http.StatusOK)
			}
			refused(t, create(t, "six99@example.com", from("2001:db8:1:2:ffff::1")...))
		})
	})
	t.Run("SMS confirmations go only to numbers sms.allowedNumberRegex admits", func(t *testing.T) {
		sms := func(number string, headers ...string) *apitest.Response {
			return e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "news", "channel": "sms", "userChannelId": number}, headers...)
		}
		before := len(e.SMS.Requests())
		r := sms("+1-900-555-0199", from("192.0.2.60")...).Expect(t, http.StatusBadRequest)
		if m := r.Map(t); m["message"] == nil {
			t.Fatalf("body %s", r.Body)
		}
		sms("1 (250) 555-0199", from("192.0.2.60")...).Expect(t, http.StatusOK)
		if got := len(e.SMS.Requests()) - before; got != 1 {
			t.Fatalf("%d SMS sent, want 1 (to 250)", got)
		}
		t.Run("an administrator may write any number (control)", func(t *testing.T) {
			e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "news", "channel": "sms", "userChannelId": "+1-900-555-0100", "state": "confirmed"}).Expect(t, http.StatusOK)
		})
	})
	t.Run("a signed-in user's changes resend the confirmation within the same budget", func(t *testing.T) {
		carol := apitest.SMUser("carol")
		id := create(t, "patched@example.com", carol...).Expect(t, http.StatusOK).Map(t)["id"].(string)
		for i := range 9 {
			e.Do(t, "PATCH", "/api/subscriptions/"+id, map[string]any{"data": map[string]any{"n": i}}, carol...).Expect(t, http.StatusOK)
		}
		refused(t, e.Do(t, "PATCH", "/api/subscriptions/"+id, map[string]any{"data": map[string]any{"n": 9}}, carol...))
		if n := mailsTo(e, "patched@example.com"); n != 10 {
			t.Fatalf("%d mails, want 10", n)
		}
	})
	t.Run("administrators are not limited (control)", func(t *testing.T) {
		for range 12 {
			create(t, "victim@example.com").Expect(t, http.StatusOK)
		}
	})
}

// With a Redis store (the queue's Redis, as `serve` with a queue backend
// uses) the budgets hold across nodes.
func TestSubscriptionBudgetsAreShared(t *testing.T) {
	r := testsvc.RequireRedis(t)
	shared := ratelimit.NewRedis(r.Client, r.Prefix)
	cfg := []map[string]any{{"trustedReverseProxyIps": []any{"127.0.0.1"}, "subscription": map[string]any{"confirmationRequestLimit": map[string]any{"max": 3.0}}}}
	a := apitest.Start(t, apitest.Options{Config: cfg, Attempts: shared})
	b := apitest.Start(t, apitest.Options{Config: cfg, Attempts: shared})
	body := map[string]any{"serviceName": "news", "channel": "email", "userChannelId": "shared@example.com"}
	for i, e := range []*apitest.Env{a, b, a} {
		e.Do(t, "POST", "/api/subscriptions", body, "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1)).Expect(t, http.StatusOK)
	}
	b.Do(t, "POST", "/api/subscriptions", body, "X-Forwarded-For", "198.51.100.9").Expect(t, http.StatusTooManyRequests)
}
