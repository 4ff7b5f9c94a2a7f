package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

// attrs is what a test expects of one Set-Cookie.
type attrs struct {
	path     string
	httpOnly bool
	secure   bool
	sameSite http.SameSite
	maxAge   int // -1: cleared (Max-Age=0 on the wire)
}

func checkCookie(t *testing.T, c *http.Cookie, want attrs) {
	t.Helper()
	if c.Path != want.path || c.HttpOnly != want.httpOnly || c.Secure != want.secure || c.SameSite != want.sameSite || c.MaxAge != want.maxAge {
		t.Errorf("cookie %s: Path=%q HttpOnly=%v Secure=%v SameSite=%v MaxAge=%d; want %+v", c.Name, c.Path, c.HttpOnly, c.Secure, c.SameSite, c.MaxAge, want)
	}
}

// loginSteps runs the flow one redirect at a time, returning each response.
type loginSteps struct {
	login, authorize, callback *http.Response
}

func (h *harness) stepLogin(c *http.Client) loginSteps {
	h.t.Helper()
	var s loginSteps
	s.login = h.do(c, request{method: "GET", path: "/api/auth/login"})
	if s.login.StatusCode != http.StatusFound {
		h.t.Fatalf("login: %s", s.login.Status)
	}
	resp, err := c.Get(s.login.Header.Get("Location"))
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	s.authorize = resp
	resp, err = c.Get(s.authorize.Header.Get("Location"))
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	s.callback = resp
	return s
}

func TestLoginFlow(t *testing.T) {
	for _, secure := range []bool{false, true} {
		name := map[bool]string{false: "NODE_ENV development/test: cookies without Secure", true: "production: every cookie Secure"}[secure]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(s *setup) { s.secure = secure })
			h.idp.SetUser(ada)
			c := noRedirect(newJar(t))
			steps := h.stepLogin(c)

			// 1. login: 302 to the authorization endpoint with every parameter.
			loc, _ := url.Parse(steps.login.Header.Get("Location"))
			if got := loc.Scheme + "://" + loc.Host + loc.Path; got != h.idp.Issuer+"/protocol/openid-connect/auth" {
				t.Errorf("login redirects to %s", got)
			}
			q := loc.Query()
			for k, want := range map[string]string{"response_type": "code", "client_id": h.idp.ClientID, "redirect_uri": h.url("/api/auth/callback"), "scope": "openid profile email", "code_challenge_method": "S256"} {
				if q.Get(k) != want {
					t.Errorf("authorization %s = %q, want %q", k, q.Get(k), want)
				}
			}
			for _, k := range []string{"state", "nonce", "code_challenge"} {
				if len(q.Get(k)) < 43 {
					t.Errorf("authorization %s = %q: not 32 random bytes", k, q.Get(k))
				}
			}
			lc := setCookies(steps.login)["pkce_verifier"]
			if len(lc) != 2 {
				t.Fatalf("login sets %d pkce_verifier cookies, want 2 (callback path and login path)", len(lc))
			}
			for _, ck := range lc {
				if ck.Path != "/api/auth/callback" && ck.Path != "/api/auth/login" {
					t.Errorf("pkce_verifier path %q", ck.Path)
				}
				checkCookie(t, ck, attrs{path: ck.Path, httpOnly: true, secure: secure, sameSite: http.SameSiteLaxMode, maxAge: 120})
				for _, secret := range []string{q.Get("state"), q.Get("nonce")} {
					if strings.Contains(ck.Value, secret) {
						t.Error("login-state cookie holds state or nonce in clear")
					}
				}
			}
			// 2. callback: cookies set, login state cleared, 302 to FRONTEND_URL bare.
			cb := steps.callback
			if secure {
				// A jar does not send Secure cookies over plain http; replay
				// the callback with the login-state cookie by hand.
				h2 := newHarness(t, func(s *setup) { s.secure = true })
				h2.idp.SetUser(ada)
				login := h2.do(nil, request{method: "GET", path: "/api/auth/login"})
				a, err := noRedirect(nil).Get(login.Header.Get("Location"))
				if err != nil {
					t.Fatal(err)
				}
				a.Body.Close()
				cbURL, _ := url.Parse(a.Header.Get("Location"))
				cb = h2.do(nil, request{method: "GET", path: cbURL.RequestURI(), header: map[string]string{"Cookie": "pkce_verifier=" + setCookies(login)["pkce_verifier"][0].Value}})
				h = h2
			}
			if cb.StatusCode != http.StatusFound || cb.Header.Get("Location") != h.front.URL {
				t.Fatalf("callback: %s to %q, want 302 to %q", cb.Status, cb.Header.Get("Location"), h.front.URL)
			}
			set := setCookies(cb)
			checkCookie(t, set["access_token"][0], attrs{"/", true, secure, http.SameSiteLaxMode, 300})
			checkCookie(t, set["refresh_token"][0], attrs{"/api/auth/refresh", true, secure, http.SameSiteLaxMode, 30 * 24 * 3600})
			checkCookie(t, set["id_token"][0], attrs{"/api/auth", true, secure, http.SameSiteLaxMode, 30 * 24 * 3600})
			checkCookie(t, set["csrf_token"][0], attrs{"/", false, secure, http.SameSiteStrictMode, 30 * 24 * 3600})
			if v := set["csrf_token"][0].Value; !signedCSRF.MatchString(v) {
				t.Errorf("csrf_token %q is not a nonce and two MACs, hex", v)
			}
			if len(set["pkce_verifier"]) != 2 {
				t.Fatalf("callback clears %d pkce_verifier cookies, want both", len(set["pkce_verifier"]))
			}
			for _, ck := range set["pkce_verifier"] {
				checkCookie(t, ck, attrs{ck.Path, true, secure, http.SameSiteLaxMode, -1})
			}

			if secure {
				return // the jar would not send the Secure cookies to /me over http
			}
			// 3. me: profile from the user record.
			var me struct {
				Sub, Name, Email, PreferredUsername string
				Preferred                           string `json:"preferred_username"`
				Roles                               map[string]string
				ExpiresIn                           int64 `json:"expires_in"`
				IsSystemAdmin                       bool
				Groups                              []map[string]string
			}
			readJSON(t, h.do(c, request{method: "GET", path: "/api/auth/me"}), &me)
			if me.Sub != ada.Subject || me.Name != ada.Name || me.Email != ada.Email || me.Preferred != ada.PreferredUsername {
				t.Errorf("me %+v", me)
			}
			if me.ExpiresIn < 290 || me.ExpiresIn > 300 || me.IsSystemAdmin || len(me.Roles) != 0 || me.Groups == nil {
				t.Errorf("me %+v", me)
			}
		})
	}
}

