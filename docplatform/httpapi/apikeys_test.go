package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestAPIKeyEndpoints(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testAPIKeyEndpoints(t, newWorld(t, onStore(b.open))) })
	}
}

func testAPIKeyEndpoints(t *testing.T, w *world) {
	csrf := func(c *http.Client) map[string]string { return map[string]string{"X-CSRF-Token": w.csrf(c)} }
	body := `{"groupId":"` + w.alpha + `"}`

	t.Run("a second key for the group is 409", func(t *testing.T) {
		resp := w.do(w.admin, request{method: "POST", path: "/api/api-key", body: body, header: csrf(w.admin)})
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("%s", resp.Status)
		}
	})
	t.Run("GET shows the prefix, never the key", func(t *testing.T) {
		resp := w.do(w.admin, request{method: "GET", path: "/api/api-key?groupId=" + w.alpha})
		var out struct {
			APIKey map[string]any
		}
		readJSON(t, resp, &out)
		if out.APIKey["keyPrefix"] != w.key[:11] || out.APIKey["groupId"] != w.alpha {
			t.Fatalf("%v", out)
		}
		for _, v := range out.APIKey {
			if s, ok := v.(string); ok && s == w.key {
				t.Fatal("full key returned by GET")
			}
		}
	})
	t.Run("last use is recorded, coalesced", func(t *testing.T) {
		w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": w.key}})
		deadline := time.Now().Add(5 * time.Second)
		for {
			var out struct{ APIKey map[string]any }
			readJSON(t, w.do(w.admin, request{method: "GET", path: "/api/api-key?groupId=" + w.alpha}), &out)
			if out.APIKey["lastUsed"] != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("last use never recorded")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("members who are not group admins cannot manage keys", func(t *testing.T) {
		for _, r := range []request{
			{method: "GET", path: "/api/api-key?groupId=" + w.alpha},
			{method: "POST", path: "/api/api-key/regenerate", body: body, header: csrf(w.member)},
			{method: "DELETE", path: "/api/api-key?groupId=" + w.alpha, header: csrf(w.member)},
		} {
			if resp := w.do(w.member, r); resp.StatusCode != 403 {
				t.Errorf("%s %s: %s", r.method, r.path, resp.Status)
			}
		}
	})
	t.Run("API keys cannot manage keys", func(t *testing.T) {
		for _, r := range []request{
			{method: "GET", path: "/api/api-key?groupId=" + w.alpha},
			{method: "POST", path: "/api/api-key", body: `{"groupId":"` + w.beta + `"}`},
			{method: "POST", path: "/api/api-key/regenerate", body: body},
			{method: "DELETE", path: "/api/api-key?groupId=" + w.alpha},
		} {
			r.header = map[string]string{"X-API-Key": w.key}
			if resp := w.do(nil, r); resp.StatusCode != 403 {
				t.Errorf("%s %s: %s", r.method, r.path, resp.Status)
			}
		}
	})
	t.Run("managing keys by cookie needs the CSRF token", func(t *testing.T) {
		if resp := w.do(w.admin, request{method: "POST", path: "/api/api-key/regenerate", body: body}); resp.StatusCode != 403 {
			t.Fatalf("%s", resp.Status)
		}
	})
	t.Run("a system admin may create a key for any live group", func(t *testing.T) {
		resp := w.do(w.sysadmin, request{method: "POST", path: "/api/api-key", body: `{"groupId":"` + w.beta + `"}`, header: csrf(w.sysadmin)})
		if resp.StatusCode != 201 {
			t.Fatalf("%s", resp.Status)
		}
		resp = w.do(w.sysadmin, request{method: "POST", path: "/api/api-key", body: `{"groupId":"00000000-0000-4000-8000-000000000000"}`, header: csrf(w.sysadmin)})
		if resp.StatusCode != 404 {
			t.Fatalf("unknown group: %s", resp.Status)
		}
	})
	t.Run("regenerate kills the old key at once and shows the new one once", func(t *testing.T) {
		resp := w.do(w.admin, request{method: "POST", path: "/api/api-key/regenerate", body: body, header: csrf(w.admin)})
		var out struct{ Key string }
		readJSON(t, resp, &out)
		if resp.StatusCode != 200 || out.Key == "" || out.Key == w.key {
			t.Fatalf("%s %+v", resp.Status, out)
		}
		if resp := w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": w.key}}); resp.StatusCode != 401 {
			t.Errorf("old key after regenerate: %s", resp.Status)
		}
		if resp := w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": out.Key}}); resp.StatusCode != 200 {
			t.Errorf("new key: %s", resp.Status)
		}
		w.key = out.Key
	})
	t.Run("delete removes the key", func(t *testing.T) {
		if resp := w.do(w.admin, request{method: "DELETE", path: "/api/api-key?groupId=" + w.alpha, header: csrf(w.admin)}); resp.StatusCode != 204 {
			t.Fatalf("%s", resp.Status)
		}
		if resp := w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": w.key}}); resp.StatusCode != 401 {
			t.Errorf("deleted key: %s", resp.Status)
		}
		if resp := w.do(w.admin, request{method: "DELETE", path: "/api/api-key?groupId=" + w.alpha, header: csrf(w.admin)}); resp.StatusCode != 404 {
			t.Errorf("second delete: %s", resp.Status)
		}
		var out struct{ APIKey any }
		readJSON(t, w.do(w.admin, request{method: "GET", path: "/api/api-key?groupId=" + w.alpha}), &out)
		if out.APIKey != nil {
			t.Errorf("GET after delete: %v", out.APIKey)
		}
	})
	t.Run("keys, tokens, codes and cookies never reach the log", func(t *testing.T) {
		logs := w.logs.String()
		for name, secret := range map[string]string{
			"api key": w.key, "access token": w.adminToken, "csrf token": w.csrf(w.admin),
			"refresh token": w.cookie(w.admin, "/api/auth/refresh", "refresh_token"), "id token": w.cookie(w.admin, "/api/auth", "id_token"),
		} {
			if secret != "" && strings.Contains(logs, secret) {
				t.Errorf("%s found in the log", name)
			}
		}
		if strings.Contains(logs, "code=") || strings.Contains(logs, "state=") {
			t.Error("a query string reached the log")
		}
	})
}

// Every route in the table declares an access level; a route without one
// cannot be registered.
func TestRouteTableDeclaresEveryAccessLevel(t *testing.T) {
	h := newHarness(t)
	routes := h.api.Routes()
	if len(routes) < 10 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, rt := range routes {
		if rt.Access.Level.String() == "undeclared" {
			t.Errorf("%s %s has no access level", rt.Method, rt.Pattern)
		}
	}
	want := map[string]string{
		"GET /api/health": "public", "GET /api/auth/login": "public", "GET /api/auth/callback": "public",
		"POST /api/auth/refresh": "public", "GET /api/auth/logout": "public", "GET /api/auth/me": "authenticated",
		"GET /api/api-key": "group", "POST /api/api-key": "group", "DELETE /api/api-key": "group", "POST /api/api-key/regenerate": "group",
	}
	for _, rt := range routes {
		if lvl, ok := want[rt.Method+" "+rt.Pattern]; ok {
			if rt.Access.Level.String() != lvl {
				t.Errorf("%s %s is %s, want %s", rt.Method, rt.Pattern, rt.Access.Level, lvl)
			}
			if lvl == "group" && rt.Access.APIKey {
				t.Errorf("%s %s admits API keys", rt.Method, rt.Pattern)
			}
			delete(want, rt.Method+" "+rt.Pattern)
		}
	}
	for r := range want {
		t.Errorf("route %s missing", r)
	}
}
