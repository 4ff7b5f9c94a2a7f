package dev_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/govkit/govkit/docplatform/dev"
	"github.com/govkit/govkit/internal/testsvc"
)

// These tests drive the real stack of `govkit dev` — the development OpenID
// provider and the platform on a real database — with a Go client that has
// a cookie jar and follows the real redirects through the provider's login
// form, as a browser does.

type stack struct {
	*dev.Stack
	t    *testing.T
	base string // platform URL (also FRONTEND_URL in dev)
	out  string
}

func start(t *testing.T, databaseURL string) *stack {
	t.Helper()
	var out bytes.Buffer
	// The auth budget (10 per minute) is raised through its variable: these
	// tests sign in more often than that.
	getenv := func(k string) string {
		if k == "THROTTLE_AUTH_LIMIT" {
			return "100000"
		}
		return ""
	}
	s, err := dev.Start(context.Background(), dev.Options{DataDir: t.TempDir(), DatabaseURL: databaseURL, Getenv: getenv}, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	return &stack{Stack: s, t: t, base: s.Platform.URL, out: out.String()}
}

var backends = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"sqlite", func(*testing.T) string { return "" }},
	{"postgres", func(t *testing.T) string { return testsvc.RequirePostgres(t) }},
}

func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

var requestIDField = regexp.MustCompile(`name="authRequestID" value="([^"]+)"`)

