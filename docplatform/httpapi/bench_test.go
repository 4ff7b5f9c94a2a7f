package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChain measures what the five checks add to a request, in
// process (no network): a bare handler, then the platform's own routes
// behind the chain — cookie GET /api/auth/me, Bearer GET /api/auth/me and
// an API-key GET /api/workflows — on SQLite and on PostgreSQL, and a probe
// route with a cookie-authenticated POST carrying its signed CSRF token.
// Besides ns/op (wall clock, which the shared machine's load inflates) it
// reports cpu-µs/op: the process's CPU time (getrusage) over the loop
// divided by the requests, which the load barely moves. The database
// server's own CPU (PostgreSQL's backend) is not in it. Run:
//
//	go test -run '^$' -bench Chain -benchtime 20000x -benchmem ./docplatform/httpapi/
func BenchmarkChain(b *testing.B) {
	echo := func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]bool{"ok": true})
	}
	run := func(b *testing.B, h http.Handler, method, path string, prepare func(*http.Request)) {
		b.ReportAllocs()
		// One request outside the loop: the statements are prepared and
		// the token cache warm, as on a server that has run for a while.
		serve := func() {
			req := httptest.NewRequest(method, path, nil)
			req.RemoteAddr = "127.0.0.1:40000"
			prepare(req)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
		serve()
		// The world's setup (provider keys, logins) leaves garbage whose
		// collection would otherwise land in the first scenario's figure.
		runtime.GC()
		b.ResetTimer()
		start := cpuTime(b)
		for b.Loop() {
			serve()
		}
		b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
	}
	b.Run("bare handler", func(b *testing.B) {
		run(b, http.HandlerFunc(echo), "GET", "/test/any", func(*http.Request) {})
	})
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			w := newRWorldSetup(b, be.open, []func(*setup){func(s *setup) { s.global = 1 << 30 }})
			cookie := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "access_token", Value: w.adminToken}) }
			b.Run("cookie me", func(b *testing.B) { run(b, w.api, "GET", "/api/auth/me", cookie) })
			b.Run("bearer me", func(b *testing.B) {
				run(b, w.api, "GET", "/api/auth/me", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+w.adminToken) })
			})
			b.Run("api key workflows", func(b *testing.B) {
				run(b, w.api, "GET", "/api/workflows", func(r *http.Request) { r.Header.Set("X-API-Key", w.key) })
			})
			b.Run("cookie probe", func(b *testing.B) { run(b, w.api, "GET", "/test/any", cookie) })
			csrf := w.csrf(w.admin)
			b.Run("cookie probe write with CSRF token", func(b *testing.B) {
				run(b, w.api, "POST", "/test/any", func(r *http.Request) {
					cookie(r)
					r.AddCookie(&http.Cookie{Name: "csrf_token", Value: csrf})
					r.Header.Set("X-CSRF-Token", csrf)
				})
			})
		})
	}
}
