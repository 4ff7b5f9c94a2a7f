package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

// world is a platform with users in groups, logged in, and an API key.
type world struct {
	*harness
	alpha, beta, gone       string // group ids; gone is soft-deleted
	admin, member, outsider *http.Client
	sysadmin                *http.Client
	key, goneKey            string
	adminToken              string
}

var (
	carol = ssotest.User{Subject: "user-carol", Name: "Carol"}
	sam   = ssotest.User{Subject: "user-sam", Name: "Sam the system admin"}
)

func newWorld(t testing.TB, opts ...func(*setup)) *world {
	h := newHarness(t, opts...)
	w := &world{harness: h}
	w.alpha, w.beta, w.gone = h.store.createGroup("Alpha"), h.store.createGroup("Beta"), h.store.createGroup("Gone")
	w.admin = h.login(ada)
	w.member = h.login(bob)
	w.outsider = h.login(carol)
	w.sysadmin = h.login(sam)
	h.store.setAdmin(sam.Subject, true)
	h.store.setMember(ada.Subject, w.alpha, docplatform.RoleAdmin)
	h.store.setMember(ada.Subject, w.gone, docplatform.RoleAdmin)
	h.store.setMember(bob.Subject, w.alpha, docplatform.RoleMember)
	w.key = w.createKey(w.admin, w.alpha)
	w.goneKey = w.createKey(w.admin, w.gone)
	h.store.softDelete(w.gone)
	w.adminToken = h.cookie(w.admin, "/", "access_token")
	return w
}

func (w *world) createKey(c *http.Client, group string) string {
	w.t.Helper()
	resp := w.do(c, request{method: "POST", path: "/api/api-key", body: `{"groupId":"` + group + `"}`, header: map[string]string{"X-CSRF-Token": w.cookie(c, "/", "csrf_token")}})
	var out struct {
		Key    string
		APIKey struct{ KeyPrefix, GroupID string }
	}
	if resp.StatusCode != http.StatusCreated {
		w.t.Fatalf("create key: %s", resp.Status)
	}
	readJSON(w.t, resp, &out)
	if !strings.HasPrefix(out.Key, "gk_") || len(out.Key) != 3+43 || !strings.HasPrefix(out.Key, out.APIKey.KeyPrefix) || out.APIKey.GroupID != group {
		w.t.Fatalf("created key %+v", out)
	}
	return out.Key
}

func (w *world) csrf(c *http.Client) string { return w.cookie(c, "/", "csrf_token") }

// The seed's access-level table and its error table, row by row.
func TestAccessLevels(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testAccessLevels(t, newWorld(t, onStore(b.open))) })
	}
}

