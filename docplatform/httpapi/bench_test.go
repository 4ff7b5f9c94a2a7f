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
// server's own CPU (PostgreSQL's backend) is not in it. Behind the chain
// it also reports added-allocs/op: its allocations per request less the
// bare handler's (the request, the recorder and the echo's own), which is
// what the checks, the store and the route's handler add. Run:
//
//	go test -run '^$' -bench Chain -benchtime 20000x -benchmem ./docplatform/httpapi/
func BenchmarkChain(b *testing.B) {
	echo := func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]bool{"ok": true})
	}
	serveFunc := func(b *testing.B, h http.Handler, method, path string, prepare func(*http.Request)) func() {
		return func() {
			req := httptest.NewRequest(method, path, nil)
			req.RemoteAddr = "127.0.0.1:40000"
			prepare(req)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	}
	bare := func(b *testing.B) func() {
		return serveFunc(b, http.HandlerFunc(echo), "GET", "/test/any", func(*http.Request) {})
	}
	// What the bare handler allocates, whichever scenarios -bench picked.
	var bareAllocs float64
	// run measures h; nil is the bare handler.
	run := func(b *testing.B, h http.Handler, method, path string, prepare func(*http.Request)) {
		b.ReportAllocs()
		chained := h != nil
		if !chained {
			h = http.HandlerFunc(echo)
		}
		serve := serveFunc(b, h, method, path, prepare)
		if bareAllocs == 0 {
			bareAllocs = testing.AllocsPerRun(100, bare(b))
		}
		// One request outside the loop: the statements are prepared and
		// the token cache warm, as on a server that has run for a while.
		serve()
		// The world's setup (provider keys, logins) leaves garbage whose
		// collection would otherwise land in the first scenario's figure.
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.ResetTimer()
		start := cpuTime(b)
		for b.Loop() {
			serve()
		}
		b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
		runtime.ReadMemStats(&after)
		if chained {
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)-bareAllocs, "added-allocs/op")
		}
	}
	b.Run("bare handler", func(b *testing.B) {
		run(b, nil, "GET", "/test/any", func(*http.Request) {})
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
