package devidp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

const (
	clientID     = "platform"
	clientSecret = "platform-secret-value"
)

// env is a provider, a relying party's redirect target and a browser.
type env struct {
	t       *testing.T
	idp     *Server
	rp      *httptest.Server
	browser *http.Client
	conf    *oauth2.Config
	ctx     context.Context // carries the browser as oauth2's HTTP client
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	rp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "relying party reached")
	}))
	t.Cleanup(rp.Close)
	logs := &syncBuffer{}
	cfg := Config{
		Realm: "test",
		Clients: []Client{{
			ID:                     clientID,
			Secret:                 clientSecret,
			RedirectURIs:           []string{rp.URL + "/api/auth/callback"},
			PostLogoutRedirectURIs: []string{rp.URL + "/"},
		}},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	idp, err := Start(ctx, "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { idp.Close() })
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	return &env{
		t: t, idp: idp, rp: rp, browser: browser, logs: logs,
		ctx: context.WithValue(ctx, oauth2.HTTPClient, browser),
		conf: &oauth2.Config{
			ClientID:     clientID,
			ClientSecret: clientSecret,
			RedirectURL:  rp.URL + "/api/auth/callback",
			Scopes:       []string{"openid", "profile", "email"},
			Endpoint: oauth2.Endpoint{
				AuthURL:   idp.Issuer() + "/protocol/openid-connect/auth",
				TokenURL:  idp.Issuer() + "/protocol/openid-connect/token",
				AuthStyle: oauth2.AuthStyleInHeader,
			},
		},
	}
}

// flow is one login in progress, as the platform would start it.
type flow struct {
	state, nonce, verifier string
	requestID              string
}

var requestIDField = regexp.MustCompile(`name="authRequestID" value="([^"]+)"`)

// startLogin follows the authorization redirect to the login form.
func (e *env) startLogin(extra ...oauth2.AuthCodeOption) flow {
	e.t.Helper()
	f := flow{state: rand.Text(), nonce: rand.Text(), verifier: oauth2.GenerateVerifier()}
	opts := append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(f.verifier), oauth2.SetAuthURLParam("nonce", f.nonce)}, extra...)
	resp, body := e.get(e.conf.AuthCodeURL(f.state, opts...))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Request.URL.String(), e.idp.Issuer()+"/login?") {
		e.t.Fatalf("authorize ended at %s with %d: %s", resp.Request.URL, resp.StatusCode, body)
	}
	m := requestIDField.FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("no authRequestID in login page: %s", body)
	}
	f.requestID = m[1]
	return f
}

