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
// on SQLite), and with an API key (HMAC, key lookup on SQLite). Run:
//
//	go test -run '^$' -bench Chain -benchmem ./docplatform/httpapi/
func BenchmarkChain(b *testing.B) {
	w := newWorld(b, func(s *setup) { s.global = 1 << 30 })
	echo := func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		json.NewEncoder(rw).Encode(map[string]bool{"ok": true})
	}
	run := func(b *testing.B, h http.Handler, prepare func(*http.Request)) {
		b.ReportAllocs()
		for b.Loop() {
			req := httptest.NewRequest("GET", "/test/any", nil)
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
		run(b, http.HandlerFunc(echo), func(*http.Request) {})
	})
	b.Run("cookie token", func(b *testing.B) {
		run(b, w.api, func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "access_token", Value: w.adminToken}) })
	})
	b.Run("API key", func(b *testing.B) {
		run(b, w.api, func(r *http.Request) { r.Header.Set("X-API-Key", w.key) })
	})
}
