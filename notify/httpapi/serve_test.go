package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/httpapi"
)

// syncBuffer is a log sink safe for the server's goroutines.
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

func deployment(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRun(t *testing.T) {
	t.Run("serves a deployment directory on the embedded store and shuts down on cancel", func(t *testing.T) {
		dir := deployment(t, map[string]string{
			"src/config.local.json": `{"host": "127.0.0.1", "port": 0, "email": {"smtp": {"host": "127.0.0.1", "port": 1}}, "queue": {"connection": null}}`,
		})
		data := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan string, 1)
		done := make(chan error, 1)
		logs := &syncBuffer{}
		go func() {
			done <- httpapi.Run(ctx, httpapi.RunOptions{Dir: dir, DataDir: data, Env: map[string]string{}, Log: logs, RSABits: 2048,
				MetricsListen: "127.0.0.1:0", Ready: func(addr string) { ready <- addr }})
		}()
		var url string
		select {
		case url = <-ready:
		case err := <-done:
			t.Fatalf("Run: %v\n%s", err, logs.String())
		case <-time.After(60 * time.Second):
			t.Fatal("not ready")
		}
		resp, err := http.Get(url + "/api/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("health %d", resp.StatusCode)
		}
		// --metrics-listen: the metrics on a listener of their own, for
		// any scraper
		m := regexp.MustCompile(`"service":"metrics","url":"([^"]+)"`).FindStringSubmatch(logs.String())
		if m == nil {
			t.Fatalf("no metrics listener logged:\n%s", logs.String())
		}
		resp, err = http.Get(m[1])
		if err != nil {
			t.Fatal(err)
		}
		metricsText, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(metricsText), `notify_http_requests_total{route="GET /api/health",status="200"} 1`) {
			t.Fatalf("metrics listener:\n%s", metricsText)
		}
		// the access token in a query string is never logged
		resp, err = http.Get(url + "/api/subscriptions?access_token=SECRET-TOKEN-VALUE&unsubscriptionCode=SECRET-CODE-VALUE")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
		if strings.Contains(logs.String(), "SECRET-TOKEN-VALUE") || strings.Contains(logs.String(), "SECRET-CODE-VALUE") {
			t.Fatal("a token or code reached the log")
		}
		if !strings.Contains(logs.String(), `"path":"/api/health"`) {
			t.Fatalf("request not logged:\n%s", logs.String())
		}
		if _, err := os.Stat(filepath.Join(data, "notify-db")); err != nil {
			t.Fatalf("embedded store not in the data dir: %v", err)
		}
		// one line per external part: what, where, and which file said so
		local := filepath.Join(dir, "src", "config.local.json")
		for _, want := range []string{
			fmt.Sprintf(`"msg":"uses","part":"store","kind":"embedded","addr":%q,"from":"default"`, filepath.Join(data, "notify-db")),
			fmt.Sprintf(`"msg":"uses","part":"queue","kind":"embedded",`),
			fmt.Sprintf(`"msg":"uses","part":"SMTP","kind":"smtp","addr":"127.0.0.1:1","from":%q`, "file "+local),
			`"msg":"uses","part":"inbound SMTP","kind":"listener","addr":"127.0.0.1:0 (no email.inboundSmtpServer.domain`,
		} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("start-up log lacks %s\n%s", want, logs.String())
			}
		}
	})
	t.Run("a node whose Redis does not answer starts, says so and fails its health check", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close() // nothing listens there now
		dir := deployment(t, map[string]string{
			"src/config.local.json": fmt.Sprintf(`{"host": "127.0.0.1", "port": 0, "queue": {"connection": {"host": "127.0.0.1", "port": %d, "connectTimeout": 500}}}`, port),
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ready := make(chan string, 1)
		done := make(chan error, 1)
		logs := &syncBuffer{}
		go func() {
			done <- httpapi.Run(ctx, httpapi.RunOptions{Dir: dir, DataDir: t.TempDir(), Env: map[string]string{}, Log: logs, RSABits: 2048,
				Ready: func(addr string) { ready <- addr }})
		}()
		var url string
		select {
		case url = <-ready:
		case err := <-done:
			t.Fatalf("Run: %v\n%s", err, logs.String())
		case <-time.After(60 * time.Second):
			t.Fatal("not ready")
		}
		if !strings.Contains(logs.String(), "queue backend unreachable") || !strings.Contains(logs.String(), `"setting":"queue.connection"`) {
			t.Errorf("start-up log does not name queue.connection:\n%s", logs.String())
		}
		resp, err := http.Get(url + "/api/health")
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error map[string]struct{ Status string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || body.Error["redis"].Status != "down" {
			t.Fatalf("health %d, %+v; want 503 with redis down", resp.StatusCode, body)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	})
	refusals := []struct {
		name, file, content string
		env                 map[string]string
		mention             string
	}{
		{"a renamed key of an older version refuses to start", "src/config.local.json", `{"smtp": {"host": "x"}}`, nil, "email.smtp"},
		{"the slave node role refuses to start naming secondary", "src/config.local.json", `{}`, map[string]string{"NOTIFYBC_NODE_ROLE": "slave"}, "secondary"},
		{"a datasource url refuses to start naming uri", "src/datasources/db.datasource.local.json", `{"url": "mongodb://x"}`, nil, "uri"},
		{"production without an SMTP server of its own refuses to start naming email.smtp", "src/config.local.json", `{"queue": {"connection": null}}`,
			map[string]string{"NODE_ENV": "production"}, "email.smtp.host"},
		{"a deployment directory without src refuses to start", "other/config.local.json", `{}`, nil, "does not exist"},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			dir := deployment(t, map[string]string{c.file: c.content})
			env := c.env
			if env == nil {
				env = map[string]string{}
			}
			err := httpapi.Run(context.Background(), httpapi.RunOptions{Dir: dir, DataDir: t.TempDir(), Env: env, Log: &syncBuffer{}})
			if err == nil || !strings.Contains(err.Error(), c.mention) {
				t.Fatalf("err %v, want one naming %q", err, c.mention)
			}
		})
	}
	t.Run("a --config-dir that does not exist refuses to start, in every mode", func(t *testing.T) {
		for _, env := range []string{"", "development", "production"} {
			err := httpapi.Run(context.Background(), httpapi.RunOptions{ConfigDir: filepath.Join(t.TempDir(), "nope"), DataDir: t.TempDir(),
				Env: map[string]string{"NODE_ENV": env}, Log: &syncBuffer{}})
			if err == nil || !strings.Contains(err.Error(), "--config-dir") || !strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("NODE_ENV=%q: err %v", env, err)
			}
		}
	})
	t.Run("outside production the test-mail service stays, with a warning", func(t *testing.T) {
		dir := deployment(t, map[string]string{"src/config.local.json": `{"host": "127.0.0.1", "port": 0, "queue": {"connection": null}, "email": {"inboundSmtpServer": {"enabled": false}}}`})
		ctx, cancel := context.WithCancel(context.Background())
		logs := &syncBuffer{}
		err := httpapi.Run(ctx, httpapi.RunOptions{Dir: dir, DataDir: t.TempDir(), Env: map[string]string{"NODE_ENV": "development"}, Log: logs, RSABits: 2048,
			Ready: func(string) { cancel() }})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !strings.Contains(logs.String(), `"part":"SMTP","kind":"test-mail"`) || !strings.Contains(logs.String(), "email.smtp.host is not set") {
			t.Fatalf("log:\n%s", logs.String())
		}
	})
}

