package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/notify/httpapi"
)

// TestDevConsoleOIDC signs in to the development provider as the console
// does in the browser — authorization code with PKCE S256, public client
// notify-console, the redirect to the console's origin — and uses the
// access token as a Bearer at the development notification service.
func TestDevConsoleOIDC(t *testing.T) {
	notifyLn := freeListener(t)
	_, port, _ := strings.Cut(notifyLn.Addr().String(), ":")
	origin := "http://127.0.0.1:" + port
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	idp, err := devidp.Start(ctx, "127.0.0.1:0", devidp.Config{Clients: []devidp.Client{{
		ID: httpapi.DevConsoleClientID, RedirectURIs: httpapi.DevConsoleRedirectURIs(notifyLn.Addr().String()), ProfileInAccessToken: true,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	oidc := &httpapi.DevOIDC{DiscoveryURL: idp.Issuer() + "/.well-known/openid-configuration", Issuer: idp.Issuer(), ClientID: httpapi.DevConsoleClientID, Admins: []string{"ADMIN@govkit.test"}}
	var out bytes.Buffer
	d, err := httpapi.StartDev(context.Background(), httpapi.DevOptions{DataDir: t.TempDir(), Host: "127.0.0.1", RSABits: 2048,
		Listener: notifyLn, SMTPListener: freeListener(t), InboundSMTPListener: freeListener(t), OIDC: oidc}, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = d.Stop(c)
	}()
	redirect := origin + httpapi.DevConsoleCallbackPath

	// signIn runs the browser's part of the flow and the code exchange
	// from the console's origin, and returns the access token.
	signIn := func(t *testing.T, username, password string) string {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(r.URL.String(), redirect+"?") {
				return http.ErrUseLastResponse // the console's page would take it from here
			}
			return nil
		}}
		verifier := rand.Text() + rand.Text()
		sum := sha256.Sum256([]byte(verifier))
		state := rand.Text()
		q := url.Values{"client_id": {httpapi.DevConsoleClientID}, "redirect_uri": {redirect}, "response_type": {"code"},
			"scope": {"openid profile email"}, "state": {state}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
		resp, err := browser.Get(idp.Issuer() + "/protocol/openid-connect/auth?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`name="authRequestID" value="([^"]+)"`).FindSubmatch(page)
		if m == nil {
			t.Fatalf("no login form (%d): %s", resp.StatusCode, page)
		}
		resp, err = browser.PostForm(idp.Issuer()+"/login", url.Values{"authRequestID": {string(m[1])}, "username": {username}, "password": {password}, "login": {"1"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil || !strings.HasPrefix(loc.String(), redirect+"?") || loc.Query().Get("state") != state || loc.Query().Get("code") == "" {
			t.Fatalf("sign-in ended with %d at %v", resp.StatusCode, loc)
		}
		form := url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "redirect_uri": {redirect},
			"client_id": {httpapi.DevConsoleClientID}, "code_verifier": {verifier}}
		req, _ := http.NewRequest("POST", idp.Issuer()+"/protocol/openid-connect/token", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var tok struct {
			AccessToken string `json:"access_token"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&tok)
		if resp.StatusCode != 200 || tok.AccessToken == "" {
			t.Fatalf("token exchange %d", resp.StatusCode)
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != origin {
			t.Errorf("token endpoint Access-Control-Allow-Origin %q, want %q", got, origin)
		}
		return tok.AccessToken
	}
	call := func(t *testing.T, method, path, token string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, d.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}

	t.Run("the demo admin's token is accepted as Admin", func(t *testing.T) {
		tok := signIn(t, "admin", "Admin-123")
		if st, m := call(t, "GET", "/api/administrators/whoami", tok); st != 200 || m["role"] != "Admin" || m["authnStrategy"] != "oidc" || m["securityId"] != "admin@govkit.test" {
			t.Fatalf("whoami %d %v", st, m)
		}
		if st, m := call(t, "GET", "/api/console/stats", tok); st != 200 {
			t.Errorf("stats %d %v", st, m)
		}
	})
	t.Run("another demo user's token is an AuthenticatedUser", func(t *testing.T) {
		tok := signIn(t, "alice", "Alice-123")
		if st, m := call(t, "GET", "/api/administrators/whoami", tok); st != 200 || m["role"] != "AuthenticatedUser" || m["securityId"] != "alice@govkit.test" {
			t.Fatalf("whoami %d %v", st, m)
		}
		if st, _ := call(t, "GET", "/api/console/stats", tok); st != 403 {
			t.Errorf("stats %d, want 403", st)
		}
	})
	t.Run("discovery and keys answer the console's origin, not others", func(t *testing.T) {
		for _, c := range []struct{ origin, want string }{{origin, origin}, {"http://localhost:" + port, "http://localhost:" + port}, {"http://evil.invalid", ""}} {
			for _, p := range []string{"/.well-known/openid-configuration", "/protocol/openid-connect/certs"} {
				req, _ := http.NewRequest("GET", idp.Issuer()+p, nil)
				req.Header.Set("Origin", c.origin)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := resp.Header.Get("Access-Control-Allow-Origin"); resp.StatusCode != 200 || got != c.want {
					t.Errorf("%s from %s: %d, Access-Control-Allow-Origin %q, want %q", p, c.origin, resp.StatusCode, got, c.want)
				}
			}
		}
	})
	t.Run("the banner names the console and its sign-in", func(t *testing.T) {
		for _, want := range []string{"web console         " + d.URL + "/", "client notify-console"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("banner lacks %q:\n%s", want, out.String())
			}
		}
	})
}