func testAccessLevels(t *testing.T, w *world) {
	apiKey := map[string]string{"X-API-Key": "KEY"}
	cases := []struct {
		name   string
		client func(*world) *http.Client
		req    request
		status int
	}{
		// public
		{"public: no credential needed", nil, request{method: "GET", path: "/test/public"}, 200},
		{"public: an invalid token is ignored", nil, request{method: "GET", path: "/test/public", header: map[string]string{"Authorization": "Bearer junk"}}, 200},
		{"public: an invalid API key is ignored", nil, request{method: "GET", path: "/test/public", header: map[string]string{"X-API-Key": "junk"}}, 200},
		// authenticated
		{"authenticated: no credential is 401", nil, request{method: "GET", path: "/test/authenticated"}, 401},
		{"authenticated: invalid bearer is 401", nil, request{method: "GET", path: "/test/authenticated", header: map[string]string{"Authorization": "Bearer junk"}}, 401},
		{"authenticated: token cookie passes", func(w *world) *http.Client { return w.outsider }, request{method: "GET", path: "/test/authenticated"}, 200},
		{"authenticated: bearer token passes", nil, request{method: "GET", path: "/test/authenticated", header: map[string]string{"Authorization": "Bearer ADMINTOKEN"}}, 200},
		{"authenticated: API key is 403", nil, request{method: "GET", path: "/test/authenticated", header: apiKey}, 403},
		{"authenticated: API key is 403 even beside a valid token", func(w *world) *http.Client { return w.admin }, request{method: "GET", path: "/test/authenticated", header: apiKey}, 403},
		{"authenticated: /api/auth/me refuses API keys", nil, request{method: "GET", path: "/api/auth/me", header: apiKey}, 403},
		// token or API key
		{"token or key: neither is 401", nil, request{method: "GET", path: "/test/any"}, 401},
		{"token or key: token passes", func(w *world) *http.Client { return w.outsider }, request{method: "GET", path: "/test/any"}, 200},
		{"token or key: key passes", nil, request{method: "GET", path: "/test/any", header: apiKey}, 200},
		{"token or key: wrong key is 401", nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": "gk_wrong"}}, 401},
		// system admin
		{"system admin: no credential is 401", nil, request{method: "GET", path: "/test/admin"}, 401},
		{"system admin: a group admin is 403", func(w *world) *http.Client { return w.admin }, request{method: "GET", path: "/test/admin"}, 403},
		{"system admin: the system admin passes", func(w *world) *http.Client { return w.sysadmin }, request{method: "GET", path: "/test/admin"}, 200},
		{"system admin: API key is 403", nil, request{method: "GET", path: "/test/admin", header: apiKey}, 403},
		{"system admin combined with API-key access still rejects keys", nil, request{method: "DELETE", path: "/test/admin/users/x", header: apiKey}, 403},
		// group scoped
		{"group (path): member passes", func(w *world) *http.Client { return w.member }, request{method: "GET", path: "/test/groups/ALPHA"}, 200},
		{"group (path): non-member is 403", func(w *world) *http.Client { return w.outsider }, request{method: "GET", path: "/test/groups/ALPHA"}, 403},
		{"group (path): member below the minimum role is 403", func(w *world) *http.Client { return w.member }, request{method: "PUT", path: "/test/groups/ALPHA", header: map[string]string{"X-CSRF-Token": "CSRF-MEMBER"}}, 403},
		{"group (path): group admin passes the ADMIN minimum", func(w *world) *http.Client { return w.admin }, request{method: "PUT", path: "/test/groups/ALPHA", header: map[string]string{"X-CSRF-Token": "CSRF-ADMIN"}}, 200},
		{"group (path): system admin bypasses membership", func(w *world) *http.Client { return w.sysadmin }, request{method: "PUT", path: "/test/groups/BETA", header: map[string]string{"X-CSRF-Token": "CSRF-SYSADMIN"}}, 200},
		{"group (path): API key on a route without key access is 403", nil, request{method: "GET", path: "/test/groups/ALPHA", header: apiKey}, 403},
		{"group (query): member passes", func(w *world) *http.Client { return w.member }, request{method: "GET", path: "/test/documents?groupId=ALPHA"}, 200},
		{"group (query): missing group id is 400", func(w *world) *http.Client { return w.member }, request{method: "GET", path: "/test/documents"}, 400},
		{"group (query): other group is 403", func(w *world) *http.Client { return w.member }, request{method: "GET", path: "/test/documents?groupId=BETA"}, 403},
		{"group (query): the group's API key passes as MEMBER", nil, request{method: "GET", path: "/test/documents?groupId=ALPHA", header: apiKey}, 200},
		{"group (query): the key of another group is 403", nil, request{method: "GET", path: "/test/documents?groupId=BETA", header: apiKey}, 403},
		{"group (body): member passes", func(w *world) *http.Client { return w.member }, request{method: "POST", path: "/test/documents", body: `{"groupId":"ALPHA"}`, header: map[string]string{"X-CSRF-Token": "CSRF-MEMBER"}}, 200},
		{"group (body): missing field is 400", func(w *world) *http.Client { return w.member }, request{method: "POST", path: "/test/documents", body: `{"name":"x"}`, header: map[string]string{"X-CSRF-Token": "CSRF-MEMBER"}}, 400},
		{"group (body): non-JSON body is 400", func(w *world) *http.Client { return w.member }, request{method: "POST", path: "/test/documents", body: `groupId=ALPHA`, header: map[string]string{"X-CSRF-Token": "CSRF-MEMBER"}}, 400},
		{"group (body): API key passes", nil, request{method: "POST", path: "/test/documents", body: `{"groupId":"ALPHA"}`, header: apiKey}, 200},
		// soft-deleted groups grant nothing
		{"soft-deleted group: its admin is no longer a member (403)", func(w *world) *http.Client { return w.admin }, request{method: "GET", path: "/test/groups/GONE"}, 403},
		{"soft-deleted group: its API key is invalid (401)", nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": "GONEKEY"}}, 401},
		// unknown routes
		{"unknown path is a JSON 404", nil, request{method: "GET", path: "/api/nothing-here"}, 404},
		{"known path with another method is 405", nil, request{method: "DELETE", path: "/api/auth/me"}, 405},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			r.path = w.fill(r.path)
			r.body = w.fill(r.body)
			hdr := map[string]string{}
			var c *http.Client
			if tc.client != nil {
				c = tc.client(w)
			}
			for k, v := range r.header {
				v = w.fill(v)
				if strings.HasPrefix(v, "CSRF-") {
					v = w.csrf(map[string]*http.Client{"CSRF-MEMBER": w.member, "CSRF-ADMIN": w.admin, "CSRF-SYSADMIN": w.sysadmin}[v])
				}
				hdr[k] = v
			}
			r.header = hdr
			resp := w.do(c, r)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status >= 400 {
				var e errBody
				readJSON(t, resp, &e)
				if e.StatusCode != tc.status || e.Error != http.StatusText(tc.status) || e.Message == "" {
					t.Errorf("error body %+v", e)
				}
			}
		})
	}
}

func (w *world) fill(s string) string {
	return strings.NewReplacer("ALPHA", w.alpha, "BETA", w.beta, "GONEKEY", w.goneKey, "GONE", w.gone, "ADMINTOKEN", w.adminToken, "KEY", w.key).Replace(s)
}