func TestRunWithTLS(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "localhost"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, _ := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	dir := deployment(t, map[string]string{
		"src/config.local.json": `{"host": "127.0.0.1", "port": 0, "queue": {"connection": null}}`,
		"server/certs/key.pem":  string(keyPEM),
		"server/certs/cert.pem": string(certPEM),
	})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- httpapi.Run(ctx, httpapi.RunOptions{Dir: dir, DataDir: t.TempDir(), Env: map[string]string{}, Log: &syncBuffer{}, RSABits: 2048,
			Ready: func(addr string) { ready <- addr }})
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("not ready")
	}
	t.Run("server/certs/key.pem and cert.pem turn TLS on", func(t *testing.T) {
		if !strings.HasPrefix(url, "https://") {
			t.Fatalf("url %s", url)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(certPEM)
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := c.Get(url + "/api/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRunOIDCFunctionsFromJS serves a deployment whose config.local.js
// defines oidc.isAdmin and oidc.isAuthorizedUser as JavaScript functions,
// as NotifyBC deployments do.
func TestRunOIDCFunctionsFromJS(t *testing.T) {
	p := newOIDCProvider(t)
	dir := deployment(t, map[string]string{
		"src/config.local.js": `module.exports = {
  host: '127.0.0.1',
  port: 0,
  adminIps: [],
  queue: { connection: null },
  outboundRequests: { allow: ['127.0.0.1'] }, // the provider is on loopback
  oidc: {
    discoveryUrl: process.env.IDP + '/.well-known/openid-configuration',
    isAdmin: function (user) { return user.roles && user.roles.indexOf('admin') >= 0; },
    isAuthorizedUser: function (user) { return !!user.email_verified; },
  },
};`,
	})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- httpapi.Run(ctx, httpapi.RunOptions{Dir: dir, DataDir: t.TempDir(), Env: map[string]string{"IDP": p.url}, Log: &syncBuffer{}, RSABits: 2048,
			Ready: func(addr string) { ready <- addr }})
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("not ready")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	exp := time.Now().Add(time.Hour).Unix()
	for _, c := range []struct {
		name   string
		claims map[string]any
		role   string
	}{
		{"isAdmin from the .js file makes an Admin", map[string]any{"email": "a@x.y", "roles": []string{"admin"}, "exp": exp}, "Admin"},
		{"isAuthorizedUser from the .js file admits a verified user", map[string]any{"email": "u@x.y", "email_verified": true, "exp": exp}, "AuthenticatedUser"},
		{"isAuthorizedUser from the .js file refuses an unverified user", map[string]any{"email": "u@x.y", "exp": exp}, "Anonymous"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", url+"/api/administrators/whoami", nil)
			req.Header.Set("Authorization", "Bearer "+p.token(t, p.key, c.claims))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&m)
			if m["role"] != c.role {
				t.Fatalf("got %v", m)
			}
		})
	}
}