func (e *env) get(u string) (*http.Response, string) {
	e.t.Helper()
	resp, err := e.browser.Get(u)
	if err != nil {
		e.t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// submit posts the login form and follows the redirects.
func (e *env) submit(f flow, form url.Values) (*http.Response, string) {
	e.t.Helper()
	form.Set("authRequestID", f.requestID)
	resp, err := e.browser.PostForm(e.idp.Issuer()+"/login", form)
	if err != nil {
		e.t.Fatalf("POST login: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// signIn completes a login and returns the query the client's
// redirect_uri received.
func (e *env) signIn(f flow, username, password string) url.Values {
	e.t.Helper()
	resp, body := e.submit(f, url.Values{"username": {username}, "password": {password}, "login": {"1"}})
	if !strings.HasPrefix(resp.Request.URL.String(), e.conf.RedirectURL+"?") {
		e.t.Fatalf("sign-in ended at %s (%d): %s", resp.Request.URL, resp.StatusCode, body)
	}
	return resp.Request.URL.Query()
}

// login runs the whole flow and the code exchange.
func (e *env) login(username, password string) (flow, *oauth2.Token) {
	e.t.Helper()
	f := e.startLogin()
	q := e.signIn(f, username, password)
	if q.Get("state") != f.state || q.Get("code") == "" {
		e.t.Fatalf("callback query %v, want code and state %q", q, f.state)
	}
	tok, err := e.conf.Exchange(e.ctx, q.Get("code"), oauth2.VerifierOption(f.verifier))
	if err != nil {
		e.t.Fatalf("Exchange: %v", err)
	}
	return f, tok
}

func (e *env) verifier() *oidc.IDTokenVerifier {
	e.t.Helper()
	p, err := oidc.NewProvider(e.ctx, e.idp.Issuer())
	if err != nil {
		e.t.Fatalf("discovery: %v", err)
	}
	return p.Verifier(&oidc.Config{ClientID: clientID})
}

// jwtParts verifies a JWT's signature against the provider's JWKS and
// returns its header and payload.
func (e *env) jwtParts(token string) (header, payload map[string]any) {
	e.t.Helper()
	raw, err := oidc.NewRemoteKeySet(e.ctx, e.idp.Issuer()+"/protocol/openid-connect/certs").VerifySignature(e.ctx, token)
	if err != nil {
		e.t.Fatalf("signature: %v", err)
	}
	if err := json.Unmarshal(raw, &payload); err != nil {
		e.t.Fatal(err)
	}
	h, err := base64.RawURLEncoding.DecodeString(strings.SplitN(token, ".", 2)[0])
	if err != nil {
		e.t.Fatal(err)
	}
	if err := json.Unmarshal(h, &header); err != nil {
		e.t.Fatal(err)
	}
	return header, payload
}

func idToken(t *testing.T, tok *oauth2.Token) string {
	t.Helper()
	s, _ := tok.Extra("id_token").(string)
	if s == "" {
		t.Fatal("no id_token in the token response")
	}
	return s
}

func grantErr(t *testing.T, err error, code string) {
	t.Helper()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != code {
		t.Fatalf("error = %v, want %s", err, code)
	}
}

func (e *env) refresh(refreshToken string) (*oauth2.Token, error) {
	return e.conf.TokenSource(e.ctx, &oauth2.Token{RefreshToken: refreshToken, Expiry: time.Now().Add(-time.Hour)}).Token()
}

var admin = DemoUsers()[0]

// TestProvider runs its cases against one provider, whose log — and the
// zitadel library's, which goes to slog's default logger — the last case
// searches for secrets.
func TestProvider(t *testing.T) {
	e := newEnv(t, nil)
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	var secrets []string
	for _, c := range []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{"discovery names the Keycloak-shaped issuer and endpoints", func(t *testing.T, e *env) {
			resp, body := e.get(e.idp.URL + "/realms/test/.well-known/openid-configuration")
			var d map[string]any
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &d) != nil {
				t.Fatalf("discovery: %d %s", resp.StatusCode, body)
			}
			want := map[string]string{
				"issuer":                 e.idp.URL + "/realms/test",
				"authorization_endpoint": e.idp.Issuer() + "/protocol/openid-connect/auth",
				"token_endpoint":         e.idp.Issuer() + "/protocol/openid-connect/token",
				"userinfo_endpoint":      e.idp.Issuer() + "/protocol/openid-connect/userinfo",
				"end_session_endpoint":   e.idp.Issuer() + "/protocol/openid-connect/logout",
				"revocation_endpoint":    e.idp.Issuer() + "/protocol/openid-connect/revoke",
				"jwks_uri":               e.idp.Issuer() + "/protocol/openid-connect/certs",
			}
			for k, v := range want {
				if d[k] != v {
					t.Errorf("%s = %v, want %s", k, d[k], v)
				}
			}
			if !slices.Contains(toStrings(d["code_challenge_methods_supported"]), "S256") {
				t.Errorf("code_challenge_methods_supported = %v", d["code_challenge_methods_supported"])
			}
		}},
		{"the code flow with PKCE yields an ID token go-oidc accepts, with nonce and typ ID", func(t *testing.T, e *env) {
			f, tok := e.login("admin", "Admin-123")
			idt, err := e.verifier().Verify(e.ctx, idToken(t, tok))
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if idt.Nonce != f.nonce || idt.Subject != admin.Subject {
				t.Errorf("nonce %q sub %q", idt.Nonce, idt.Subject)
			}
			var claims map[string]any
			idt.Claims(&claims)
			for k, v := range map[string]any{"typ": "ID", "azp": clientID, "email": admin.Email, "name": admin.Name, "preferred_username": "admin", "email_verified": true} {
				if claims[k] != v {
					t.Errorf("ID token %s = %v, want %v", k, claims[k], v)
				}
			}
			if tok.RefreshToken == "" {
				t.Error("no refresh token without offline_access, unlike Keycloak")
			}
		}},
		{"the access token is a Keycloak-like RS256 JWT without ID-token claims", func(t *testing.T, e *env) {
			_, tok := e.login("alice", "Alice-123")
			h, p := e.jwtParts(tok.AccessToken)
			if h["alg"] != "RS256" || h["typ"] != "JWT" || h["kid"] != e.idp.KeyID() {
				t.Errorf("header = %v (kid now %s)", h, e.idp.KeyID())
			}
			want := map[string]any{"iss": e.idp.Issuer(), "sub": DemoUsers()[1].Subject, "azp": clientID, "typ": "Bearer", "scope": "openid profile email"}
			for k, v := range want {
				if p[k] != v {
					t.Errorf("%s = %v, want %v", k, p[k], v)
				}
			}
			if !slices.Contains(toStrings(p["aud"]), clientID) {
				t.Errorf("aud = %v", p["aud"])
			}
			exp, iat := p["exp"].(float64), p["iat"].(float64)
			if exp-iat < 290 || exp-iat > 310 {
				t.Errorf("lifetime %v s, want the 5 minute default", exp-iat)
			}
			for _, k := range []string{"nonce", "at_hash", "email", "name"} {
				if _, ok := p[k]; ok {
					t.Errorf("access token carries %s", k)
				}
			}
		}},
		{"userinfo answers for a live access token", func(t *testing.T, e *env) {
			_, tok := e.login("bob", "Bob-123")
			p, err := oidc.NewProvider(e.ctx, e.idp.Issuer())
			if err != nil {
				t.Fatal(err)
			}
			info, err := p.UserInfo(e.ctx, oauth2.StaticTokenSource(tok))
			if err != nil {
				t.Fatalf("UserInfo: %v", err)
			}
			if info.Subject != DemoUsers()[2].Subject || info.Email != "bob@govkit.test" {
				t.Errorf("userinfo = %+v", info)
			}
		}},
		{"refresh rotates the token and refuses the used one", func(t *testing.T, e *env) {
			_, tok := e.login("admin", "Admin-123")
			next, err := e.refresh(tok.RefreshToken)
			if err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if next.RefreshToken == "" || next.RefreshToken == tok.RefreshToken || next.AccessToken == tok.AccessToken {
				t.Error("refresh did not rotate")
			}
			if _, p := e.jwtParts(next.AccessToken); p["typ"] != "Bearer" || p["sub"] != admin.Subject {
				t.Errorf("refreshed access token %v", p)
			}
			if _, err := e.verifier().Verify(e.ctx, idToken(t, next)); err != nil {
				t.Errorf("refreshed ID token: %v", err)
			}
			_, err = e.refresh(tok.RefreshToken)
			grantErr(t, err, "invalid_grant")
			if _, err := e.refresh(next.RefreshToken); err != nil {
				t.Errorf("the new refresh token: %v", err)
			}
		}},
		{"two refreshes racing with one token: exactly one wins", func(t *testing.T, e *env) {
			_, tok := e.login("alice", "Alice-123")
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Go(func() { _, errs[i] = e.refresh(tok.RefreshToken) })
			}
			wg.Wait()
			if (errs[0] == nil) == (errs[1] == nil) {
				t.Errorf("errors = %v", errs)
			}
		}},
		{"a code is good for one exchange", func(t *testing.T, e *env) {
			f := e.startLogin()
			q := e.signIn(f, "admin", "Admin-123")
			if _, err := e.conf.Exchange(e.ctx, q.Get("code"), oauth2.VerifierOption(f.verifier)); err != nil {
				t.Fatal(err)
			}
			_, err := e.conf.Exchange(e.ctx, q.Get("code"), oauth2.VerifierOption(f.verifier))
			grantErr(t, err, "invalid_grant")
		}},
		{"a wrong code verifier is refused", func(t *testing.T, e *env) {
			f := e.startLogin()
			q := e.signIn(f, "admin", "Admin-123")
			_, err := e.conf.Exchange(e.ctx, q.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()))
			grantErr(t, err, "invalid_grant")
		}},
		{"a wrong client secret is refused", func(t *testing.T, e *env) {
			f := e.startLogin()
			q := e.signIn(f, "admin", "Admin-123")
			bad := *e.conf
			bad.ClientSecret = "wrong"
			_, err := bad.Exchange(e.ctx, q.Get("code"), oauth2.VerifierOption(f.verifier))
			grantErr(t, err, "invalid_client")
		}},
		{"authorize without PKCE S256 is sent back with invalid_request", func(t *testing.T, e *env) {
			for name, opts := range map[string][]oauth2.AuthCodeOption{
				"none":  nil,
				"plain": {oauth2.SetAuthURLParam("code_challenge", "abc"), oauth2.SetAuthURLParam("code_challenge_method", "plain")},
			} {
				resp, _ := e.get(e.conf.AuthCodeURL("st-"+name, opts...))
				q := resp.Request.URL.Query()
				if !strings.HasPrefix(resp.Request.URL.String(), e.conf.RedirectURL) || q.Get("error") != "invalid_request" || q.Get("state") != "st-"+name {
					t.Errorf("%s: ended at %s", name, resp.Request.URL)
				}
			}
		}},
		{"an unregistered redirect_uri is not redirected to", func(t *testing.T, e *env) {
			bad := *e.conf
			bad.RedirectURL = e.rp.URL + "/elsewhere"
			resp, _ := e.get(bad.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
			if resp.StatusCode != http.StatusBadRequest || strings.HasPrefix(resp.Request.URL.String(), e.rp.URL) {
				t.Errorf("ended at %s with %d", resp.Request.URL, resp.StatusCode)
			}
		}},
		{"prompt=none answers login_required", func(t *testing.T, e *env) {
			resp, _ := e.get(e.conf.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("prompt", "none")))
			if q := resp.Request.URL.Query(); q.Get("error") != "login_required" || q.Get("state") != "s" {
				t.Errorf("ended at %s", resp.Request.URL)
			}
		}},
		{"cancel sends the browser back with access_denied and the state", func(t *testing.T, e *env) {
			f := e.startLogin()
			resp, _ := e.submit(f, url.Values{"cancel": {"1"}})
			q := resp.Request.URL.Query()
			if !strings.HasPrefix(resp.Request.URL.String(), e.conf.RedirectURL+"?") || q.Get("error") != "access_denied" || q.Get("state") != f.state || q.Has("code") {
				t.Errorf("ended at %s", resp.Request.URL)
			}
			resp, _ = e.submit(f, url.Values{"username": {"admin"}, "password": {"Admin-123"}})
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("the cancelled request still accepts a login: %d", resp.StatusCode)
			}
		}},
		{"a wrong password shows the form again with an error", func(t *testing.T, e *env) {
			f := e.startLogin()
			for _, creds := range [][2]string{{"admin", "wrong"}, {"nobody", "Admin-123"}, {"alice", "Admin-123"}} {
				resp, body := e.submit(f, url.Values{"username": {creds[0]}, "password": {creds[1]}})
				if resp.Request.URL.Host != strings.TrimPrefix(e.idp.URL, "http://") || !strings.Contains(body, "Invalid username or password.") || !strings.Contains(body, `value="`+f.requestID+`"`) {
					t.Fatalf("%v: %s %d: %s", creds, resp.Request.URL, resp.StatusCode, body)
				}
			}
			if q := e.signIn(f, "ADMIN", "Admin-123"); q.Get("state") != f.state || q.Get("code") == "" {
				t.Errorf("after failures the right password gives %v", q)
			}
		}},
		{"the login page lists the demo users and runs under a strict CSP", func(t *testing.T, e *env) {
			f := flow{verifier: oauth2.GenerateVerifier()}
			resp, body := e.get(e.conf.AuthCodeURL("s", oauth2.S256ChallengeOption(f.verifier)))
			csp := resp.Header.Get("Content-Security-Policy")
			if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") {
				t.Errorf("CSP = %q", csp)
			}
			for _, u := range DemoUsers() {
				if !strings.Contains(body, u.Username) || strings.Contains(body, u.Password) {
					t.Errorf("page and user %s: listed without password?", u.Username)
				}
			}
			if strings.Contains(body, "<script") || strings.Contains(body, "style=") || strings.Contains(body, "<style") {
				t.Error("the page needs inline script or style")
			}
			css, _ := e.get(e.idp.Issuer() + "/login.css")
			if css.StatusCode != 200 || !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") {
				t.Errorf("stylesheet: %d %s", css.StatusCode, css.Header.Get("Content-Type"))
			}
		}},
		{"an unknown login request shows an expiry page", func(t *testing.T, e *env) {
			resp, body := e.get(e.idp.Issuer() + "/login?authRequestID=nope")
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "expired") {
				t.Errorf("%d %s", resp.StatusCode, body)
			}
		}},
		{"end_session redirects to the registered URI and ends the user's tokens", func(t *testing.T, e *env) {
			_, tok := e.login("admin", "Admin-123")
			q := url.Values{"client_id": {clientID}, "id_token_hint": {idToken(t, tok)}, "post_logout_redirect_uri": {e.rp.URL + "/"}}
			resp, _ := e.get(e.idp.Issuer() + "/protocol/openid-connect/logout?" + q.Encode())
			if resp.Request.URL.String() != e.rp.URL+"/" {
				t.Errorf("logout ended at %s", resp.Request.URL)
			}
			_, err := e.refresh(tok.RefreshToken)
			grantErr(t, err, "invalid_grant")
		}},
		{"end_session refuses an unregistered post_logout_redirect_uri", func(t *testing.T, e *env) {
			q := url.Values{"client_id": {clientID}, "post_logout_redirect_uri": {"https://evil.example/"}}
			resp, _ := e.get(e.idp.Issuer() + "/protocol/openid-connect/logout?" + q.Encode())
			if resp.StatusCode != http.StatusBadRequest || resp.Request.URL.Host == "evil.example" {
				t.Errorf("ended at %s with %d", resp.Request.URL, resp.StatusCode)
			}
		}},
		{"end_session without client or hint lands on the provider's signed-out page", func(t *testing.T, e *env) {
			resp, body := e.get(e.idp.Issuer() + "/protocol/openid-connect/logout")
			if resp.Request.URL.String() != e.idp.Issuer()+"/logged-out" || !strings.Contains(body, "signed out") {
				t.Errorf("ended at %s: %s", resp.Request.URL, body)
			}
		}},
		{"revoking a refresh token ends it", func(t *testing.T, e *env) {
			_, tok := e.login("alice", "Alice-123")
			req, _ := http.NewRequest("POST", e.idp.Issuer()+"/protocol/openid-connect/revoke",
				strings.NewReader(url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(clientID, clientSecret)
			resp, err := e.browser.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("revoke: %d", resp.StatusCode)
			}
			_, err = e.refresh(tok.RefreshToken)
			grantErr(t, err, "invalid_grant")
		}},
		{"a rotated key gets a new kid and old tokens still verify", func(t *testing.T, e *env) {
			_, before := e.login("admin", "Admin-123")
			oldKid := e.idp.KeyID()
			kid, err := e.idp.RotateKey()
			if err != nil || kid == oldKid || e.idp.KeyID() != kid {
				t.Fatalf("RotateKey = %q, %v (old %q)", kid, err, oldKid)
			}
			_, after := e.login("admin", "Admin-123")
			if h, _ := e.jwtParts(after.AccessToken); h["kid"] != kid {
				t.Errorf("new token kid %v, want %s", h["kid"], kid)
			}
			if h, _ := e.jwtParts(before.AccessToken); h["kid"] != oldKid {
				t.Errorf("old token kid %v", h["kid"])
			}
			if _, err := e.verifier().Verify(e.ctx, idToken(t, before)); err != nil {
				t.Errorf("old ID token: %v", err)
			}
		}},
		{"Sign mints tokens the JWKS verifies", func(t *testing.T, e *env) {
			tok, err := e.idp.Sign(map[string]any{"iss": e.idp.Issuer(), "sub": "x", "exp": 1})
			if err != nil {
				t.Fatal(err)
			}
			h, p := e.jwtParts(tok)
			if h["kid"] != e.idp.KeyID() || h["typ"] != "JWT" || p["sub"] != "x" {
				t.Errorf("%v %v", h, p)
			}
		}},
		{"SignWithHeader sets kid and typ and keeps alg", func(t *testing.T, e *env) {
			claims := e.idp.AccessTokenClaims(admin.Subject, clientID)
			tok, err := e.idp.SignWithHeader(map[string]any{"typ": "at+jwt"}, claims)
			if err != nil {
				t.Fatal(err)
			}
			h, p := e.jwtParts(tok)
			if h["typ"] != "at+jwt" || h["alg"] != "RS256" || h["kid"] != e.idp.KeyID() || p["typ"] != "Bearer" || p["azp"] != clientID || p["iss"] != e.idp.Issuer() {
				t.Errorf("%v %v", h, p)
			}
			tok, err = e.idp.SignWithHeader(map[string]any{"typ": nil, "kid": "unknown-kid"}, claims)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := oidc.NewRemoteKeySet(e.ctx, e.idp.Issuer()+"/protocol/openid-connect/certs").VerifySignature(e.ctx, tok); err == nil {
				t.Error("a token with an unknown kid verified")
			}
			raw, _ := base64.RawURLEncoding.DecodeString(strings.SplitN(tok, ".", 2)[0])
			if strings.Contains(string(raw), `"typ"`) || !strings.Contains(string(raw), `"kid":"unknown-kid"`) {
				t.Errorf("header %s", raw)
			}
			if _, err := e.idp.SignWithHeader(map[string]any{"alg": "none"}, claims); err == nil {
				t.Error("alg was changed")
			}
		}},
		{"logs never hold a password, code or token (checked after all cases)", func(t *testing.T, e *env) {
			f := e.startLogin()
			e.submit(f, url.Values{"username": {"admin"}, "password": {"not-the-password"}})
			q := e.signIn(f, "admin", "Admin-123")
			tok, err := e.conf.Exchange(e.ctx, q.Get("code"), oauth2.VerifierOption(f.verifier))
			if err != nil {
				t.Fatal(err)
			}
			e.refresh(tok.RefreshToken)
			e.refresh(tok.RefreshToken) // refused: logged by the library
			logs := e.logs.String()
			if !strings.Contains(logs, "sign-in failed") || !strings.Contains(logs, "signed in") || !strings.Contains(logs, "invalid_grant") {
				t.Errorf("expected sign-in and refusal log lines, got %s", logs)
			}
			secrets = append(secrets, "not-the-password", "Admin-123", "Alice-123", "Bob-123", clientSecret, q.Get("code"), tok.AccessToken, tok.RefreshToken, f.verifier, f.requestID)
		}},
	} {
		e.t = t
		t.Run(c.name, func(t *testing.T) { e.t = t; c.run(t, e) })
	}
	logs := e.logs.String()
	if testing.Verbose() {
		t.Log(logs)
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("logs contain a secret: %s", logs)
		}
	}
}