func TestIdentityReachesHandlers(t *testing.T) {
	w := newWorld(t)
	var id docplatform.Identity
	readJSON(t, w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": w.key}}), &id)
	if id.UserID != "" || id.IsSystemAdmin || len(id.GroupRoles) != 1 || id.GroupRoles[w.alpha] != docplatform.RoleMember || id.APIKeyID == "" {
		t.Errorf("API-key identity %+v", id)
	}
	readJSON(t, w.do(w.admin, request{method: "GET", path: "/test/any"}), &id)
	if id.UserID != ada.Subject || id.GroupRoles[w.alpha] != docplatform.RoleAdmin || len(id.GroupRoles) != 1 {
		t.Errorf("token identity %+v (soft-deleted group must be absent)", id)
	}
	t.Run("a valid token whose user has no row yet: no groups, not admin, no 500", func(t *testing.T) {
		tok := w.idp.Mint(nil, w.idp.AccessClaims("never-logged-in"))
		resp := w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"Authorization": "Bearer " + tok}})
		var id docplatform.Identity
		readJSON(t, resp, &id)
		if resp.StatusCode != 200 || id.UserID != "never-logged-in" || id.IsSystemAdmin || len(id.GroupRoles) != 0 {
			t.Errorf("%s %+v", resp.Status, id)
		}
		resp = w.do(nil, request{method: "GET", path: "/api/auth/me", header: map[string]string{"Authorization": "Bearer " + tok}})
		if resp.StatusCode != 200 {
			t.Errorf("me: %s", resp.Status)
		}
	})
}

// Forged and misused tokens presented to the platform over HTTP.
func TestTokenForgeriesAreRefused(t *testing.T) {
	w := newWorld(t)
	claims := w.idp.AccessClaims(ada.Subject)
	with := func(change map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range claims {
			out[k] = v
		}
		for k, v := range change {
			out[k] = v
		}
		return out
	}
	b64 := func(v any) string {
		b, _ := json.Marshal(v)
		return strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(encodeStd(b)), "=")
	}
	idToken := w.cookie(w.admin, "/api/auth", "id_token")
	cases := []struct{ name, token string }{
		{"the user's own ID token as Bearer", idToken},
		{"alg none", b64(map[string]string{"alg": "none", "typ": "JWT"}) + "." + b64(claims) + "."},
		{"payload typ ID", w.idp.Mint(nil, with(map[string]any{"typ": "ID"}))},
		{"payload typ Refresh", w.idp.Mint(nil, with(map[string]any{"typ": "Refresh"}))},
		{"header typ other than JWT/at+jwt", w.idp.Mint(map[string]any{"typ": "id_token+jwt"}, claims)},
		{"nonce claim", w.idp.Mint(nil, with(map[string]any{"nonce": "n"}))},
		{"at_hash claim", w.idp.Mint(nil, with(map[string]any{"at_hash": "h"}))},
		{"expired beyond leeway", w.idp.Mint(nil, with(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}))},
		{"other audience and azp", w.idp.Mint(nil, with(map[string]any{"azp": "someone-else"}))},
		{"other issuer", w.idp.Mint(nil, with(map[string]any{"iss": "https://evil.example/realms/test"}))},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is 401 as Bearer and as cookie", func(t *testing.T) {
			if resp := w.do(nil, request{method: "GET", path: "/test/authenticated", header: map[string]string{"Authorization": "Bearer " + tc.token}}); resp.StatusCode != 401 {
				t.Errorf("Bearer: %s", resp.Status)
			}
			if resp := w.do(nil, request{method: "GET", path: "/test/authenticated", header: map[string]string{"Cookie": "access_token=" + tc.token}}); resp.StatusCode != 401 {
				t.Errorf("cookie: %s", resp.Status)
			}
		})
	}
}