func TestMeReadsProfileAndRolesFromTheDatabase(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testMe(t, newHarness(t, onStore(b.open))) })
	}
}

func testMe(t *testing.T, h *harness) {
	c := h.login(ada)
	// The stored profile changes; the access token stays the same.
	h.store.UpsertUser(t.Context(), docplatform.User{ID: ada.Subject, Name: "Ada King", Email: "ada@king.example"})
	g1 := h.store.createGroup("Alpha")
	g2 := h.store.createGroup("Beta")
	gone := h.store.createGroup("Gone")
	h.store.setMember(ada.Subject, g1, docplatform.RoleAdmin)
	h.store.setMember(ada.Subject, g2, docplatform.RoleMember)
	h.store.setMember(ada.Subject, gone, docplatform.RoleAdmin)
	h.store.softDelete(gone)
	var me struct {
		Name, Email string
		Roles       map[string]string
		Groups      []struct{ ID, Name, Role string }
	}
	readJSON(t, h.do(c, request{method: "GET", path: "/api/auth/me"}), &me)
	if me.Name != "Ada King" || me.Email != "ada@king.example" {
		t.Errorf("profile not from the user record: %+v", me)
	}
	if len(me.Roles) != 2 || me.Roles[g1] != "ADMIN" || me.Roles[g2] != "MEMBER" {
		t.Errorf("roles %v", me.Roles)
	}
	if len(me.Groups) != 2 || me.Groups[0].Name != "Alpha" || me.Groups[0].Role != "ADMIN" || me.Groups[1].Name != "Beta" {
		t.Errorf("groups %+v", me.Groups)
	}

	t.Run("a system admin sees every live group", func(t *testing.T) {
		h.store.setAdmin(ada.Subject, true)
		other := h.store.createGroup("Gamma")
		var me struct {
			IsSystemAdmin bool
			Groups        []struct{ ID, Name, Role string }
		}
		readJSON(t, h.do(c, request{method: "GET", path: "/api/auth/me"}), &me)
		if !me.IsSystemAdmin || len(me.Groups) != 3 || me.Groups[2].ID != other {
			t.Errorf("admin me %+v", me)
		}
	})
}

