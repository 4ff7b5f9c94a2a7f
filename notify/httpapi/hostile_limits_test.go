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

// These tests replay, over HTTP against the real service, the attacks a
// hostile review of the notification service found (issue 9), and check
// what must hold instead.

// Finding 4: wrong codes are limited per subscription and per client
// address, with 429 and Retry-After.
func TestCodeAttemptLimits(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"trustedReverseProxyIps": []any{"127.0.0.1"}}}})
	mk := func(state string) string {
		return seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "svc", "channel": "email", "userChannelId": "v@invalid.local", "state": state, "unsubscriptionCode": "54321",
			"confirmationRequest": map[string]any{"sendRequest": false, "confirmationCode": "37688"}})["id"].(string)
	}
	from := func(addr string) []string { return []string{"X-Forwarded-For", addr} }
	retryAfter := func(t *testing.T, r *apitest.Response) {
		t.Helper()
		s, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || s < 1 || s > 15*60 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
	}

	t.Run("one address guessing codes is stopped across subscriptions and code kinds", func(t *testing.T) {
		addr := from("198.51.100.1")
		guesses := []string{}
		for i := 0; i < 4; i++ {
			guesses = append(guesses, "/api/subscriptions/"+mk("unconfirmed")+"/verify?confirmationCode=1111"+strconv.Itoa(i))
			guesses = append(guesses, "/api/subscriptions/"+mk("confirmed")+"/unsubscribe?unsubscriptionCode=1111"+strconv.Itoa(i))
		}
		for _, p := range guesses {
			e.Do(t, "GET", p, nil, addr...).Expect(t, http.StatusForbidden)
		}
		fresh := mk("deleted")
		r := e.Do(t, "GET", "/api/subscriptions/"+fresh+"/unsubscribe/undo?unsubscriptionCode=00000", nil, addr...).Expect(t, http.StatusTooManyRequests)
		retryAfter(t, r)
		// even the right code is not tried while the address is blocked
		e.Do(t, "GET", "/api/subscriptions/"+fresh+"/unsubscribe/undo?unsubscriptionCode=54321", nil, addr...).Expect(t, http.StatusTooManyRequests)
		// another address is not affected
		e.Do(t, "GET", "/api/subscriptions/"+fresh+"/unsubscribe/undo?unsubscriptionCode=54321", nil, from("198.51.100.2")...).Expect(t, http.StatusOK)
	})

	t.Run("an IPv6 client counts by its /64", func(t *testing.T) {
		for i := 1; i <= 8; i++ {
			e.Do(t, "GET", "/api/subscriptions/"+mk("unconfirmed")+"/verify?confirmationCode=66666", nil, from(fmt.Sprintf("2001:db8:7::%x", i))...).Expect(t, http.StatusForbidden)
		}
		id := mk("unconfirmed")
		e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688", nil, from("2001:db8:7::ffff")...).Expect(t, http.StatusTooManyRequests)
		e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688", nil, from("2001:db8:7:1::1")...).Expect(t, http.StatusOK)
	})

	t.Run("many addresses guessing one subscription's code are stopped", func(t *testing.T) {
		id := mk("unconfirmed")
		for i := 0; i < 10; i++ {
			e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=2222"+strconv.Itoa(i), nil, from(fmt.Sprintf("203.0.113.%d", i+1))...).Expect(t, http.StatusForbidden)
		}
		r := e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688", nil, from("203.0.113.99")...).Expect(t, http.StatusTooManyRequests)
		retryAfter(t, r)
		if sub(t, e, id)["state"] != "unconfirmed" {
			t.Fatal("a blocked attempt changed the subscription")
		}
		// the DELETE and one-click POST forms count against the same subscription
		e.Do(t, "DELETE", "/api/subscriptions/"+id+"?unsubscriptionCode=54321", nil, from("203.0.113.98")...).Expect(t, http.StatusTooManyRequests)
		e.Do(t, "POST", "/api/subscriptions/"+id+"/unsubscribe?unsubscriptionCode=54321", nil, from("203.0.113.97")...).Expect(t, http.StatusTooManyRequests)
	})

	t.Run("a right code resets the subscription's count, so its owner is not locked out by old mistakes", func(t *testing.T) {
		id := mk("unconfirmed")
		for i := 0; i < 9; i++ {
			e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=3333"+strconv.Itoa(i), nil, from(fmt.Sprintf("192.0.2.%d", i+1))...).Expect(t, http.StatusForbidden)
		}
		e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688", nil, from("192.0.2.100")...).Expect(t, http.StatusOK)
		for i := 0; i < 9; i++ {
			e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe?unsubscriptionCode=4444"+strconv.Itoa(i%10), nil, from(fmt.Sprintf("192.0.2.%d", 101+i))...).Expect(t, http.StatusForbidden)
		}
	})

	t.Run("administrators are not limited", func(t *testing.T) {
		id := mk("unconfirmed")
		for i := 0; i < 25; i++ {
			e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=5555"+strconv.Itoa(i%10), nil).Expect(t, http.StatusForbidden)
		}
		e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=37688", nil).Expect(t, http.StatusOK)
	})

	t.Run("a wrong Swift key counts as a wrong code", func(t *testing.T) {
		addr := from("198.51.100.50")
		for i := 0; i < 8; i++ {
			e.Do(t, "POST", "/api/subscriptions/swift", map[string]any{"notifyBCSwiftKey": "guess" + strconv.Itoa(i), "PhoneNumber": "1"}, addr...).Expect(t, http.StatusForbidden)
		}
		e.Do(t, "POST", "/api/subscriptions/swift", map[string]any{"notifyBCSwiftKey": "12345", "PhoneNumber": "1"}, addr...).Expect(t, http.StatusTooManyRequests)
	})
}

