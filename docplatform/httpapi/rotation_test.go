package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/httpapi"
	"github.com/govkit/govkit/internal/ratelimit"
)

// serverWith is a replica of the harness's server on the same store and
// provider, with its own COOKIE_SECRET (and previous one).
func serverWith(t *testing.T, h *harness, secret, previous string) string {
	t.Helper()
	rule := ratelimit.Rule{Limit: 1000, Window: time.Minute}
	api, err := httpapi.New(httpapi.Options{
		OIDC: h.oidc, Store: h.store, FrontendURL: h.front.URL, CookieSecret: secret, CookieSecretPrevious: previous,
		GlobalLimit: rule, AuthLimit: rule, RefreshLimit: rule, APIKeyFailures: ratelimit.Rule{Limit: 20, Window: time.Minute},
		Counters: h.counters, Logger: slog.New(slog.NewTextHandler(h.logs, nil)), Now: h.clock.Now,
		Routes: probeRoutes(), Audit: h.store,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(func() { srv.Close(); api.Close(context.Background()) })
	return srv.URL
}

// TestCookieSecretRotation: a replica given a new COOKIE_SECRET and the
// old one as COOKIE_SECRET_PREVIOUS keeps everyone signed in and every API
// key working — CSRF tokens and a login in progress made under the old
// secret are accepted, and an API key is rehashed under the new secret at
// its first use, so it keeps working once the old secret is dropped. A
// replica with only the new secret shows what the previous one saves.
func TestCookieSecretRotation(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testCookieSecretRotation(t, newWorld(t, onStore(b.open))) })
	}
}

func testCookieSecretRotation(t *testing.T, w *world) {
	// w's sessions, CSRF tokens and API key are made under cookieSecret.
	newSecret := strings.Repeat("n", 40)
	rotating := serverWith(t, w.harness, newSecret, cookieSecret)
	onlyNew := serverWith(t, w.harness, newSecret, "")
	send := func(c *http.Client, base, method, path string, header map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
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
		resp.Body.Close()
		return resp.StatusCode
	}
	key := map[string]string{"X-API-Key": w.key}

	t.Run("an API key is rehashed at its first use and works under the new secret alone", func(t *testing.T) {
		if got := send(nil, onlyNew, "GET", "/test/any", key); got != 401 {
			t.Fatalf("before its first use, a replica without the previous secret: %d, want 401", got)
		}
		if got := send(nil, rotating, "GET", "/test/any", key); got != 200 {
			t.Fatalf("during the rotation: %d", got)
		}
		if got := send(nil, onlyNew, "GET", "/test/any", key); got != 200 {
			t.Fatalf("after the rotation, under the new secret alone: %d", got)
		}
		if got := send(nil, w.srv.URL, "GET", "/test/any", key); got != 401 {
			t.Fatalf("the old secret still finds the key: %d", got)
		}
	})

	t.Run("a session's CSRF token made under the old secret is accepted", func(t *testing.T) {
		csrf := map[string]string{"X-CSRF-Token": w.csrf(w.member)}
		if got := send(w.member, onlyNew, "POST", "/test/authenticated", csrf); got != 403 {
			t.Fatalf("without the previous secret: %d, want 403", got)
		}
		if got := send(w.member, rotating, "POST", "/test/authenticated", csrf); got != 200 {
			t.Fatalf("with it: %d", got)
		}
	})

	t.Run("a login started before the rotation finishes after it", func(t *testing.T) {
		jar := newJar(t)
		c := noRedirect(jar)
		h := w.harness
		h.idp.SetUser(bob)
		resp, err := c.Get(h.srv.URL + "/api/auth/login") // sealed under the old secret
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = c.Get(resp.Header.Get("Location")) // the provider answers with a code
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cb, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || cb.Query().Get("code") == "" {
			t.Fatalf("provider redirect %q", resp.Header.Get("Location"))
		}
		srvURL, _ := url.Parse(h.srv.URL + "/api/auth/callback")
		cookies := jar.Cookies(srvURL)
		finish := func(base string) string {
			req, _ := http.NewRequest("GET", base+"/api/auth/callback?"+cb.RawQuery, nil)
			for _, ck := range cookies { // the same browser, each time
				req.AddCookie(ck)
			}
			resp, err := noRedirect(nil).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.Header.Get("Location")
		}
		if loc := finish(onlyNew); !strings.Contains(loc, "auth_error") {
			t.Fatalf("without the previous secret the login state opened: %q", loc)
		}
		if loc := finish(rotating); loc != h.front.URL {
			t.Fatalf("with it the callback went to %q\n%s", loc, h.logs.String())
		}
	})
}
