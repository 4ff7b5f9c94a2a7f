package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/platform"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestServeRefusesIncompleteConfiguration(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		missing []string
	}{
		{"nothing set: every required variable is listed at once", nil, []string{"SSO_AUTH_SERVER_URL", "SSO_REALM", "SSO_CLIENT_ID", "SSO_CLIENT_SECRET", "SSO_REDIRECT_URI", "FRONTEND_URL", "COOKIE_SECRET"}},
		{"everything but COOKIE_SECRET: refuses to start", map[string]string{
			"SSO_AUTH_SERVER_URL": "http://127.0.0.1:1", "SSO_REALM": "r", "SSO_CLIENT_ID": "c", "SSO_CLIENT_SECRET": "s",
			"SSO_REDIRECT_URI": "http://127.0.0.1/api/auth/callback", "FRONTEND_URL": "http://127.0.0.1:3000",
		}, []string{"COOKIE_SECRET: required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := platform.Serve(context.Background(), []string{"--data-dir", t.TempDir()}, env(tc.env), &out, &errOut)
			if code != 2 {
				t.Fatalf("exit %d, want 2", code)
			}
			for _, m := range tc.missing {
				if !strings.Contains(errOut.String(), m) {
					t.Errorf("%s not named in:\n%s", m, errOut.String())
				}
			}
		})
	}
}

// logLine is the url of the first line of logs with the message msg.
func logLine(logs, msg string) (string, bool) {
	for _, line := range strings.Split(logs, "\n") {
		if u, ok := logURL(line, msg); ok {
			return u, true
		}
	}
	return "", false
}

func TestServeRunsAndShutsDownOnCancel(t *testing.T) {
	idp := ssotest.New(t)
	dir := t.TempDir()
	vars := map[string]string{
		// The full-endpoint form of SSO_AUTH_SERVER_URL, as some deployments write it.
		"SSO_AUTH_SERVER_URL": idp.Issuer + "/protocol/openid-connect", "SSO_REALM": "ignored",
		"SSO_CLIENT_ID": idp.ClientID, "SSO_CLIENT_SECRET": idp.ClientSecret,
		"SSO_REDIRECT_URI": "http://127.0.0.1/api/auth/callback", "FRONTEND_URL": "http://127.0.0.1:3000",
		"COOKIE_SECRET": strings.Repeat("k", 40), "DATABASE_URL": filepath.Join(dir, "db", "p.db"), "NODE_ENV": "test",
		"METRICS_LISTEN": "127.0.0.1:0",
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- platform.Serve(ctx, []string{"--data-dir", dir, "--listen", "127.0.0.1:0"}, env(vars), &out, &errOut)
	}()
	var base string
	deadline := time.Now().Add(20 * time.Second)
	for base == "" {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never listened: %s", errOut.String())
		}
		base, _ = logLine(errOut.String(), "listening")
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get(base + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health: %s", resp.Status)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err = noFollow.Get(base + "/api/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 302 || !strings.HasPrefix(resp.Header.Get("Location"), idp.Issuer) {
		t.Fatalf("login: %s %s", resp.Status, resp.Header.Get("Location"))
	}
	if !strings.Contains(errOut.String(), "REDIS_URL is not set") {
		t.Error("no warning about per-process counters")
	}
	// The metrics, on their own listener: the health check above is
	// counted, and the database pools are there; the API's port has none.
	metricsURL, ok := logLine(errOut.String(), "metrics listening")
	if !ok {
		t.Fatalf("no metrics URL logged:\n%s", errOut.String())
	}
	resp, err = http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`docplatform_http_requests_total{route="GET /api/health",status="200"} 1`, `go_sql_open_connections{db_name="docplatform_write"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	resp, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "docplatform_http_requests_total") {
		t.Error("the API's own port serves the metrics")
	}
	// one line per external part: what, where, and where the setting came from
	for _, want := range []string{
		fmt.Sprintf(`"msg":"uses","part":"database","kind":"sqlite","addr":%q,"from":"variable DATABASE_URL"`, vars["DATABASE_URL"]),
		`"msg":"uses","part":"redis","kind":"none","addr":"rate-limit counters in this process (one replica only)","from":"default"`,
		fmt.Sprintf(`"msg":"uses","part":"document storage","kind":"directory","addr":%q,"from":"default"`, filepath.Join(dir, "documents")),
		fmt.Sprintf(`"msg":"uses","part":"identity provider","kind":"oidc","addr":%q`, idp.Issuer),
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("start-up log lacks %s\n%s", want, errOut.String())
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after cancel: %s", code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	if _, err := http.Get(base + "/api/health"); err == nil {
		t.Error("still serving after shutdown")
	}
	// A container's log merges both streams: every line is JSON.
	for _, line := range strings.Split(out.String()+errOut.String(), "\n") {
		if line != "" && !json.Valid([]byte(line)) {
			t.Errorf("a line that is not JSON: %q", line)
		}
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