func TestCallbackFailures(t *testing.T) {
	cases := []struct {
		name string
		run  func(h *harness, c *http.Client) *http.Response
	}{
		{"state matching no pending login", func(h *harness, c *http.Client) *http.Response {
			h.do(c, request{method: "GET", path: "/api/auth/login"})
			return h.do(c, request{method: "GET", path: "/api/auth/callback?code=x&state=forged"})
		}},
		{"no login-state cookie at all", func(h *harness, c *http.Client) *http.Response {
			return h.do(noRedirect(newJar(h.t)), request{method: "GET", path: "/api/auth/callback?code=x&state=y"})
		}},
		{"tampered login-state cookie", func(h *harness, c *http.Client) *http.Response {
			resp := h.do(c, request{method: "GET", path: "/api/auth/login"})
			loc, _ := url.Parse(resp.Header.Get("Location"))
			ck := setCookies(resp)["pkce_verifier"][0]
			b := []byte(ck.Value)
			b[len(b)/2] ^= 1
			return h.do(noRedirect(nil), request{method: "GET", path: "/api/auth/callback?code=x&state=" + loc.Query().Get("state"), header: map[string]string{"Cookie": "pkce_verifier=" + string(b)}})
		}},
		{"ID token nonce differing from the login's", func(h *harness, c *http.Client) *http.Response {
			h.idp.NextIDTokenNonce("someone-elses-nonce")
			return h.stepLogin(c).callback
		}},
		{"login-state cookie expired (121 s later)", func(h *harness, c *http.Client) *http.Response {
			resp := h.do(c, request{method: "GET", path: "/api/auth/login"})
			auth, _ := c.Get(resp.Header.Get("Location"))
			auth.Body.Close()
			h.clock.Add(121 * time.Second)
			cb, _ := c.Get(auth.Header.Get("Location"))
			cb.Body.Close()
			return cb
		}},
		{"provider error redirect (access_denied)", func(h *harness, c *http.Client) *http.Response {
			resp := h.do(c, request{method: "GET", path: "/api/auth/login"})
			loc, _ := url.Parse(resp.Header.Get("Location"))
			return h.do(c, request{method: "GET", path: "/api/auth/callback?error=access_denied&error_description=User+cancelled&state=" + loc.Query().Get("state")})
		}},
		{"code the provider does not know", func(h *harness, c *http.Client) *http.Response {
			resp := h.do(c, request{method: "GET", path: "/api/auth/login"})
			loc, _ := url.Parse(resp.Header.Get("Location"))
			return h.do(c, request{method: "GET", path: "/api/auth/callback?code=unknown&state=" + loc.Query().Get("state")})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name+" ends at FRONTEND_URL/?auth_error=callback_failed", func(t *testing.T) {
			h := newHarness(t)
			c := noRedirect(newJar(t))
			resp := tc.run(h, c)
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != h.front.URL+"/?auth_error=callback_failed" {
				t.Fatalf("%s to %q", resp.Status, resp.Header.Get("Location"))
			}
			set := setCookies(resp)
			if len(set["pkce_verifier"]) != 2 || set["pkce_verifier"][0].MaxAge != -1 || set["pkce_verifier"][1].MaxAge != -1 {
				t.Errorf("login-state cookie not cleared: %v", set["pkce_verifier"])
			}
			if _, ok := set["access_token"]; ok {
				t.Error("failed callback set an access token")
			}
			if strings.Contains(h.logs.String(), "login callback failed") == false {
				t.Error("reason not logged")
			}
		})
	}
}

// Two tabs start a login before either returns; both must succeed, in
// either order (the original lost the first tab's login).
func TestTwoConcurrentLogins(t *testing.T) {
	for _, order := range []string{"second tab returns first", "first tab returns first"} {
		t.Run(order, func(t *testing.T) {
			h := newHarness(t)
			h.idp.SetUser(ada)
			c := noRedirect(newJar(t))
			authorize := func() *url.URL {
				resp := h.do(c, request{method: "GET", path: "/api/auth/login"})
				a, err := c.Get(resp.Header.Get("Location"))
				if err != nil {
					t.Fatal(err)
				}
				a.Body.Close()
				u, _ := url.Parse(a.Header.Get("Location"))
				return u
			}
			first, second := authorize(), authorize()
			tabs := []*url.URL{first, second}
			if order == "second tab returns first" {
				tabs = []*url.URL{second, first}
			}
			for i, cb := range tabs {
				resp, err := c.Get(cb.String())
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.Header.Get("Location") != h.front.URL {
					t.Fatalf("tab %d callback went to %q", i+1, resp.Header.Get("Location"))
				}
			}
		})
	}
}

func TestPendingLoginsAreBoundedToThree(t *testing.T) {
	h := newHarness(t)
	c := noRedirect(newJar(t))
	var callbacks []*url.URL
	for i := 0; i < 4; i++ {
		resp := h.do(c, request{method: "GET", path: "/api/auth/login"})
		a, _ := c.Get(resp.Header.Get("Location"))
		a.Body.Close()
		u, _ := url.Parse(a.Header.Get("Location"))
		callbacks = append(callbacks, u)
	}
	resp, _ := c.Get(callbacks[0].String())
	resp.Body.Close()
	if !strings.Contains(resp.Header.Get("Location"), "auth_error=callback_failed") {
		t.Errorf("the oldest of four logins still completes: %s", resp.Header.Get("Location"))
	}
	c2 := noRedirect(newJar(t))
	for i := 0; i < 4; i++ {
		resp := h.do(c2, request{method: "GET", path: "/api/auth/login"})
		a, _ := c2.Get(resp.Header.Get("Location"))
		a.Body.Close()
		u, _ := url.Parse(a.Header.Get("Location"))
		callbacks[i] = u
	}
	resp, _ = c2.Get(callbacks[3].String())
	resp.Body.Close()
	if resp.Header.Get("Location") != h.front.URL {
		t.Errorf("newest login failed: %s", resp.Header.Get("Location"))
	}
}

func TestRefresh(t *testing.T) {
	refresh := func(h *harness, c *http.Client, csrf string) *http.Response {
		hdr := map[string]string{}
		if csrf != "" {
			hdr["X-CSRF-Token"] = csrf
		}
		return h.do(c, request{method: "POST", path: "/api/auth/refresh", header: hdr})
	}
	t.Run("with X-CSRF-Token: new access and csrf cookies, expires_in in the body", func(t *testing.T) {
		h := newHarness(t)
		c := h.login(ada)
		oldAccess, oldCSRF := h.cookie(c, "/", "access_token"), h.cookie(c, "/", "csrf_token")
		resp := refresh(h, c, oldCSRF)
		if resp.StatusCode != 200 {
			t.Fatalf("refresh: %s", resp.Status)
		}
		set := setCookies(resp)
		checkCookie(t, set["access_token"][0], attrs{"/", true, false, http.SameSiteLaxMode, 300})
		checkCookie(t, set["csrf_token"][0], attrs{"/", false, false, http.SameSiteStrictMode, 30 * 24 * 3600})
		checkCookie(t, set["id_token"][0], attrs{"/api/auth", true, false, http.SameSiteLaxMode, 30 * 24 * 3600})
		if _, rotated := set["refresh_token"]; rotated {
			t.Error("refresh_token cookie re-set although the provider did not rotate it")
		}
		var body map[string]any
		readJSON(t, resp, &body)
		if body["expires_in"] != float64(300) || len(body) != 1 {
			t.Errorf("body %v", body)
		}
		if h.cookie(c, "/", "access_token") == oldAccess || h.cookie(c, "/", "csrf_token") == oldCSRF {
			t.Error("cookies not renewed")
		}
	})
	t.Run("rotated refresh token replaces the cookie", func(t *testing.T) {
		h := newHarness(t)
		h.idp.RotateRefresh = true
		c := h.login(ada)
		old := h.cookie(c, "/api/auth/refresh", "refresh_token")
		resp := refresh(h, c, h.cookie(c, "/", "csrf_token"))
		set := setCookies(resp)
		if resp.StatusCode != 200 || len(set["refresh_token"]) != 1 || set["refresh_token"][0].Value == old {
			t.Fatalf("%s, refresh cookie %v", resp.Status, set["refresh_token"])
		}
		checkCookie(t, set["refresh_token"][0], attrs{"/api/auth/refresh", true, false, http.SameSiteLaxMode, 30 * 24 * 3600})
	})
	t.Run("without X-CSRF-Token: 403 and nothing renewed", func(t *testing.T) {
		h := newHarness(t)
		c := h.login(ada)
		resp := refresh(h, c, "")
		var e errBody
		readJSON(t, resp, &e)
		if resp.StatusCode != 403 || e.Error != "Forbidden" || len(resp.Cookies()) != 0 {
			t.Fatalf("%s %+v cookies %v", resp.Status, e, resp.Cookies())
		}
	})
	t.Run("with a wrong X-CSRF-Token: 403", func(t *testing.T) {
		h := newHarness(t)
		c := h.login(ada)
		if resp := refresh(h, c, strings.Repeat("0", 64)); resp.StatusCode != 403 {
			t.Fatalf("%s", resp.Status)
		}
	})
	t.Run("after the access cookie expired: still needs and accepts X-CSRF-Token", func(t *testing.T) {
		h := newHarness(t)
		c := h.login(ada)
		u, _ := url.Parse(h.url("/"))
		c.Jar.SetCookies(u, []*http.Cookie{{Name: "access_token", Path: "/", MaxAge: -1}})
		if h.cookie(c, "/", "access_token") != "" {
			t.Fatal("access cookie still there")
		}
		if resp := refresh(h, c, ""); resp.StatusCode != 403 {
			t.Fatalf("without CSRF after expiry: %s", resp.Status)
		}
		if resp := refresh(h, c, h.cookie(c, "/", "csrf_token")); resp.StatusCode != 200 {
			t.Fatalf("with CSRF after expiry: %s", resp.Status)
		}
		if resp := h.do(c, request{method: "GET", path: "/api/auth/me"}); resp.StatusCode != 200 {
			t.Fatalf("me after refresh: %s", resp.Status)
		}
	})
	t.Run("without refresh cookie: 401", func(t *testing.T) {
		h := newHarness(t)
		resp := refresh(h, nil, "x")
		var e errBody
		readJSON(t, resp, &e)
		if resp.StatusCode != 401 || e.StatusCode != 401 || e.Error != "Unauthorized" {
			t.Fatalf("%s %+v", resp.Status, e)
		}
	})
	t.Run("provider refuses: 401 and the auth cookies are cleared", func(t *testing.T) {
		h := newHarness(t)
		c := h.login(ada)
		if err := h.oidc.RevokeToken(t.Context(), h.cookie(c, "/api/auth/refresh", "refresh_token"), "refresh_token"); err != nil {
			t.Fatal(err)
		}
		resp := refresh(h, c, h.cookie(c, "/", "csrf_token"))
		if resp.StatusCode != 401 {
			t.Fatalf("%s", resp.Status)
		}
		set := setCookies(resp)
		for name, path := range map[string]string{"access_token": "/", "refresh_token": "/api/auth/refresh", "id_token": "/api/auth", "csrf_token": "/"} {
			if len(set[name]) != 1 || set[name][0].MaxAge != -1 || set[name][0].Path != path {
				t.Errorf("%s not cleared at %s: %v", name, path, set[name])
			}
		}
	})
}

func TestLogout(t *testing.T) {
	check := func(t *testing.T, h *harness, resp *http.Response, wantHint string) {
		t.Helper()
		if resp.StatusCode != 302 {
			t.Fatalf("logout: %s", resp.Status)
		}
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if got := loc.Scheme + "://" + loc.Host + loc.Path; got != h.idp.Issuer+"/protocol/openid-connect/logout" {
			t.Errorf("logout redirects to %s", got)
		}
		q := loc.Query()
		if q.Get("client_id") != h.idp.ClientID || q.Get("post_logout_redirect_uri") != h.front.URL || q.Get("id_token_hint") != wantHint || q.Has("id_token_hint") != (wantHint != "") {
			t.Errorf("logout query %v", q)
		}
		set := setCookies(resp)
		for name, want := range map[string]attrs{
			"access_token":  {"/", true, false, http.SameSiteLaxMode, -1},
			"refresh_token": {"/api/auth/refresh", true, false, http.SameSiteLaxMode, -1},
			"id_token":      {"/api/auth", true, false, http.SameSiteLaxMode, -1},
			"csrf_token":    {"/", false, false, http.SameSiteStrictMode, -1},
		} {
			if len(set[name]) != 1 {
				t.Errorf("%s not cleared", name)
				continue
			}
			checkCookie(t, set[name][0], want)
		}
	}
	t.Run("with id_token: hint sent, access token revoked, all cookies cleared", func(t *testing.T) {
		h := newHarness(t)
		c := h.login(ada)
		access, idt := h.cookie(c, "/", "access_token"), h.cookie(c, "/api/auth/logout", "id_token")
		resp := h.do(noRedirect(c.Jar), request{method: "GET", path: "/api/auth/logout"})
		check(t, h, resp, idt)
		select {
		case got := <-h.idp.Revoked:
			if got != access {
				t.Error("revoked something else than the access token")
			}
		default:
			t.Error("nothing revoked at the provider")
		}
		if h.cookie(c, "/", "access_token") != "" {
			t.Error("jar still holds the access token")
		}
		if resp := h.do(c, request{method: "GET", path: "/api/auth/me"}); resp.StatusCode != 401 {
			t.Errorf("me after logout: %s", resp.Status)
		}
	})
	t.Run("without id_token: no hint", func(t *testing.T) {
		h := newHarness(t)
		check(t, h, h.do(nil, request{method: "GET", path: "/api/auth/logout"}), "")
	})
	t.Run("cross-site request only goes back to the frontend", func(t *testing.T) {
		h := newHarness(t)
		c := h.login(ada)
		resp := h.do(noRedirect(c.Jar), request{method: "GET", path: "/api/auth/logout", header: map[string]string{"Sec-Fetch-Site": "cross-site"}})
		if resp.StatusCode != 302 || resp.Header.Get("Location") != h.front.URL || len(resp.Cookies()) != 0 {
			t.Fatalf("%s to %s, cookies %v", resp.Status, resp.Header.Get("Location"), resp.Cookies())
		}
	})
}

// ssotest users for the concurrency test below.
var users = func() []ssotest.User {
	var u []ssotest.User
	for _, n := range []string{"u1", "u2", "u3", "u4"} {
		u = append(u, ssotest.User{Subject: n, Email: n + "@example.org", Name: n})
	}
	return u
}()

func TestManyUsersLogInAtOnce(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	for range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Jar: newJar(t)}
			resp, err := c.Get(h.url("/api/auth/login"))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.Request.URL.String() != h.front.URL {
				t.Errorf("login ended at %s", resp.Request.URL)
			}
		}()
	}
	wg.Wait()
}