// openLogin follows /api/auth/login to the provider's login form and
// returns the form's auth request id.
func (s *stack) openLogin(t *testing.T, c *http.Client) string {
	t.Helper()
	resp, err := c.Get(s.base + "/api/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := requestIDField.FindSubmatch(body)
	if resp.StatusCode != 200 || m == nil || !strings.HasPrefix(resp.Request.URL.String(), s.Provider.Issuer()) {
		t.Fatalf("login form not reached: %s at %s", resp.Status, resp.Request.URL)
	}
	return string(m[1])
}

// submit posts the login form and follows the redirects to their end.
func (s *stack) submit(t *testing.T, c *http.Client, requestID string, form url.Values) *http.Response {
	t.Helper()
	form.Set("authRequestID", requestID)
	resp, err := c.PostForm(s.Provider.Issuer()+"/login", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func (s *stack) login(t *testing.T, c *http.Client, user, password string) {
	t.Helper()
	resp := s.submit(t, c, s.openLogin(t, c), url.Values{"username": {user}, "password": {password}, "login": {"1"}})
	if got := resp.Request.URL.String(); got != s.base {
		t.Fatalf("login as %s ended at %s, want FRONTEND_URL %s", user, got, s.base)
	}
}

func (s *stack) cookie(c *http.Client, path, name string) string {
	u, _ := url.Parse(s.base + path)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

func (s *stack) do(t *testing.T, c *http.Client, method, path string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, s.base+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type profile struct {
	Sub               string            `json:"sub"`
	Name              string            `json:"name"`
	Email             string            `json:"email"`
	PreferredUsername string            `json:"preferred_username"`
	Roles             map[string]string `json:"roles"`
	ExpiresIn         int               `json:"expires_in"`
	IsSystemAdmin     bool              `json:"isSystemAdmin"`
	Groups            []any             `json:"groups"`
}

func (s *stack) me(t *testing.T, c *http.Client) (int, profile) {
	t.Helper()
	resp := s.do(t, c, "GET", "/api/auth/me", nil)
	var p profile
	if resp.StatusCode == 200 {
		json.NewDecoder(resp.Body).Decode(&p)
	}
	return resp.StatusCode, p
}

func TestEndToEnd(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { endToEnd(t, start(t, b.url(t))) })
	}
}

func endToEnd(t *testing.T, s *stack) {
	t.Run("dev prints the URLs and the demo logins", func(t *testing.T) {
		for _, want := range []string{s.base, s.Provider.Issuer(), "admin", "Admin-123", "alice", "Alice-123", "system admin"} {
			if !strings.Contains(s.out, want) {
				t.Errorf("output lacks %q:\n%s", want, s.out)
			}
		}
	})

	t.Run("sign in through the login form: cookies, profile from the store, demo admin is system admin", func(t *testing.T) {
		c := browser(t)
		s.login(t, c, "admin", "Admin-123")
		for _, name := range []string{"access_token", "csrf_token"} {
			if s.cookie(c, "/", name) == "" {
				t.Errorf("%s cookie missing", name)
			}
		}
		if s.cookie(c, "/api/auth/refresh", "refresh_token") == "" || s.cookie(c, "/api/auth/logout", "id_token") == "" {
			t.Error("refresh_token or id_token cookie missing")
		}
		if s.cookie(c, "/api/auth/callback", "pkce_verifier") != "" {
			t.Error("login-state cookie left behind")
		}
		code, p := s.me(t, c)
		if code != 200 || p.Sub == "" || p.Name != "Ada Admin" || p.Email != "admin@govkit.test" || p.PreferredUsername != "admin" || !p.IsSystemAdmin {
			t.Fatalf("me %d %+v", code, p)
		}
		if p.ExpiresIn <= 0 || p.ExpiresIn > 300 || p.Roles == nil || p.Groups == nil {
			t.Errorf("me %+v", p)
		}
		c2 := browser(t)
		s.login(t, c2, "alice", "Alice-123")
		if code, p := s.me(t, c2); code != 200 || p.IsSystemAdmin || p.Name != "Alice Member" {
			t.Errorf("alice: %d %+v", code, p)
		}
	})

	t.Run("every cookie attribute as the provider's real tokens set them", func(t *testing.T) {
		c := browser(t)
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		id := s.openLogin(t, browserWithJar(c.Jar))
		resp := s.submit(t, c, id, url.Values{"username": {"alice"}, "password": {"Alice-123"}, "login": {"1"}})
		// Follow by hand until the platform's callback answers.
		for resp.Request.URL.Path != "/api/auth/callback" {
			next, err := c.Get(resolve(resp))
			if err != nil {
				t.Fatal(err)
			}
			next.Body.Close()
			resp = next
		}
		if resp.StatusCode != 302 || resp.Header.Get("Location") != s.base {
			t.Fatalf("callback: %s to %q", resp.Status, resp.Header.Get("Location"))
		}
		want := map[string]string{
			"access_token":  "Path=/; Max-Age=LIFETIME; HttpOnly; SameSite=Lax",
			"refresh_token": "Path=/api/auth/refresh; Max-Age=2592000; HttpOnly; SameSite=Lax",
			"id_token":      "Path=/api/auth; Max-Age=2592000; HttpOnly; SameSite=Lax",
			"csrf_token":    "Path=/; Max-Age=2592000; SameSite=Strict",
		}
		seen := map[string]bool{}
		for _, line := range resp.Header.Values("Set-Cookie") {
			name, rest, _ := strings.Cut(line, "=")
			_, attrs, _ := strings.Cut(rest, "; ")
			if w, ok := want[name]; ok {
				seen[name] = true
				// The provider's expires_in counts down from 300 s.
				attrs = regexp.MustCompile(`Max-Age=(29\d|300);`).ReplaceAllString(attrs, "Max-Age=LIFETIME;")
				if attrs != w {
					t.Errorf("%s attributes %q, want %q (no Secure in development)", name, attrs, w)
				}
			}
		}
		if len(seen) != len(want) {
			t.Errorf("cookies set: %v", seen)
		}
	})

	t.Run("cancel on the provider's form ends at FRONTEND_URL/?auth_error=callback_failed", func(t *testing.T) {
		c := browser(t)
		resp := s.submit(t, c, s.openLogin(t, c), url.Values{"cancel": {"1"}})
		if got := resp.Request.URL.String(); got != s.base+"/?auth_error=callback_failed" {
			t.Fatalf("ended at %s", got)
		}
		if s.cookie(c, "/api/auth/callback", "pkce_verifier") != "" {
			t.Error("login-state cookie not cleared")
		}
		if code, _ := s.me(t, c); code != 401 {
			t.Errorf("me after a cancelled login: %d", code)
		}
	})

	t.Run("two tabs sign in at once: both succeed", func(t *testing.T) {
		c := browser(t)
		first, second := s.openLogin(t, c), s.openLogin(t, c)
		for _, id := range []string{second, first} {
			resp := s.submit(t, c, id, url.Values{"username": {"bob"}, "password": {"Bob-123"}, "login": {"1"}})
			if got := resp.Request.URL.String(); got != s.base {
				t.Fatalf("tab ended at %s", got)
			}
		}
	})

	t.Run("a state that matches no pending login fails", func(t *testing.T) {
		c := browser(t)
		s.openLogin(t, c)
		resp := s.do(t, noFollow(c.Jar), "GET", "/api/auth/callback?code=x&state=forged", nil)
		if resp.Header.Get("Location") != s.base+"/?auth_error=callback_failed" {
			t.Fatalf("%s %s", resp.Status, resp.Header.Get("Location"))
		}
	})

	t.Run("refresh: CSRF required, tokens rotate, old refresh token refused, after access expiry too", func(t *testing.T) {
		c := browser(t)
		s.login(t, c, "alice", "Alice-123")
		if resp := s.do(t, c, "POST", "/api/auth/refresh", nil); resp.StatusCode != 403 {
			t.Fatalf("refresh without X-CSRF-Token: %s", resp.Status)
		}
		oldRefresh, oldCSRF := s.cookie(c, "/api/auth/refresh", "refresh_token"), s.cookie(c, "/", "csrf_token")
		resp := s.do(t, c, "POST", "/api/auth/refresh", map[string]string{"X-CSRF-Token": s.cookie(c, "/", "csrf_token")})
		var body map[string]int
		json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != 200 || body["expires_in"] <= 0 {
			t.Fatalf("refresh: %s %v", resp.Status, body)
		}
		newRefresh := s.cookie(c, "/api/auth/refresh", "refresh_token")
		if newRefresh == oldRefresh || newRefresh == "" {
			t.Fatal("the provider's rotated refresh token did not replace the cookie")
		}
		// The access cookie expires; refresh still works, with CSRF.
		u, _ := url.Parse(s.base + "/")
		c.Jar.SetCookies(u, []*http.Cookie{{Name: "access_token", Path: "/", MaxAge: -1}})
		if code, _ := s.me(t, c); code != 401 {
			t.Fatalf("me without access cookie: %d", code)
		}
		if resp := s.do(t, c, "POST", "/api/auth/refresh", nil); resp.StatusCode != 403 {
			t.Fatalf("refresh after expiry without CSRF: %s", resp.Status)
		}
		if resp := s.do(t, c, "POST", "/api/auth/refresh", map[string]string{"X-CSRF-Token": s.cookie(c, "/", "csrf_token")}); resp.StatusCode != 200 {
			t.Fatalf("refresh after expiry: %s", resp.Status)
		}
		if code, _ := s.me(t, c); code != 200 {
			t.Fatalf("me after refresh: %d", code)
		}
		// Replaying the used refresh token, with the CSRF token of its time
		// (the current one is signed for the current refresh token): the
		// provider refuses, the platform answers 401 and clears the auth
		// cookies. (Within 2 s of its use the platform would still share the
		// answer with a concurrent tab; wait that out.)
		time.Sleep(2100 * time.Millisecond)
		ru, _ := url.Parse(s.base + "/api/auth/refresh")
		c.Jar.SetCookies(ru, []*http.Cookie{{Name: "refresh_token", Value: oldRefresh, Path: "/api/auth/refresh"}})
		c.Jar.SetCookies(u, []*http.Cookie{{Name: "csrf_token", Value: oldCSRF, Path: "/"}})
		resp = s.do(t, c, "POST", "/api/auth/refresh", map[string]string{"X-CSRF-Token": oldCSRF})
		if resp.StatusCode != 401 || s.cookie(c, "/", "access_token") != "" {
			t.Fatalf("replayed refresh token: %s, access cookie %q", resp.Status, s.cookie(c, "/", "access_token"))
		}
	})

	t.Run("logout with id_token: cookies cleared, provider ends the session, back at FRONTEND_URL", func(t *testing.T) {
		c := browser(t)
		s.login(t, c, "alice", "Alice-123")
		nf := noFollow(c.Jar)
		resp := s.do(t, nf, "GET", "/api/auth/logout", nil)
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != 302 || !strings.HasPrefix(loc.String(), s.Provider.Issuer()+"/protocol/openid-connect/logout") {
			t.Fatalf("logout: %s to %s", resp.Status, loc)
		}
		q := loc.Query()
		if q.Get("id_token_hint") == "" || q.Get("client_id") == "" || q.Get("post_logout_redirect_uri") != s.base {
			t.Fatalf("end_session query %v", q)
		}
		end, err := c.Get(loc.String())
		if err != nil {
			t.Fatal(err)
		}
		end.Body.Close()
		if !strings.HasPrefix(end.Request.URL.String(), s.base) {
			t.Errorf("after end_session the browser is at %s", end.Request.URL)
		}
		if code, _ := s.me(t, c); code != 401 {
			t.Errorf("me after logout: %d", code)
		}
	})

	t.Run("logout without id_token: no hint, still a logout", func(t *testing.T) {
		resp := s.do(t, noFollow(nil), "GET", "/api/auth/logout", nil)
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != 302 || loc.Query().Has("id_token_hint") || loc.Query().Get("post_logout_redirect_uri") != s.base {
			t.Fatalf("%s %s", resp.Status, loc)
		}
	})

	t.Run("the provider's ID token is refused as a bearer token; its access token is accepted", func(t *testing.T) {
		c := browser(t)
		s.login(t, c, "alice", "Alice-123")
		idt, at := s.cookie(c, "/api/auth", "id_token"), s.cookie(c, "/", "access_token")
		if resp := s.do(t, nil, "GET", "/api/auth/me", map[string]string{"Authorization": "Bearer " + idt}); resp.StatusCode != 401 {
			t.Errorf("ID token as Bearer: %s", resp.Status)
		}
		if resp := s.do(t, nil, "GET", "/api/auth/me", map[string]string{"Authorization": "Bearer " + at}); resp.StatusCode != 200 {
			t.Errorf("access token as Bearer: %s", resp.Status)
		}
	})

	t.Run("a flood of unknown key ids costs the provider at most one key-set fetch", func(t *testing.T) {
		c := browser(t)
		s.login(t, c, "alice", "Alice-123")
		if code, _ := s.me(t, c); code != 200 {
			t.Fatal("me")
		}
		before := s.Platform.OIDC.Fetches()
		key, _ := rsa.GenerateKey(rand.Reader, 2048)
		claims := map[string]any{"iss": s.Provider.Issuer(), "sub": "x", "azp": "govkit-docplatform", "typ": "Bearer", "exp": time.Now().Add(time.Minute).Unix()}
		var wg sync.WaitGroup
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				tok := sign(key, fmt.Sprintf("forged-%d", i), claims)
				req, _ := http.NewRequest("GET", s.base+"/api/auth/me", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 401 && resp.StatusCode != 429 {
					t.Errorf("forged token: %s", resp.Status)
				}
			}(i)
		}
		wg.Wait()
		if got := s.Platform.OIDC.Fetches() - before; got > 1 {
			t.Fatalf("%d key-set fetches for 100 unknown kids, want at most 1", got)
		}
	})
}

func sign(key *rsa.PrivateKey, kid string, claims map[string]any) string {
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	payload, _ := json.Marshal(claims)
	jws, _ := signer.Sign(payload)
	s, _ := jws.CompactSerialize()
	return s
}

func noFollow(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func browserWithJar(jar http.CookieJar) *http.Client { return &http.Client{Jar: jar} }

func resolve(resp *http.Response) string {
	u, _ := resp.Request.URL.Parse(resp.Header.Get("Location"))
	return u.String()
}

// `govkit dev` keeps its cookie secret, provider key and logins, and
// database in the data directory: a session survives a restart — the
// access cookie still verifies, and the refresh token still refreshes,
// because the provider kept it — and so does the demo API key.
func TestDevKeepsSessionsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	getenv := func(string) string { return "" }
	// The restart must come back on the same ports, as `govkit dev` does
	// on its default ones: the provider's port is part of the issuer its
	// tokens name. Free ports keep other tests (and a developer's own
	// `govkit dev`) from shifting them.
	run := func(platformPort, providerPort string) *stack {
		var out bytes.Buffer
		s, err := dev.Start(context.Background(), dev.Options{DataDir: dir, Getenv: getenv, Demo: true,
			PlatformPort: platformPort, ProviderPort: providerPort}, &out)
		if err != nil {
			t.Fatal(err)
		}
		return &stack{Stack: s, t: t, base: s.Platform.URL, out: out.String()}
	}
	port := func(rawURL string) string {
		u, err := url.Parse(rawURL)
		if err != nil {
			t.Fatal(err)
		}
		return u.Port()
	}
	first := run("0", "0")
	platformPort, providerPort := port(first.Platform.URL), port(first.Provider.URL)
	key := first.Demo.APIKey
	c := browser(t)
	first.login(t, c, "alice", "Alice-123")
	secret, err := os.ReadFile(filepath.Join(dir, "docplatform-cookie-secret"))
	if err != nil || len(bytes.TrimSpace(secret)) < 32 {
		t.Fatalf("cookie secret not kept: %v", err)
	}
	first.Stop(context.Background())

	second := run(platformPort, providerPort)
	if port(second.Platform.URL) != platformPort || port(second.Provider.URL) != providerPort {
		t.Skipf("ports %s/%s were taken by someone else between the two runs", platformPort, providerPort)
	}
	defer second.Stop(context.Background())
	if again, _ := os.ReadFile(filepath.Join(dir, "docplatform-cookie-secret")); !bytes.Equal(again, secret) {
		t.Fatal("cookie secret changed on restart")
	}
	// Cookies are per host, not per port, as in browsers.
	if code, p := second.me(t, c); code != 200 || p.PreferredUsername != "alice" {
		t.Fatalf("session after restart: %d %+v", code, p)
	}
	resp := second.do(t, c, "POST", "/api/auth/refresh", map[string]string{"X-CSRF-Token": second.cookie(c, "/", "csrf_token")})
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("refresh after restart: %s %s", resp.Status, b)
	}
	if code, p := second.me(t, c); code != 200 || p.PreferredUsername != "alice" || p.Roles[second.groupID(t, c)] != "ADMIN" {
		t.Fatalf("me after the refresh: %d %+v", code, p)
	}
	if got := second.do(t, nil, "GET", "/api/documents", map[string]string{"X-API-Key": key}); got.StatusCode != 200 {
		t.Fatalf("the demo API key after restart: %s", got.Status)
	}
}

// The platform `govkit dev` and `serve` start has its resources wired:
// a system admin creates a group and its API key, a machine uploads a
// document larger than the 1 MiB JSON limit with the key, and reads it back.
func TestDocumentsThroughTheWiredPlatform(t *testing.T) {
	s := start(t, "")
	c := browser(t)
	s.login(t, c, "admin", "Admin-123")
	csrf := map[string]string{"X-CSRF-Token": s.cookie(c, "/", "csrf_token"), "Content-Type": "application/json"}
	post := func(path, body string) *http.Response {
		req, _ := http.NewRequest("POST", s.base+path, strings.NewReader(body))
		for k, v := range csrf {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post("/api/groups", `{"name":"Finance"}`)
	var g struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&g)
	if resp.StatusCode != 201 || g.ID == "" {
		t.Fatalf("create group: %s", resp.Status)
	}
	resp = post("/api/api-key", `{"groupId":"`+g.ID+`"}`)
	var k struct{ Key string }
	json.NewDecoder(resp.Body).Decode(&k)
	if resp.StatusCode != 201 || k.Key == "" {
		t.Fatalf("create key: %s", resp.Status)
	}

	content := bytes.Repeat([]byte("%PDF-1.7 govkit "), 2<<16) // 2 MiB
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "report.pdf")
	fw.Write(content)
	mw.Close()
	req, _ := http.NewRequest("POST", s.base+"/api/documents?groupId="+g.ID, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-API-Key", k.Key)
	up, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Body.Close()
	var d struct {
		ID   string
		Size int64
	}
	json.NewDecoder(up.Body).Decode(&d)
	if up.StatusCode != 201 || d.Size != int64(len(content)) {
		t.Fatalf("upload: %s %+v", up.Status, d)
	}
	got := s.do(t, nil, "GET", "/api/documents/"+d.ID+"/content", map[string]string{"X-API-Key": k.Key})
	b, _ := io.ReadAll(got.Body)
	if got.StatusCode != 200 || !bytes.Equal(b, content) {
		t.Fatalf("download: %s, %d bytes", got.Status, len(b))
	}
}
