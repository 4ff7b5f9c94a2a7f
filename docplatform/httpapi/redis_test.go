package httpapi_test

import (
	"testing"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/internal/testsvc"
)

// Two platform instances (two replicas behind one proxy) on one Redis: the
// per-IP request budget and the API-key failure budget are shared.
func TestReplicasShareBudgetsThroughRedis(t *testing.T) {
	r := testsvc.RequireRedis(t)
	shared := func(s *setup) {
		s.counters = ratelimit.NewRedis(r.Client, r.Prefix)
		s.global = 4
		s.failures = 3
	}
	a, b := newHarness(t, shared), newHarness(t, shared)

	t.Run("request budget", func(t *testing.T) {
		for i, h := range []*harness{a, b, a, b} {
			if resp := h.do(nil, request{method: "GET", path: "/test/public"}); resp.StatusCode != 200 {
				t.Fatalf("request %d: %s", i+1, resp.Status)
			}
		}
		for _, h := range []*harness{a, b} {
			if resp := h.do(nil, request{method: "GET", path: "/test/public"}); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("5th request across replicas: %s", resp.Status)
			}
		}
	})
	t.Run("API-key failure budget", func(t *testing.T) {
		bad := map[string]string{"X-API-Key": "gk_wrong"}
		// The global budget above is spent; the failure check sits behind
		// it, so give each replica a fresh global budget by resetting.
		r.Client.Del(t.Context(), r.Prefix+"rl:global:127.0.0.1")
		for i, h := range []*harness{a, b, a} {
			if resp := h.do(nil, request{method: "GET", path: "/test/any", header: bad}); resp.StatusCode != 401 {
				t.Fatalf("failure %d: %s", i+1, resp.Status)
			}
		}
		if resp := b.do(nil, request{method: "GET", path: "/test/any", header: bad}); resp.StatusCode != 429 {
			t.Fatalf("4th failure on the other replica: %s", resp.Status)
		}
	})
}