// With a Redis store the budgets hold across nodes: a client that spent
// its budget on one node is refused by the others.
func TestCodeAttemptLimitsAcrossNodes(t *testing.T) {
	r := testsvc.RequireRedis(t)
	shared := ratelimit.NewRedis(r.Client, r.Prefix)
	trusted := []map[string]any{{"trustedReverseProxyIps": []any{"127.0.0.1"}}}
	a := apitest.Start(t, apitest.Options{Config: trusted, Attempts: shared})
	b := apitest.Start(t, apitest.Options{Config: trusted, Attempts: shared})
	mk := func(e *apitest.Env) string {
		return seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "svc", "channel": "email", "userChannelId": "v@invalid.local", "state": "unconfirmed",
			"confirmationRequest": map[string]any{"sendRequest": false, "confirmationCode": "37688"}})["id"].(string)
	}
	addr := []string{"X-Forwarded-For", "198.51.100.7"}
	for i := 0; i < 8; i++ {
		a.Do(t, "GET", "/api/subscriptions/"+mk(a)+"/verify?confirmationCode=99999", nil, addr...).Expect(t, http.StatusForbidden)
	}
	b.Do(t, "GET", "/api/subscriptions/"+mk(b)+"/verify?confirmationCode=37688", nil, addr...).Expect(t, http.StatusTooManyRequests)
}

// Failed log-ins are limited per client address too: each costs a bcrypt
// comparison, and passwords can be guessed.
func TestLoginFailureLimit(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"trustedReverseProxyIps": []any{"127.0.0.1"}}}})
	seed(t, e, "/api/administrators", map[string]any{"email": "a@invalid.local", "password": validPassword})
	addr := []string{"X-Forwarded-For", "198.51.100.9"}
	for i := 0; i < 10; i++ {
		e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "a@invalid.local", "password": "Wrong-pass1!"}, addr...).Expect(t, http.StatusUnauthorized)
	}
	r := e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "a@invalid.local", "password": validPassword}, addr...).Expect(t, http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "a@invalid.local", "password": validPassword}, "X-Forwarded-For", "198.51.100.10").Expect(t, http.StatusOK)
}
