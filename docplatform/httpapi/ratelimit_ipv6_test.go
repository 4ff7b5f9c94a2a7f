package httpapi_test

import (
	"testing"
	"time"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/internal/testsvc"
)

// An IPv6 host is usually handed a whole /64 and can send from any of its
// 2^64 addresses: every per-IP budget (global, login/callback/logout,
// refresh, API-key failures) counts such a client by its network, with the
// memory store and with Redis alike.
func TestIPv6ClientsShareABudgetPerNetwork(t *testing.T) {
	stores := map[string]func(t *testing.T) ratelimit.Store{
		"memory": func(t *testing.T) ratelimit.Store {
			m := ratelimit.NewMemory(time.Minute)
			t.Cleanup(func() { m.Close() })
			return m
		},
		"redis": func(t *testing.T) ratelimit.Store {
			r := testsvc.RequireRedis(t)
			return ratelimit.NewRedis(r.Client, r.Prefix)
		},
	}
	from := func(addr string) map[string]string { return map[string]string{"X-Forwarded-For": addr} }
	with := func(addr string, extra map[string]string) map[string]string {
		out := from(addr)
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	type step struct {
		method, path string
		header       map[string]string
		status       int
	}
	cases := []struct {
		name     string
		prefix   int  // 0: the default
		needsKey bool // the steps use an API key (w.key)
		steps    func(w *world) []step
	}{
		{"global: addresses of one /64 share a budget, the next /64 has its own", 0, false, func(w *world) []step {
			return []step{
				{"GET", "/test/public", from("2001:db8:1:2::1"), 200},
				{"GET", "/test/public", from("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), 200},
				{"GET", "/test/public", from("2001:db8:1:2:ffff:ffff:ffff:ffff"), 429},
				{"GET", "/test/public", from("2001:db8:1:3::1"), 200},
			}
		}},
		{"login: addresses of one /64 share a budget", 0, false, func(w *world) []step {
			return []step{
				{"GET", "/api/auth/login", from("2001:db8:1:2::1"), 302},
				{"GET", "/api/auth/login", from("2001:db8:1:2::2"), 429},
				{"GET", "/api/auth/login", from("2001:db8:1:3::2"), 302},
			}
		}},
		{"refresh: addresses of one /64 share a budget", 0, false, func(w *world) []step {
			return []step{
				{"POST", "/api/auth/refresh", from("2001:db8:1:2::1"), 401},
				{"POST", "/api/auth/refresh", from("2001:db8:1:2::2"), 429},
				{"POST", "/api/auth/refresh", from("2001:db8:1:3::2"), 401},
			}
		}},
		{"API-key failures: addresses of one /64 share the lockout", 0, true, func(w *world) []step {
			bad := map[string]string{"X-API-Key": "gk_wrong"}
			return []step{
				{"GET", "/test/any", with("2001:db8:1:2::1", bad), 401},
				{"GET", "/test/any", with("2001:db8:1:2::2", bad), 401},
				{"GET", "/test/any", with("2001:db8:1:2::3", map[string]string{"X-API-Key": w.key}), 429},
				{"GET", "/test/any", with("2001:db8:1:3::1", map[string]string{"X-API-Key": w.key}), 200},
			}
		}},
		{"a successful key resets its network's failures", 0, true, func(w *world) []step {
			bad := map[string]string{"X-API-Key": "gk_wrong"}
			return []step{
				{"GET", "/test/any", with("2001:db8:1:2::1", bad), 401},
				{"GET", "/test/any", with("2001:db8:1:2::2", map[string]string{"X-API-Key": w.key}), 200},
				{"GET", "/test/any", with("2001:db8:1:2::3", bad), 401},
				{"GET", "/test/any", with("2001:db8:1:2::4", bad), 401},
				{"GET", "/test/any", with("2001:db8:1:2::5", bad), 429},
			}
		}},
		{"prefix 48: the /64s of one /48 share a budget", 48, false, func(w *world) []step {
			return []step{
				{"GET", "/test/public", from("2001:db8:1:2::1"), 200},
				{"GET", "/test/public", from("2001:db8:1:3::1"), 200},
				{"GET", "/test/public", from("2001:db8:1:ffff::1"), 429},
				{"GET", "/test/public", from("2001:db8:2::1"), 200},
			}
		}},
		{"prefix 128: every address has its own budget", 128, false, func(w *world) []step {
			return []step{
				{"GET", "/test/public", from("2001:db8:1:2::1"), 200},
				{"GET", "/test/public", from("2001:db8:1:2::1"), 200},
				{"GET", "/test/public", from("2001:db8:1:2::1"), 429},
				{"GET", "/test/public", from("2001:db8:1:2::2"), 200},
			}
		}},
		{"IPv4 clients keep a budget per address, mapped or not", 0, false, func(w *world) []step {
			return []step{
				{"GET", "/test/public", from("198.51.100.7"), 200},
				{"GET", "/test/public", from("::ffff:198.51.100.7"), 200},
				{"GET", "/test/public", from("198.51.100.7"), 429},
				{"GET", "/test/public", from("198.51.100.8"), 200},
			}
		}},
	}
	for storeName, newStore := range stores {
		t.Run(storeName, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					opts := func(s *setup) {
						s.counters = newStore(t)
						s.trusted = "127.0.0.1"
						s.ipv6Prefix = tc.prefix
						s.global, s.auth, s.refresh, s.failures = 2, 1, 1, 2
					}
					w := &world{harness: newHarness(t, opts)}
					if tc.needsKey {
						// Logins and key creation run from 127.0.0.1 and
						// need more than these budgets; only the API-key
						// failure budget is small here.
						w = newWorld(t, opts, func(s *setup) { s.global, s.auth, s.refresh = 1000, 1000, 1000 })
					}
					for i, st := range tc.steps(w) {
						if resp := w.do(nil, request{method: st.method, path: st.path, header: st.header}); resp.StatusCode != st.status {
							t.Fatalf("step %d, %s %s from %s: %s, want %d", i+1, st.method, st.path, st.header["X-Forwarded-For"], resp.Status, st.status)
						}
					}
				})
			}
		})
	}
}
