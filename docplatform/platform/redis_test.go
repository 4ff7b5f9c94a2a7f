package platform_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform/config"
	"github.com/govkit/govkit/docplatform/platform"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
	"github.com/govkit/govkit/internal/testsvc"
)

// Two platform instances (two Start calls, each with its own listener,
// store and counters client) with REDIS_URL set share one per-IP budget.
// The API-key failure counters live in the same store; the httpapi tests
// show them shared on a route that admits keys.
func TestTwoInstancesShareBudgetsThroughREDIS_URL(t *testing.T) {
	r := testsvc.RequireRedis(t)
	idp := ssotest.New(t)
	start := func() string {
		dir := t.TempDir()
		cfg, err := config.Load(env(map[string]string{
			"SSO_AUTH_SERVER_URL": idp.Server.URL, "SSO_REALM": "test", "SSO_CLIENT_ID": idp.ClientID, "SSO_CLIENT_SECRET": idp.ClientSecret,
			"SSO_REDIRECT_URI": "http://127.0.0.1/api/auth/callback", "FRONTEND_URL": "http://127.0.0.1:3000",
			"COOKIE_SECRET": strings.Repeat("k", 40), "DATABASE_URL": filepath.Join(dir, "p.db"),
			"REDIS_URL": "redis://" + r.Addr, "REDIS_KEY_PREFIX": r.Prefix,
			"THROTTLE_GLOBAL_LIMIT": "6",
		}), dir)
		if err != nil {
			t.Fatal(err)
		}
		p, err := platform.Start(context.Background(), cfg, "", listen(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Shutdown(context.Background()) })
		return p.URL
	}
	a, b := start(), start()
	get := func(base string) int {
		resp, err := http.Get(base + "/api/auth/me")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, base := range []string{a, b, a, b, a, b} {
		if code := get(base); code != 401 {
			t.Fatalf("request %d: %d", i+1, code)
		}
	}
	for _, base := range []string{a, b} {
		if code := get(base); code != 429 {
			t.Fatalf("7th request across instances: %d, want 429", code)
		}
	}
}
