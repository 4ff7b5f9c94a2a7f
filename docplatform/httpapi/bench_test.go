package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkChain measures what the five checks add to a request, in
// process (no network): a bare handler, the same handler behind the chain
// with a cookie access token (RS256 verification plus the identity query
// on SQLite), the same as a POST with its signed CSRF token, and with an
// API key (HMAC, key lookup on SQLite). Run:
//
//	go test -run '^$' -bench Chain -benchmem ./docplatform/httpapi/
func BenchmarkChain(b *testing.B) {
	w := newWorld(b, func(s *setup) { s.global = 1 << 30 })
	csrf := w.csrf(w.admin)
	// write is a cookie-authenticated POST: check 5 verifies the signed
	// CSRF token against the access token.
	write := func(r *http.Request) {
		r.AddCookie(&http.Cookie{Name: "access_token", Value: w.adminToken})
		r.AddCookie(&http.Cookie{Name: "csrf_token", Value: csrf})
		r.Header.Set("X-CSRF-Token", csrf)
	}
	echo := func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]bool{"ok": true})
	}
	run := func(b *testing.B, h http.Handler, method string, prepare func(*http.Request)) {
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest(method, "/test/any", nil)
			req.RemoteAddr = "127.0.0.1:40000"
			prepare(req)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d", rec.Code)
			}
		}
	}
	b.Run("bare handler", func(b *testing.B) {
		run(b, http.HandlerFunc(echo), "GET", func(*http.Request) {})
	})
	b.Run("cookie token", func(b *testing.B) {
		run(b, w.api, "GET", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "access_token", Value: w.adminToken}) })
	})
	b.Run("cookie token, write with CSRF token", func(b *testing.B) {
		run(b, w.api, "POST", write)
	})
	b.Run("API key", func(b *testing.B) {
		run(b, w.api, "GET", func(r *http.Request) { r.Header.Set("X-API-Key", w.key) })
	})
}