// Providers that send no email (some identity providers behind Keycloak
// do not) still let the user in; the original refused them.
func TestUserWithoutEmailCanSignIn(t *testing.T) {
	h := newHarness(t)
	c := h.login(ssotest.User{Subject: "no-mail", Name: "Nomail", PreferredUsername: "nomail"})
	var me struct{ Sub, Email, Name string }
	readJSON(t, h.do(c, request{method: "GET", path: "/api/auth/me"}), &me)
	if me.Sub != "no-mail" || me.Email != "" || me.Name != "Nomail" {
		t.Errorf("me %+v", me)
	}
	h.login(ssotest.User{Subject: "no-mail-2"}) // a second user without email: no conflict
}

// Two tabs refresh at the same moment with the same (rotating) refresh
// token: both get the new tokens instead of one being logged out.
func TestConcurrentRefreshesShareOneProviderCall(t *testing.T) {
	h := newHarness(t)
	h.idp.RotateRefresh = true
	c := h.login(ada)
	csrf := h.cookie(c, "/", "csrf_token")
	var wg sync.WaitGroup
	results := make(chan *http.Response, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", h.url("/api/auth/refresh"), nil)
			req.Header.Set("X-CSRF-Token", csrf)
			for _, ck := range c.Jar.Cookies(mustURL(h.url("/api/auth/refresh"))) {
				req.AddCookie(ck)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			results <- resp
		}()
	}
	wg.Wait()
	close(results)
	var access string
	for resp := range results {
		if resp.StatusCode != 200 {
			t.Fatalf("a concurrent refresh failed: %s", resp.Status)
		}
		at := setCookies(resp)["access_token"][0].Value
		if access != "" && at != access {
			t.Error("concurrent refreshes got different tokens: the provider was asked more than once")
		}
		access = at
	}
	t.Run("within 2 s the used token still gets the same answer; later the provider refuses it", func(t *testing.T) {
		refresh := func() *http.Response {
			req, _ := http.NewRequest("POST", h.url("/api/auth/refresh"), nil)
			req.Header.Set("X-CSRF-Token", csrf)
			for _, ck := range c.Jar.Cookies(mustURL(h.url("/api/auth/refresh"))) {
				req.AddCookie(ck)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		if resp := refresh(); resp.StatusCode != 200 || setCookies(resp)["access_token"][0].Value != access {
			t.Fatalf("within the grace: %s", resp.Status)
		}
		h.clock.Add(3 * time.Second)
		if resp := refresh(); resp.StatusCode != 401 {
			t.Fatalf("after the grace: %s", resp.Status)
		}
	})
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// A spec-compliant provider's redirect back: Keycloak adds session_state
// and (RFC 9207) iss. The login completes when iss is the provider's; a
// foreign iss (a mix-up attack) fails the login.
func TestCallbackWithProviderResponseParameters(t *testing.T) {
	cases := []struct {
		name string
		opts ssotest.Options
		ok   bool
	}{
		{"iss of the provider and session_state complete the login", ssotest.Options{ResponseIss: true}, true},
		{"iss of another issuer fails the login", ssotest.Options{WrongIss: true}, false},
		{"iss advertised in discovery and sent completes the login", ssotest.Options{AdvertiseIss: true, ResponseIss: true}, true},
		{"iss advertised in discovery but missing fails the login", ssotest.Options{AdvertiseIss: true}, false},
		{"no iss from a provider that does not advertise it completes the login", ssotest.Options{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(s *setup) { s.idp = tc.opts })
			h.idp.SetUser(ada)
			steps := h.stepLogin(noRedirect(newJar(t)))
			want := h.front.URL
			if !tc.ok {
				want += "/?auth_error=callback_failed"
			}
			if got := steps.callback.Header.Get("Location"); got != want {
				t.Fatalf("callback went to %q, want %q", got, want)
			}
			if _, ok := setCookies(steps.callback)["access_token"]; ok != tc.ok {
				t.Errorf("access token set: %v", ok)
			}
		})
	}
}

// A callback URL replayed after the login completed (browser back button,
// an attacker with a leaked URL) fails: its login state is gone and the
// provider refuses the code a second time.
func TestCallbackReplayFails(t *testing.T) {
	h := newHarness(t)
	h.idp.SetUser(ada)
	c := noRedirect(newJar(t))
	login := h.do(c, request{method: "GET", path: "/api/auth/login"})
	a, err := c.Get(login.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	a.Body.Close()
	cb := a.Header.Get("Location")
	first, _ := c.Get(cb)
	first.Body.Close()
	if first.Header.Get("Location") != h.front.URL {
		t.Fatalf("first callback went to %q", first.Header.Get("Location"))
	}
	// Start another login so a login-state cookie exists again.
	h.do(c, request{method: "GET", path: "/api/auth/login"})
	second, _ := c.Get(cb)
	second.Body.Close()
	if second.Header.Get("Location") != h.front.URL+"/?auth_error=callback_failed" {
		t.Fatalf("replayed callback went to %q", second.Header.Get("Location"))
	}
	code := mustURL(cb).Query().Get("code")
	if strings.Contains(h.logs.String(), code) {
		t.Error("the authorization code reached the log")
	}
}

// A provider that issues no refresh token (no offline access) leaves no
// empty refresh_token cookie behind.
func TestCallbackWithoutRefreshToken(t *testing.T) {
	h := newHarness(t)
	h.idp.NoRefreshToken = true
	h.idp.SetUser(ada)
	steps := h.stepLogin(noRedirect(newJar(t)))
	set := setCookies(steps.callback)
	if _, ok := set["access_token"]; !ok || steps.callback.Header.Get("Location") != h.front.URL {
		t.Fatalf("login failed: %q", steps.callback.Header.Get("Location"))
	}
	if rc, ok := set["refresh_token"]; ok {
		t.Errorf("refresh_token cookie set without a refresh token: %+v", rc[0])
	}
}

// A provider without end_session_endpoint: logout clears the cookies and
// sends the browser to FRONTEND_URL.
func TestLogoutWithoutEndSessionEndpoint(t *testing.T) {
	h := newHarness(t, func(s *setup) { s.idp = ssotest.Options{NoEndSession: true} })
	c := h.login(ada)
	resp := h.do(noRedirect(c.Jar), request{method: "GET", path: "/api/auth/logout"})
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != h.front.URL {
		t.Fatalf("%s to %q, want 302 to %q", resp.Status, resp.Header.Get("Location"), h.front.URL)
	}
	set := setCookies(resp)
	for _, name := range []string{"access_token", "refresh_token", "id_token", "csrf_token"} {
		if len(set[name]) != 1 || set[name][0].MaxAge != -1 {
			t.Errorf("%s not cleared", name)
		}
	}
}

// A refresh answered without an ID token keeps the id_token cookie (it is
// not re-set, so the browser keeps it for logout's hint).
func TestRefreshWithoutIDTokenKeepsTheCookie(t *testing.T) {
	h := newHarness(t)
	h.idp.NoIDTokenOnRefresh = true
	c := h.login(ada)
	idt := h.cookie(c, "/api/auth", "id_token")
	resp := h.do(c, request{method: "POST", path: "/api/auth/refresh", header: map[string]string{"X-CSRF-Token": h.cookie(c, "/", "csrf_token")}})
	if resp.StatusCode != 200 {
		t.Fatalf("refresh: %s", resp.Status)
	}
	if set := setCookies(resp); len(set["id_token"]) != 0 || len(set["access_token"]) != 1 || len(set["csrf_token"]) != 1 {
		t.Fatalf("cookies set: %v", set)
	}
	if idt == "" || h.cookie(c, "/api/auth", "id_token") != idt {
		t.Fatal("id_token cookie lost")
	}
}

// Nothing secret reaches the log: not the tokens, the code, the login
// state, the CSRF token, the API key, the client secret or COOKIE_SECRET;
// and each request is one info line.
func TestSecretsNeverReachTheLog(t *testing.T) {
	w := newWorld(t)
	h := w.harness
	h.idp.SetUser(ada)
	c := noRedirect(newJar(t))
	login := h.do(c, request{method: "GET", path: "/api/auth/login"})
	a, err := c.Get(login.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	a.Body.Close()
	cb := mustURL(a.Header.Get("Location"))
	resp, _ := c.Get(cb.String())
	resp.Body.Close()
	secrets := map[string]string{
		"code": cb.Query().Get("code"), "state": cb.Query().Get("state"),
		"login-state cookie": setCookies(login)["pkce_verifier"][0].Value,
		"access token":       h.cookie(c, "/", "access_token"), "refresh token": h.cookie(c, "/api/auth/refresh", "refresh_token"),
		"id token": h.cookie(c, "/api/auth", "id_token"), "csrf token": h.cookie(c, "/", "csrf_token"),
		"API key": w.key, "client secret": h.idp.ClientSecret, "COOKIE_SECRET": cookieSecret,
	}
	forged := h.idp.Mint(map[string]any{"kid": "forged"}, h.idp.AccessClaims(ada.Subject))
	secrets["forged bearer"] = forged
	reqs := []request{
		{method: "GET", path: "/api/auth/me"},
		{method: "POST", path: "/api/auth/refresh", header: map[string]string{"X-CSRF-Token": secrets["csrf token"]}},
		{method: "GET", path: "/api/auth/me", header: map[string]string{"Authorization": "Bearer " + forged}},
		{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": w.key}},
		{method: "GET", path: "/test/any", header: map[string]string{"X-API-Key": w.key + "x"}},
		{method: "GET", path: "/api/auth/callback?code=" + secrets["code"] + "&state=" + secrets["state"] + "&access_token=" + secrets["access token"]},
		{method: "GET", path: "/api/auth/logout"},
	}
	before := strings.Count(h.logs.String(), "msg=request ")
	for _, r := range reqs {
		cl := c
		if r.header["Authorization"] != "" || r.header["X-API-Key"] != "" {
			cl = nil
		}
		h.do(cl, r)
	}
	logs := h.logs.String()
	if got := strings.Count(logs, "msg=request ") - before; got != len(reqs) {
		t.Errorf("%d request lines for %d requests", got, len(reqs))
	}
	refusal := false
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, "msg=request ") && !strings.Contains(line, "level=INFO") {
			t.Errorf("request line not at info: %s", line)
		}
		if strings.Contains(line, "level=INFO") && !strings.Contains(line, "msg=request ") {
			t.Errorf("info line other than the request line: %s", line)
		}
		refusal = refusal || strings.Contains(line, "msg=request ") && strings.Contains(line, "access token refused")
	}
	if !refusal {
		t.Error("the forged token's refusal is not on its request line")
	}
	for name, v := range secrets {
		if v == "" {
			t.Fatalf("%s not captured", name)
		}
		if strings.Contains(logs, v) {
			t.Errorf("the %s reached the log", name)
		}
	}
}

// A provider issuing access tokens larger than a browser keeps in a cookie
// (Keycloak with many roles): the login still completes, and the log says
// why the browser will not send the token back.
func TestOversizedAccessTokenIsReported(t *testing.T) {
	h := newHarness(t)
	roles := make([]string, 300)
	for i := range roles {
		roles[i] = "role-with-a-long-name-" + strings.Repeat("x", 10)
	}
	h.idp.ExtraAccessClaims = map[string]any{"realm_access": map[string]any{"roles": roles}}
	h.idp.SetUser(ada)
	steps := h.stepLogin(noRedirect(newJar(t)))
	if steps.callback.Header.Get("Location") != h.front.URL {
		t.Fatalf("login ended at %q", steps.callback.Header.Get("Location"))
	}
	if !strings.Contains(h.logs.String(), "access token too large for a browser cookie") {
		t.Fatal("oversized token not reported")
	}
}

// Keycloak as installed, without an audience mapper: access tokens name
// only "account" in aud and the client in azp; the redirect back carries
// iss and session_state. Login, /me, refresh and logout all work.
func TestKeycloakDefaultTokensEndToEnd(t *testing.T) {
	h := newHarness(t, func(s *setup) { s.idp = ssotest.Options{ResponseIss: true, AdvertiseIss: true} })
	h.idp.ExtraAccessClaims = map[string]any{"aud": "account", "session_state": "abc", "scope": "openid profile email",
		"realm_access": map[string]any{"roles": []string{"offline_access", "uma_authorization"}}}
	h.idp.RotateRefresh = true
	c := h.login(ada)
	if resp := h.do(c, request{method: "GET", path: "/api/auth/me"}); resp.StatusCode != 200 {
		t.Fatalf("me: %s", resp.Status)
	}
	resp := h.do(c, request{method: "POST", path: "/api/auth/refresh", header: map[string]string{"X-CSRF-Token": h.cookie(c, "/", "csrf_token")}})
	if resp.StatusCode != 200 {
		t.Fatalf("refresh: %s", resp.Status)
	}
	if resp := h.do(c, request{method: "GET", path: "/api/auth/me"}); resp.StatusCode != 200 {
		t.Fatalf("me after refresh: %s", resp.Status)
	}
	out := h.do(noRedirect(c.Jar), request{method: "GET", path: "/api/auth/logout"})
	if loc := mustURL(out.Header.Get("Location")); out.StatusCode != 302 || loc.Query().Get("id_token_hint") == "" {
		t.Fatalf("logout: %s %s", out.Status, out.Header.Get("Location"))
	}
}