func toStrings(v any) []string {
	var out []string
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, s := range v {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func TestPublicClientNeedsNoSecretButPKCE(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Clients[0].Secret = "" })
	e.conf.ClientSecret = ""
	e.conf.Endpoint.AuthStyle = oauth2.AuthStyleInParams
	_, tok := e.login("bob", "Bob-123")
	if tok.AccessToken == "" {
		t.Fatal("no access token")
	}
}

func TestLifetimesComeFromConfig(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AccessTokenLifetime = 90 * time.Second })
	_, tok := e.login("admin", "Admin-123")
	_, p := e.jwtParts(tok.AccessToken)
	if d := p["exp"].(float64) - p["iat"].(float64); d < 85 || d > 95 {
		t.Errorf("lifetime %v s, want 90", d)
	}
}

func TestKeyFileKeepsTheKeyAcrossRestarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "idp", "signing-key.pem")
	first := newEnv(t, func(c *Config) { c.KeyFile = file })
	kid := first.idp.KeyID()
	first.idp.Close()
	info, err := os.Stat(file)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	second := newEnv(t, func(c *Config) { c.KeyFile = file })
	if second.idp.KeyID() != kid {
		t.Errorf("kid %s after restart, want %s", second.idp.KeyID(), kid)
	}
	rotated, err := second.idp.RotateKey()
	if err != nil {
		t.Fatal(err)
	}
	third := newEnv(t, func(c *Config) { c.KeyFile = file })
	if third.idp.KeyID() != rotated {
		t.Errorf("kid %s after rotation and restart, want %s", third.idp.KeyID(), rotated)
	}
}

func TestStartRefusesBadConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"client without redirect URIs", Config{Clients: []Client{{ID: "a"}}}},
		{"two clients with one id", Config{Clients: []Client{{ID: "a", RedirectURIs: []string{"http://x/cb"}}, {ID: "a", RedirectURIs: []string{"http://x/cb"}}}}},
		{"relative redirect URI", Config{Clients: []Client{{ID: "a", RedirectURIs: []string{"/cb"}}}}},
		{"user without password", Config{Users: []User{{Subject: "s", Username: "u"}}}},
		{"two users with one username", Config{Users: []User{{Subject: "1", Username: "u", Password: "p"}, {Subject: "2", Username: "U", Password: "p"}}}},
		{"realm with a slash", Config{Realm: "a/b"}},
		{"base URL that is not http", Config{BaseURL: "ftp://x"}},
		{"negative lifetime", Config{AccessTokenLifetime: -time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Start(context.Background(), "127.0.0.1:0", c.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Start accepted the config")
			}
		})
	}
}

func TestBaseURLSetsTheIssuer(t *testing.T) {
	s, err := Start(context.Background(), "127.0.0.1:0", Config{BaseURL: "http://idp.localhost:8081/", Realm: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Issuer() != "http://idp.localhost:8081/realms/dev" || s.URL != "http://idp.localhost:8081" {
		t.Errorf("Issuer = %s, URL = %s", s.Issuer(), s.URL)
	}
}

func TestCancelledContextStopsTheServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, "127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	<-s.done
	if _, err := http.Get(s.Issuer() + "/.well-known/openid-configuration"); err == nil {
		t.Error("server still answers after its context ended")
	}
}

// With a state file, a restarted provider still honours the refresh
// tokens it issued (rotation included), and forgets revoked ones.
func TestStateFileKeepsLoginsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	keep := func(c *Config) {
		c.KeyFile = filepath.Join(dir, "key.pem")
		c.StateFile = filepath.Join(dir, "state.json")
	}
	first := newEnv(t, keep)
	_, alice := first.login("alice", "Alice-123")
	_, bob := first.login("bob", "Bob-123")
	first.idp.Close()
	info, err := os.Stat(filepath.Join(dir, "state.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", info, err)
	}

	second := newEnv(t, keep)
	tok, err := second.refresh(alice.RefreshToken)
	if err != nil {
		t.Fatalf("refresh after a restart: %v", err)
	}
	if _, p := second.jwtParts(tok.AccessToken); p["sub"] != DemoUsers()[1].Subject {
		t.Errorf("refreshed token for %v, want alice", p["sub"])
	}
	if _, err := second.refresh(alice.RefreshToken); err == nil {
		t.Error("a refresh token used before the second restart still works")
	}
	revoke, err := http.PostForm(second.idp.Issuer()+"/protocol/openid-connect/revoke",
		url.Values{"token": {bob.RefreshToken}, "client_id": {clientID}, "client_secret": {clientSecret}})
	if err != nil {
		t.Fatal(err)
	}
	revoke.Body.Close()
	if revoke.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %s", revoke.Status)
	}
	second.idp.Close()

	third := newEnv(t, keep)
	if _, err := third.refresh(tok.RefreshToken); err != nil {
		t.Errorf("the rotated refresh token after another restart: %v", err)
	}
	if _, err := third.refresh(bob.RefreshToken); err == nil {
		t.Error("a revoked refresh token works again after a restart")
	}
}

func TestUnreadableStateFileIsAnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), "127.0.0.1:0", Config{StateFile: file})
	if err == nil {
		s.Close()
		t.Fatal("Start accepted a broken state file")
	}
	if !strings.Contains(err.Error(), file) {
		t.Errorf("error %q does not name the file", err)
	}
}

// A page whose name an attacker re-points at the provider's address (DNS
// rebinding) is its own origin to the browser; its requests carry the
// attacker's name as Host and are refused, the provider's own names are
// served.
func TestForeignHostIsRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Serve(context.Background(), ln, Config{BaseURL: "http://idp.localhost:8081/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(host, path string) int {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+ln.Addr().String()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	prefix := "/realms/" + s.Realm
	for _, host := range []string{"rebind.example", "evil.test:8081", "localhost.evil.example"} {
		for _, path := range []string{"/.well-known/openid-configuration", "/login"} {
			if code := get(host, prefix+path); code != http.StatusMisdirectedRequest {
				t.Errorf("Host %s, %s: %d, want 421", host, path, code)
			}
		}
	}
	// the control: its own name, loopback names and addresses
	for _, host := range []string{"idp.localhost:8081", "localhost:8081", "127.0.0.1:8081", "[::1]:8081", "192.0.2.7"} {
		if code := get(host, prefix+"/.well-known/openid-configuration"); code != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, code)
		}
	}
}