func TestCSRFIsDecidedByTheAuthenticatingCredential(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		name   string
		client func() *http.Client
		header map[string]string
		status int
	}{
		{"cookie-authenticated POST without X-CSRF-Token is 403", func() *http.Client { return w.admin }, nil, 403},
		{"cookie-authenticated POST with X-CSRF-Token passes", func() *http.Client { return w.admin }, map[string]string{"X-CSRF-Token": w.csrf(w.admin)}, 200},
		{"cookie-authenticated POST with a wrong X-CSRF-Token is 403", func() *http.Client { return w.admin }, map[string]string{"X-CSRF-Token": "nope"}, 403},
		{"a stray Authorization header does not switch CSRF off for a cookie request", func() *http.Client { return w.admin }, map[string]string{"Authorization": "Bearer " + w.adminToken}, 403},
		{"Bearer-authenticated POST needs no CSRF token", nil, map[string]string{"Authorization": "Bearer " + w.adminToken}, 200},
		{"API-key POST needs no CSRF token", nil, map[string]string{"X-API-Key": w.key}, 200},
		{"an API key beside the cookie authenticates instead, so no CSRF", func() *http.Client { return w.admin }, map[string]string{"X-API-Key": w.key}, 200},
		{"GET is never checked", func() *http.Client { return w.admin }, nil, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c *http.Client
			if tc.client != nil {
				c = tc.client()
			}
			method := "POST"
			if strings.HasPrefix(tc.name, "GET") {
				method = "GET"
			}
			if resp := w.do(c, request{method: method, path: "/test/any", header: tc.header}); resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

func TestAPIKeyFailureLimit(t *testing.T) {
	bad := map[string]string{"X-API-Key": "gk_not-a-key"}
	t.Run("20 failures are answered 401, the 21st is 429 even with a valid key", func(t *testing.T) {
		w := newWorld(t)
		for i := 1; i <= 20; i++ {
			if resp := w.do(nil, request{method: "GET", path: "/test/any", header: bad}); resp.StatusCode != 401 {
				t.Fatalf("failure %d: %s", i, resp.Status)
			}
		}
		resp := w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": w.key}})
		var e errBody
		readJSON(t, resp, &e)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || e.Message != "Too many failed API key attempts" {
			t.Fatalf("21st attempt: %s Retry-After=%q %+v", resp.Status, resp.Header.Get("Retry-After"), e)
		}
		if resp := w.do(w.admin, request{method: "GET", path: "/test/any"}); resp.StatusCode != 200 {
			t.Errorf("token requests from the same IP are not locked out: %s", resp.Status)
		}
	})
	t.Run("a success resets the counter", func(t *testing.T) {
		w := newWorld(t)
		for i := 0; i < 19; i++ {
			w.do(nil, request{method: "GET", path: "/test/any", header: bad})
		}
		if resp := w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": w.key}}); resp.StatusCode != 200 {
			t.Fatalf("valid key after 19 failures: %s", resp.Status)
		}
		for i := 1; i <= 20; i++ {
			if resp := w.do(nil, request{method: "GET", path: "/test/any", header: bad}); resp.StatusCode != 401 {
				t.Fatalf("failure %d after reset: %s", i, resp.Status)
			}
		}
		if resp := w.do(nil, request{method: "GET", path: "/test/any", header: bad}); resp.StatusCode != 429 {
			t.Fatalf("21st failure after reset: %s", resp.Status)
		}
	})
	t.Run("the lockout is per client IP behind a trusted proxy", func(t *testing.T) {
		w := newWorld(t, func(s *setup) { s.trusted = "127.0.0.0/8" })
		for i := 0; i < 21; i++ {
			w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": "gk_x", "X-Forwarded-For": "198.51.100.66"}})
		}
		if resp := w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": w.key, "X-Forwarded-For": "198.51.100.7"}}); resp.StatusCode != 200 {
			t.Fatalf("another client locked out: %s", resp.Status)
		}
	})
	t.Run("a client rotating a spoofed X-Forwarded-For stays locked out", func(t *testing.T) {
		w := newWorld(t) // no trusted proxies: the header means nothing
		for i := 0; i < 20; i++ {
			w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": "gk_x", "X-Forwarded-For": fmt.Sprintf("198.51.100.%d", i)}})
		}
		resp := w.do(nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": "gk_x", "X-Forwarded-For": "203.0.113.250, garbage, [2001:db8::1]:80"}})
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("21st failure with a new spoofed address: %s Retry-After=%q", resp.Status, resp.Header.Get("Retry-After"))
		}
	})
}

