package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

func TestHealthAndDocs(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})

	t.Run("health is open to anonymous callers and reports every check up", func(t *testing.T) {
		r := e.Do(t, "GET", "/api/health", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
		m := r.Map(t)
		if m["status"] != "ok" {
			t.Fatalf("status %v", m["status"])
		}
		details := m["details"].(map[string]any)
		for _, k := range []string{"MongoDB", "config", "redis"} {
			if d, _ := details[k].(map[string]any); d["status"] != "up" {
				t.Errorf("%s: %v", k, details[k])
			}
		}
	})

	t.Run("health is 503 when the rsa key pair configuration is missing", func(t *testing.T) {
		e2 := apitest.Start(t, apitest.Options{})
		r := e2.Do(t, "GET", "/api/configurations?filter="+`{"where":{"name":"rsa"}}`, nil).Expect(t, http.StatusOK)
		var cs []map[string]any
		r.JSON(t, &cs)
		e2.Do(t, "DELETE", "/api/configurations/"+cs[0]["id"].(string), nil).Expect(t, http.StatusNoContent)
		r = e2.Do(t, "GET", "/api/health", nil).Expect(t, http.StatusServiceUnavailable)
		if m := r.Map(t); m["status"] != "error" || m["error"].(map[string]any)["config"] == nil {
			t.Fatalf("body %s", r.Body)
		}
	})

	t.Run("explorer-json is an OpenAPI 3 document naming every area", func(t *testing.T) {
		r := e.Do(t, "GET", "/api/explorer-json", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
		m := r.Map(t)
		if v, _ := m["openapi"].(string); !strings.HasPrefix(v, "3.") {
			t.Fatalf("openapi %v", m["openapi"])
		}
		paths := m["paths"].(map[string]any)
		for _, p := range []string{
			"/api/subscriptions", "/api/subscriptions/{id}", "/api/subscriptions/{id}/verify",
			"/api/subscriptions/{id}/unsubscribe", "/api/subscriptions/{id}/unsubscribe/undo", "/api/subscriptions/swift",
			"/api/subscriptions/count", "/api/subscriptions/services",
			"/api/configurations", "/api/configurations/{id}", "/api/configurations/count",
			"/api/bounces", "/api/bounces/{id}", "/api/bounces/count",
			"/api/administrators", "/api/administrators/{id}", "/api/administrators/login", "/api/administrators/whoami",
			"/api/administrators/{id}/user-credential", "/api/administrators/{id}/access-tokens",
			"/api/health",
		} {
			if paths[p] == nil {
				t.Errorf("path %s missing", p)
			}
		}
	})

	t.Run("operations that need a role document the 403 and the token scheme", func(t *testing.T) {
		m := e.Do(t, "GET", "/api/explorer-json", nil).Map(t)
		op := m["paths"].(map[string]any)["/api/configurations"].(map[string]any)["get"].(map[string]any)
		if op["responses"].(map[string]any)["403"] == nil || op["security"] == nil {
			t.Fatalf("operation %v", op)
		}
		schemes := m["components"].(map[string]any)["securitySchemes"].(map[string]any)
		if schemes["accessToken"] == nil {
			t.Fatalf("schemes %v", schemes)
		}
	})

	t.Run("explorer page is served from embedded assets without third-party hosts", func(t *testing.T) {
		for _, p := range []string{"/api/explorer", "/api/explorer/"} {
			r := e.Do(t, "GET", p, nil, apitest.Anonymous...).Expect(t, http.StatusOK)
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Fatalf("content type %q", ct)
			}
			if !strings.Contains(r.Text(), "explorer-json") || strings.Contains(r.Text(), "https://") {
				t.Fatalf("page does not load the local document only")
			}
			// NotifyBC's console frames the explorer from its own origin.
			if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self'") {
				t.Errorf("%s: CSP %q does not let its own origin frame it", p, csp)
			}
			if x := r.Header.Get("X-Frame-Options"); x != "SAMEORIGIN" {
				t.Errorf("%s: X-Frame-Options %q, want SAMEORIGIN", p, x)
			}
		}
	})

	t.Run("no other page may be framed", func(t *testing.T) {
		r := e.Do(t, "GET", "/subscriptions", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("console: CSP %q", csp)
		}
		if x := r.Header.Get("X-Frame-Options"); x != "DENY" {
			t.Errorf("console: X-Frame-Options %q, want DENY", x)
		}
	})

	t.Run("unknown paths are 404 with a JSON error body", func(t *testing.T) {
		r := e.Do(t, "GET", "/api/nothing-here", nil).Expect(t, http.StatusNotFound)
		if m := r.Map(t); m["statusCode"] != float64(404) || m["error"] != "Not Found" {
			t.Fatalf("body %s", r.Body)
		}
	})
}

func TestMetrics(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	e.Do(t, "GET", "/api/subscriptions/000000000000000000000001/verify", nil, apitest.Anonymous...)
	t.Run("anonymous callers are forbidden", func(t *testing.T) {
		e.Do(t, "GET", "/metrics", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("super admins get request counts labelled by route pattern, not by id", func(t *testing.T) {
		body := e.Do(t, "GET", "/metrics", nil).Expect(t, http.StatusOK).Text()
		if !strings.Contains(body, `notify_http_requests_total{route="GET /api/subscriptions/{id}/verify",status="404"} 1`) {
			t.Fatalf("metrics:\n%s", body)
		}
		if strings.Contains(body, "000000000000000000000001") {
			t.Fatal("an id became a label")
		}
	})
}
