package platform_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/config"
	"github.com/govkit/govkit/docplatform/platform"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
	"github.com/govkit/govkit/internal/testsvc"
)

// TestLoadMe is a bounded load run of GET /api/auth/me: many concurrent
// clients on loopback, each with the cookies of a real login, against the
// platform on SQLite and on PostgreSQL, with the rate limits raised through
// their environment variables. It prints req/s and latency percentiles and
// asserts nothing about speed. It runs only when GOVKIT_LOAD=1:
//
//	GOVKIT_LOAD=1 GOVKIT_TEST_POSTGRES_URL=… go test -run LoadMe -v ./docplatform/platform/
//
// GOVKIT_LOAD_SECONDS (default 5) and GOVKIT_LOAD_CLIENTS (default 32)
// change the run.
func TestLoadMe(t *testing.T) {
	if os.Getenv("GOVKIT_LOAD") != "1" {
		t.Skip("load run: set GOVKIT_LOAD=1")
	}
	seconds, clients := envInt("GOVKIT_LOAD_SECONDS", 5), envInt("GOVKIT_LOAD_CLIENTS", 32)
	for _, db := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "load.db") }},
		{"postgres", func(t *testing.T) string { return testsvc.RequirePostgres(t) }},
	} {
		t.Run(db.name, func(t *testing.T) {
			idp := ssotest.New(t)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			defer front.Close()
			ln := listen(t)
			base := "http://" + ln.Addr().String()
			cfg, err := config.Load(env(map[string]string{
				"SSO_AUTH_SERVER_URL": idp.Server.URL, "SSO_REALM": "test", "SSO_CLIENT_ID": idp.ClientID, "SSO_CLIENT_SECRET": idp.ClientSecret,
				"SSO_REDIRECT_URI": base + "/api/auth/callback", "FRONTEND_URL": front.URL, "COOKIE_SECRET": strings.Repeat("k", 40),
				"NODE_ENV": "test", "DATABASE_URL": db.url(t),
				"THROTTLE_GLOBAL_LIMIT": "1000000000", "THROTTLE_AUTH_LIMIT": "1000000000",
			}), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			// Logging stays on (JSON, discarded) so its cost is in the figures.
			p, err := platform.Start(context.Background(), cfg, "", ln, slog.New(slog.NewJSONHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(context.Background())

			transport := &http.Transport{MaxIdleConnsPerHost: clients}
			cookies := make([]http.CookieJar, clients)
			for i := range cookies {
				idp.SetUser(ssotest.User{Subject: fmt.Sprintf("load-%d", i), Name: "Load", Email: fmt.Sprintf("l%d@example.org", i)})
				jar, _ := cookiejar.New(nil)
				c := &http.Client{Jar: jar}
				resp, err := c.Get(base + "/api/auth/login")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.Request.URL.String() != front.URL {
					t.Fatalf("login ended at %s", resp.Request.URL)
				}
				cookies[i] = jar
			}
			deadline := time.Now().Add(time.Duration(seconds) * time.Second)
			lat := make([][]time.Duration, clients)
			var wg sync.WaitGroup
			var failures sync.Map
			start := time.Now()
			for i := 0; i < clients; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					c := &http.Client{Jar: cookies[i], Transport: transport}
					for time.Now().Before(deadline) {
						t0 := time.Now()
						resp, err := c.Get(base + "/api/auth/me")
						if err != nil {
							failures.Store(err.Error(), true)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != 200 {
							failures.Store(resp.Status, true)
							return
						}
						lat[i] = append(lat[i], time.Since(t0))
					}
				}(i)
			}
			wg.Wait()
			elapsed := time.Since(start)
			failures.Range(func(k, _ any) bool { t.Errorf("request failed: %v", k); return true })
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			slices.Sort(all)
			if len(all) == 0 {
				t.Fatal("no requests completed")
			}
			pct := func(p float64) time.Duration { return all[int(float64(len(all)-1)*p)] }
			fmt.Printf("load GET /api/auth/me on %s: %d clients, %s: %d requests, %.0f req/s, p50 %s, p99 %s\n",
				db.name, clients, elapsed.Round(time.Millisecond), len(all), float64(len(all))/elapsed.Seconds(),
				pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond))
		})
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