func TestRateLimits(t *testing.T) {
	t.Run("global budget: 429 with Retry-After and RateLimit headers", func(t *testing.T) {
		h := newHarness(t, func(s *setup) { s.global = 3 })
		for i := 0; i < 3; i++ {
			resp := h.do(nil, request{method: "GET", path: "/test/public"})
			if resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Limit") != "3" || resp.Header.Get("X-RateLimit-Remaining") != fmt.Sprint(2-i) {
				t.Fatalf("request %d: %s %v", i+1, resp.Status, resp.Header)
			}
		}
		resp := h.do(nil, request{method: "GET", path: "/test/public"})
		var e errBody
		readJSON(t, resp, &e)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || e.StatusCode != 429 || e.Error != "Too Many Requests" {
			t.Fatalf("4th: %s %v %+v", resp.Status, resp.Header, e)
		}
		if resp := h.do(nil, request{method: "GET", path: "/nowhere"}); resp.StatusCode != 429 {
			t.Errorf("unknown routes share the global budget: %s", resp.Status)
		}
	})
	t.Run("health is never rate-limited", func(t *testing.T) {
		h := newHarness(t, func(s *setup) { s.global = 1 })
		for i := 0; i < 5; i++ {
			if resp := h.do(nil, request{method: "GET", path: "/api/health"}); resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Limit") != "" {
				t.Fatalf("health %d: %s", i, resp.Status)
			}
		}
	})
	t.Run("refresh has its own budget of THROTTLE_AUTH_REFRESH_LIMIT", func(t *testing.T) {
		h := newHarness(t, func(s *setup) { s.refresh = 2 })
		for i := 0; i < 2; i++ {
			if resp := h.do(nil, request{method: "POST", path: "/api/auth/refresh"}); resp.StatusCode != 401 {
				t.Fatalf("refresh %d: %s", i, resp.Status)
			}
		}
		if resp := h.do(nil, request{method: "POST", path: "/api/auth/refresh"}); resp.StatusCode != 429 {
			t.Fatalf("3rd refresh: %s", resp.Status)
		}
		if resp := h.do(nil, request{method: "GET", path: "/test/public"}); resp.StatusCode != 200 {
			t.Fatalf("global budget used by refresh: %s", resp.Status)
		}
	})
	t.Run("login, callback and logout have a budget each", func(t *testing.T) {
		h := newHarness(t, func(s *setup) { s.auth = 1 })
		for _, p := range []string{"/api/auth/login", "/api/auth/callback", "/api/auth/logout"} {
			if resp := h.do(nil, request{method: "GET", path: p}); resp.StatusCode != 302 {
				t.Fatalf("first %s: %s", p, resp.Status)
			}
		}
		for _, p := range []string{"/api/auth/login", "/api/auth/callback", "/api/auth/logout"} {
			if resp := h.do(nil, request{method: "GET", path: p}); resp.StatusCode != 429 {
				t.Fatalf("second %s: %s", p, resp.Status)
			}
		}
	})
	t.Run("spoofed X-Forwarded-For from an untrusted peer is ignored", func(t *testing.T) {
		h := newHarness(t, func(s *setup) { s.global = 2 })
		for i := 0; i < 2; i++ {
			h.do(nil, request{method: "GET", path: "/test/public", header: map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i)}})
		}
		if resp := h.do(nil, request{method: "GET", path: "/test/public", header: map[string]string{"X-Forwarded-For": "203.0.113.99"}}); resp.StatusCode != 429 {
			t.Fatalf("a fresh X-Forwarded-For bought a fresh budget: %s", resp.Status)
		}
	})
	t.Run("behind a trusted proxy each client has its own budget", func(t *testing.T) {
		h := newHarness(t, func(s *setup) { s.global = 1; s.trusted = "127.0.0.1/32" })
		for i := 0; i < 3; i++ {
			if resp := h.do(nil, request{method: "GET", path: "/test/public", header: map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i)}}); resp.StatusCode != 200 {
				t.Fatalf("client %d: %s", i, resp.Status)
			}
		}
		if resp := h.do(nil, request{method: "GET", path: "/test/public", header: map[string]string{"X-Forwarded-For": "203.0.113.0"}}); resp.StatusCode != 429 {
			t.Fatalf("client 0 again: %s", resp.Status)
		}
	})
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	h := newHarness(t, func(s *setup) { s.global = 8 })
	want := map[string]string{
		"Strict-Transport-Security": "max-age=31536000; includeSubDomains",
		"X-Frame-Options":           "DENY",
		"X-Content-Type-Options":    "nosniff",
		"Referrer-Policy":           "strict-origin-when-cross-origin",
	}
	for _, r := range []struct {
		name string
		req  request
	}{
		{"200", request{method: "GET", path: "/test/public"}},
		{"302", request{method: "GET", path: "/api/auth/logout"}},
		{"401", request{method: "GET", path: "/api/auth/me"}},
		{"404", request{method: "GET", path: "/missing"}},
		{"405", request{method: "DELETE", path: "/api/auth/me"}},
		{"403", request{method: "GET", path: "/test/authenticated", header: map[string]string{"X-API-Key": "k"}}},
		{"307 of the path cleaning", request{method: "GET", path: "/test//public"}},
		{"204 preflight", request{method: "OPTIONS", path: "/api/auth/me", header: map[string]string{"Origin": "http://x", "Access-Control-Request-Method": "GET"}}},
		{"429", request{method: "GET", path: "/test/public"}},
		{"health", request{method: "GET", path: "/api/health"}},
	} {
		t.Run(r.name, func(t *testing.T) {
			var resp *http.Response
			if r.name == "429" {
				for i := 0; i < 10; i++ {
					if resp = h.do(nil, r.req); resp.StatusCode == 429 {
						break
					}
				}
			} else {
				resp = h.do(nil, r.req)
			}
			if code := strconv.Itoa(resp.StatusCode); code != r.name[:3] && r.name != "health" {
				t.Fatalf("status %s", resp.Status)
			}
			for k, v := range want {
				if resp.Header.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, resp.Header.Get(k), v)
				}
			}
			csp := resp.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "http") {
				t.Errorf("CSP %q", csp)
			}
			if resp.Header.Get("X-Powered-By") != "" {
				t.Error("X-Powered-By sent")
			}
		})
	}
}

