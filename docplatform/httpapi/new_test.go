package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/httpapi"
	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/internal/ratelimit"
)

func TestNewRefusesARouteWithoutAccessLevel(t *testing.T) {
	oc, _ := sso.New(sso.Config{Issuer: "http://127.0.0.1:1/realms/x", ClientID: "a", ClientSecret: "b", RedirectURL: "http://x/cb"})
	rule := ratelimit.Rule{Limit: 1, Window: time.Second}
	_, err := httpapi.New(httpapi.Options{
		OIDC: oc, Store: sqliteStore(t), Counters: ratelimit.NewMemory(0), FrontendURL: "http://front", CookieSecret: cookieSecret,
		GlobalLimit: rule, AuthLimit: rule, RefreshLimit: rule, APIKeyFailures: rule,
		Routes: []httpapi.Route{{Method: "GET", Pattern: "/forgotten", Handler: func(http.ResponseWriter, *http.Request) {}}},
	})
	if err == nil {
		t.Fatal("route without access level accepted")
	}
}

// A handler that panics answers a JSON 500 with the security headers, and
// the server keeps serving; the panic value is logged, not sent.
func TestPanicBecomesA500(t *testing.T) {
	oc, _ := sso.New(sso.Config{Issuer: "http://127.0.0.1:1/realms/x", ClientID: "a", ClientSecret: "b", RedirectURL: "http://x/cb"})
	rule := ratelimit.Rule{Limit: 100, Window: time.Minute}
	var logs syncBuffer
	api, err := httpapi.New(httpapi.Options{
		OIDC: oc, Store: sqliteStore(t), Counters: ratelimit.NewMemory(0), FrontendURL: "http://front", CookieSecret: cookieSecret,
		GlobalLimit: rule, AuthLimit: rule, RefreshLimit: rule, APIKeyFailures: rule,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Routes: []httpapi.Route{{Method: "GET", Pattern: "/boom", Access: httpapi.Public(), Handler: func(http.ResponseWriter, *http.Request) { panic("secret-detail") }}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close(context.Background())
	srv := httptest.NewServer(api)
	defer srv.Close()
	for i := 0; i < 2; i++ {
		resp, err := http.Get(srv.URL + "/boom")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 500 || resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("Strict-Transport-Security") == "" {
			t.Fatalf("%s %v", resp.Status, resp.Header)
		}
		if !strings.Contains(string(body), `"statusCode":500`) || strings.Contains(string(body), "secret-detail") {
			t.Fatalf("body %s", body)
		}
	}
	if !strings.Contains(logs.String(), "panic") {
		t.Error("panic not logged")
	}
}

// FRONTEND_URL is compared with Origin as browsers write it: lower-case
// host, no default port, no path.
func TestCORSOriginOfFrontendURLIsNormalised(t *testing.T) {
	oc, _ := sso.New(sso.Config{Issuer: "http://127.0.0.1:1/realms/x", ClientID: "a", ClientSecret: "b", RedirectURL: "http://x/cb"})
	rule := ratelimit.Rule{Limit: 100, Window: time.Minute}
	api, err := httpapi.New(httpapi.Options{
		OIDC: oc, Store: sqliteStore(t), Counters: ratelimit.NewMemory(0), FrontendURL: "HTTPS://App.Example.org:443/app", CookieSecret: cookieSecret,
		GlobalLimit: rule, AuthLimit: rule, RefreshLimit: rule, APIKeyFailures: rule,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close(context.Background())
	for _, tc := range []struct {
		origin  string
		allowed bool
	}{
		{"https://app.example.org", true},
		{"http://app.example.org", false},
		{"https://app.example.org.evil.example", false},
		{"null", false},
	} {
		req := httptest.NewRequest("GET", "/api/nothing", nil)
		req.Header.Set("Origin", tc.origin)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		got := rec.Header().Get("Access-Control-Allow-Origin")
		if tc.allowed != (got == tc.origin) || rec.Header().Get("Vary") != "Origin" {
			t.Errorf("origin %q: ACAO %q Vary %q", tc.origin, got, rec.Header().Get("Vary"))
		}
	}
}