// CORS preflights spend no request budget: a frontend on another origin
// gets the full limit for its real requests.
func TestPreflightsAreNotThrottled(t *testing.T) {
	h := newHarness(t, func(s *setup) { s.global = 2 })
	for i := 0; i < 5; i++ {
		pre := h.do(nil, request{method: "OPTIONS", path: "/test/any", header: map[string]string{"Origin": h.front.URL, "Access-Control-Request-Method": "POST"}})
		if pre.StatusCode != 204 {
			t.Fatalf("preflight %d: %s", i, pre.Status)
		}
	}
	for i := 0; i < 2; i++ {
		if resp := h.do(nil, request{method: "GET", path: "/test/public"}); resp.StatusCode != 200 {
			t.Fatalf("request %d after preflights: %s", i, resp.Status)
		}
	}
	if resp := h.do(nil, request{method: "GET", path: "/test/public"}); resp.StatusCode != 429 {
		t.Fatalf("third request: %s", resp.Status)
	}
}

func TestCORS(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name, origin string
		allowed      bool
	}{
		{"the frontend's origin is allowed with credentials", h.front.URL, true},
		{"any other origin gets no CORS headers", "https://evil.example", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.do(nil, request{method: "GET", path: "/test/public", header: map[string]string{"Origin": tc.origin}})
			got := resp.Header.Get("Access-Control-Allow-Origin")
			if tc.allowed != (got == tc.origin) || tc.allowed != (resp.Header.Get("Access-Control-Allow-Credentials") == "true") {
				t.Errorf("ACAO %q ACAC %q", got, resp.Header.Get("Access-Control-Allow-Credentials"))
			}
			pre := h.do(nil, request{method: "OPTIONS", path: "/api/api-key", header: map[string]string{"Origin": tc.origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-csrf-token"}})
			if pre.StatusCode != 204 {
				t.Fatalf("preflight: %s", pre.Status)
			}
			if tc.allowed != strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "X-CSRF-Token") || tc.allowed != (pre.Header.Get("Access-Control-Allow-Origin") == tc.origin) {
				t.Errorf("preflight headers %v", pre.Header)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	h := newHarness(t)
	var body map[string]string
	resp := h.do(nil, request{method: "GET", path: "/api/health"})
	readJSON(t, resp, &body)
	if resp.StatusCode != 200 || body["status"] != "ok" || body["database"] != "up" || body["identityProvider"] != "up" {
		t.Fatalf("%s %v", resp.Status, body)
	}
	h.store.(sqlTestStore).Close()
	resp = h.do(nil, request{method: "GET", path: "/api/health"})
	readJSON(t, resp, &body)
	if resp.StatusCode != 503 || body["database"] != "down" {
		t.Fatalf("with the database down: %s %v", resp.Status, body)
	}
}

func TestBodyLimit(t *testing.T) {
	w := newWorld(t, func(s *setup) { s.maxBody = 64 })
	big := `{"groupId":"` + w.alpha + `","pad":"` + strings.Repeat("x", 100) + `"}`
	resp := w.do(nil, request{method: "POST", path: "/test/documents", body: big, header: map[string]string{"X-API-Key": w.key}})
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("%s", resp.Status)
	}
}

func TestRouteMaxBodyRaisesTheLimitForOneRoute(t *testing.T) {
	w := newWorld(t, func(s *setup) {
		s.maxBody = 64
		s.routeMaxBody = map[string]int64{"POST /test/documents": 4096}
	})
	big := `{"groupId":"` + w.alpha + `","pad":"` + strings.Repeat("x", 100) + `"}`
	if resp := w.do(nil, request{method: "POST", path: "/test/documents", body: big, header: map[string]string{"X-API-Key": w.key}}); resp.StatusCode != 200 {
		t.Fatalf("raised route: %s", resp.Status)
	}
	if resp := w.do(w.admin, request{method: "POST", path: "/api/api-key", body: big, header: map[string]string{"X-CSRF-Token": w.csrf(w.admin)}}); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("other route keeps the default limit: %s", resp.Status)
	}
}

// Hostile and broken requests get a 4xx in the JSON error shape (or the
// login's failure redirect), never a 500 and never a panic.
func TestHostileInputs(t *testing.T) {
	w := newWorld(t)
	memberCSRF := map[string]string{"X-CSRF-Token": w.csrf(w.member)}
	withCSRF := func(extra map[string]string) map[string]string {
		out := map[string]string{"X-CSRF-Token": w.csrf(w.admin)}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	huge := strings.Repeat("A", 200<<10)
	cases := []struct {
		name   string
		client *http.Client
		req    request
		status int
	}{
		{"a 200 KiB access_token cookie is 431", nil, request{method: "GET", path: "/api/auth/me", header: map[string]string{"Cookie": "access_token=" + huge}}, 431},
		{"a 200 KiB bearer token is 431", nil, request{method: "GET", path: "/api/auth/me", header: map[string]string{"Authorization": "Bearer " + huge}}, 431},
		{"a 60 KiB bearer token is 401", nil, request{method: "GET", path: "/api/auth/me", header: map[string]string{"Authorization": "Bearer " + huge[:60<<10]}}, 401},
		{"a 60 KiB access_token cookie is 401", nil, request{method: "GET", path: "/api/auth/me", header: map[string]string{"Cookie": "access_token=" + huge[:60<<10]}}, 401},
		{"a malformed Cookie header is 401", nil, request{method: "GET", path: "/api/auth/me", header: map[string]string{"Cookie": `access_token="unterminated; ;;=; csrf_token`}}, 401},
		{"a bearer token of three dots is 401", nil, request{method: "GET", path: "/api/auth/me", header: map[string]string{"Authorization": "Bearer ..."}}, 401},
		{"a bearer token with a JSON array header is 401", nil, request{method: "GET", path: "/api/auth/me", header: map[string]string{"Authorization": "Bearer W10.W10.AA"}}, 401},
		{"a 200 KiB API key is 431", nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": huge}}, 431},
		{"a 30 KiB API key is 401", nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": huge[:30<<10]}}, 401},
		{"an API key of invalid UTF-8 is 401", nil, request{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": "gk_\xff\xfe"}}, 401},
		{"invalid UTF-8 in a group id query is 403 (no such membership)", w.member, request{method: "GET", path: "/test/documents?groupId=%ff%fe"}, 403},
		{"a malformed query escape is 400 or 403, not 500", w.member, request{method: "GET", path: "/test/documents?groupId=%zz"}, 400},
		{"group id of the wrong JSON type is 400", w.member, request{method: "POST", path: "/test/documents", body: `{"groupId":123}`, header: memberCSRF}, 400},
		{"group id null is 400", w.member, request{method: "POST", path: "/test/documents", body: `{"groupId":null}`, header: memberCSRF}, 400},
		{"trailing data after the JSON body is 400", w.member, request{method: "POST", path: "/test/documents", body: `{"groupId":"ALPHA"} {"groupId":"BETA"}`, header: memberCSRF}, 400},
		{"a JSON array body is 400", w.member, request{method: "POST", path: "/test/documents", body: `["ALPHA"]`, header: memberCSRF}, 400},
		{"a body of JSON null is 400", w.member, request{method: "POST", path: "/test/documents", body: `null`, header: memberCSRF}, 400},
		{"deeply nested JSON is 400", w.member, request{method: "POST", path: "/test/documents", body: strings.Repeat("[", 100000), header: memberCSRF}, 400},
		{"a body over the limit is 413", w.member, request{method: "POST", path: "/test/documents", body: `{"groupId":"ALPHA","pad":"` + strings.Repeat("x", 2<<20) + `"}`, header: memberCSRF}, 413},
		{"a second spelling of the group field (case) is 400, not a way into another group", w.admin, request{method: "POST", path: "/api/api-key", body: `{"groupId":"ALPHA","GroupId":"BETA"}`, header: withCSRF(nil)}, 400},
		{"the group field twice is 400 on any body-scoped route", w.member, request{method: "POST", path: "/test/documents", body: `{"groupId":"ALPHA","groupId":"BETA"}`, header: memberCSRF}, 400},
		{"the group field in two spellings is 400 on any body-scoped route", w.member, request{method: "POST", path: "/test/documents", body: `{"groupId":"ALPHA","GROUPID":"BETA"}`, header: memberCSRF}, 400},
		{"a group field spelt in other case only is 400", w.admin, request{method: "POST", path: "/api/api-key", body: `{"GROUPID":"BETA"}`, header: withCSRF(nil)}, 400},
		{"API key body with an unknown field is 400", w.admin, request{method: "POST", path: "/api/api-key/regenerate", body: `{"groupId":"ALPHA","extra":1}`, header: withCSRF(nil)}, 400},
		{"API key body with trailing data is 400", w.admin, request{method: "POST", path: "/api/api-key/regenerate", body: `{"groupId":"ALPHA"}x`, header: withCSRF(nil)}, 400},
		{"duplicate X-CSRF-Token headers are 403", w.admin, request{method: "POST", path: "/api/api-key/regenerate", body: `{"groupId":"ALPHA"}`, header: map[string]string{"X-CSRF-Token": w.csrf(w.admin) + "\r\nX-CSRF-Token: " + w.csrf(w.admin)}}, 0},
		{"a refresh with a 30 KiB CSRF header is 403", w.admin, request{method: "POST", path: "/api/auth/refresh", header: map[string]string{"X-CSRF-Token": huge[:30<<10]}}, 0},
		{"a refresh with a 200 KiB CSRF header is 431", w.admin, request{method: "POST", path: "/api/auth/refresh", header: map[string]string{"X-CSRF-Token": huge}}, 431},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			r.path, r.body = w.fill(r.path), w.fill(r.body)
			req, err := http.NewRequest(r.method, w.url(r.path), strings.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			for k, v := range r.header {
				if strings.Contains(v, "\r\n") {
					for _, part := range strings.Split(v, "\r\nX-CSRF-Token: ") {
						req.Header.Add(k, part)
					}
					continue
				}
				req.Header[k] = []string{v}
			}
			c := tc.client
			if c == nil {
				c = noRedirect(nil)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			want := tc.status
			if want == 0 {
				want = http.StatusForbidden
			}
			if resp.StatusCode != want {
				t.Fatalf("status %d, want %d", resp.StatusCode, want)
			}
			var e errBody
			readJSON(t, resp, &e)
			if e.StatusCode != want || e.Error != http.StatusText(want) || e.Message == "" {
				t.Errorf("error body %+v", e)
			}
		})
	}
	t.Run("a 10 KiB state and invalid UTF-8 at the callback end at callback_failed", func(t *testing.T) {
		for _, q := range []string{"code=x&state=" + strings.Repeat("s", 10<<10), "code=%ff&state=%c0%af", "state=&code=", "code=a&code=b&state=x&state=y"} {
			resp := w.do(nil, request{method: "GET", path: "/api/auth/callback?" + q})
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != w.front.URL+"/?auth_error=callback_failed" {
				t.Errorf("%.40s: %s to %q", q, resp.Status, resp.Header.Get("Location"))
			}
		}
	})
}

// X-API-Key and cookies together, and an empty X-API-Key.
func TestAPIKeyHeaderCombinations(t *testing.T) {
	w := newWorld(t)
	cases := []struct {
		name     string
		client   *http.Client
		header   http.Header
		path     string
		status   int
		wantUser string // "" for an API-key identity
	}{
		{"on a token-or-key route the API key wins over a valid cookie", w.admin, http.Header{"X-Api-Key": {w.key}}, "/test/any", 200, ""},
		{"on a token-or-key route a wrong key beside a valid cookie is 401", w.admin, http.Header{"X-Api-Key": {"gk_wrong"}}, "/test/any", 401, ""},
		{"on an authenticated route a key beside a valid cookie is 403", w.admin, http.Header{"X-Api-Key": {w.key}}, "/test/authenticated", 403, ""},
		{"an empty X-API-Key header counts as none: the cookie authenticates", w.admin, http.Header{"X-Api-Key": {""}}, "/test/authenticated", 200, ada.Subject},
		{"an empty X-API-Key header alone is 401", nil, http.Header{"X-Api-Key": {""}}, "/test/any", 401, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", w.url(tc.path), nil)
			req.Header = tc.header
			c := tc.client
			if c == nil {
				c = noRedirect(nil)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status == 200 {
				var id docplatform.Identity
				readJSON(t, resp, &id)
				if id.UserID != tc.wantUser {
					t.Errorf("identity %+v, want user %q", id, tc.wantUser)
				}
			}
		})
	}
}

// Whatever cookies, headers and query a request carries, the chain and the
// auth endpoints answer below 500 and never panic.
func FuzzAuthRequests(f *testing.F) {
	w := newWorld(f, func(s *setup) { s.global, s.auth, s.refresh, s.failures = 1<<30, 1<<30, 1<<30, 1<<30 })
	f.Add("GET", "/api/auth/callback?code=x&state=y", "pkce_verifier=abc; access_token=x", "", "")
	f.Add("POST", "/api/auth/refresh", "refresh_token=r; csrf_token=c", "c", "")
	f.Add("GET", "/api/auth/me", "access_token="+w.adminToken, "", "")
	f.Add("GET", "/test/any", "", "", w.key)
	f.Add("POST", "/test/documents?groupId=x", "csrf_token=a", "a", "gk_x")
	f.Fuzz(func(t *testing.T, method, target, cookie, csrf, key string) {
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n\x00") {
			return
		}
		switch method {
		case "GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		default:
			return
		}
		req, err := http.NewRequest(method, "http://platform"+target, strings.NewReader(`{"groupId":"`+w.alpha+`"}`))
		if err != nil {
			return
		}
		req.RemoteAddr = "198.51.100.1:1234"
		req.Header["Cookie"] = []string{cookie}
		req.Header["X-Csrf-Token"] = []string{csrf}
		req.Header["X-Api-Key"] = []string{key}
		rec := httptest.NewRecorder()
		w.api.ServeHTTP(rec, req)
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable && rec.Code != http.StatusBadGateway {
			t.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body)
		}
	})
}

// A system admin skips the membership lookup, so a group id that no store
// could have made (NUL, invalid UTF-8) must be refused before it reaches the
// database: PostgreSQL fails such a query with a 500 otherwise.
func TestSystemAdminWithMalformedGroupIDGets400(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			w := newWorld(t, onStore(b.open))
			for _, tc := range []struct{ name, method, path, body string }{
				{"NUL in the query", "GET", "/api/api-key?groupId=%00", ""},
				{"invalid UTF-8 in the query", "GET", "/api/api-key?groupId=%ff", ""},
				{"NUL in the body", "POST", "/api/api-key", `{"groupId":"a\u0000"}`},
			} {
				t.Run(tc.name, func(t *testing.T) {
					resp := w.do(w.sysadmin, request{method: tc.method, path: tc.path, body: tc.body,
						header: map[string]string{"X-CSRF-Token": w.csrf(w.sysadmin)}})
					if resp.StatusCode != 400 {
						t.Fatalf("%s %s: %s, want 400", tc.method, tc.path, resp.Status)
					}
				})
			}
		})
	}
}
