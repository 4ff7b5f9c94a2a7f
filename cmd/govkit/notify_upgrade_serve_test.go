package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/embeddedmongo"
)

// A v1 deployment directory taken through all five upgrade steps by the
// real command is served by `govkit notify serve` with its own settings in
// force. NODE_ENV is production, not test, so the local files are read.
//
// The fixture reads the listening address and the database host from the
// environment (process.env in its .js files), as a deployment on a platform
// does; the test sets only those variables: HOST and PORT to a free loopback
// port, INBOUND_SMTP_PORT to another (the inbound SMTP server listens too),
// and DATABASE_SERVICE_NAME, DB_PORT and MONGODB_DATABASE to a
// document store of its own, because the MongoDB host the fixture names
// (localhost:27017) does not exist here. Everything else comes from the
// upgraded files.
func TestNotifyServeRunsAnUpgradedV1Deployment(t *testing.T) {
	dir := t.TempDir()
	upgradeServeCopyDir(t, filepath.Join("..", "..", "notify", "upgrade", "testdata", "chain", "v1"), dir)
	t.Setenv("NODE_ENV", "production")
	t.Setenv("NOTIFYBC_NODE_ROLE", "")
	for from := 1; from <= 5; from++ {
		code, out, errOut := runCapture("notify", "upgrade", "--dir", dir, "--from", strconv.Itoa(from), "--to", strconv.Itoa(from+1))
		if code != 0 {
			t.Fatalf("upgrade step %d: exit %d\n%s%s", from, code, out, errOut)
		}
	}

	store, err := embeddedmongo.Start(context.Background(), embeddedmongo.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Stop(context.Background()) })
	storeURL, err := url.Parse(store.URI())
	if err != nil {
		t.Fatal(err)
	}
	const database = "notify-upgraded"
	port := upgradeServeFreePort(t)
	t.Setenv("HOST", "127.0.0.1")
	t.Setenv("PORT", port)
	t.Setenv("INBOUND_SMTP_PORT", upgradeServeFreePort(t))
	t.Setenv("DATABASE_SERVICE_NAME", storeURL.Hostname())
	t.Setenv("DB_PORT", storeURL.Port())
	t.Setenv("MONGODB_DATABASE", database)

	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	stdout := &upgradeServeWatch{want: "notify: serving", seen: make(chan struct{})}
	var stderr upgradeServeBuffer
	var exitCode int
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		exitCode = run(ctx, []string{"notify", "serve", "--dir", dir, "--data-dir", dataDir}, stdio{strings.NewReader(""), stdout, &stderr})
	}()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	select {
	case <-stdout.seen:
	case <-exited:
		t.Fatalf("serve exited %d before serving\nstdout:\n%s\nstderr:\n%s", exitCode, stdout.String(), stderr.String())
	}

	base := "http://" + net.JoinHostPort("127.0.0.1", port) + "/api"
	client := &http.Client{Timeout: 30 * time.Second}
	// Serving is reported once the listener is open, so the first try
	// normally answers; a few more cover a slow machine without making the
	// test depend on how slow. Refused connections mean serve listens
	// elsewhere: HOST and PORT of the environment file are not in force.
	var health map[string]any
	for try := 1; ; try++ {
		status, body, err := upgradeServeRequest(client, "GET", base+"/health", nil, nil)
		if err == nil && status == http.StatusOK {
			if err := json.Unmarshal(body, &health); err != nil {
				t.Fatalf("health: %v\n%s", err, body)
			}
			break
		}
		if try == 20 {
			t.Fatalf("GET /api/health never answered 200: last %d %s %v\nstdout:\n%s\nstderr:\n%s", status, body, err, stdout.String(), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if health["status"] != "ok" {
		t.Errorf("health: %v", health)
	}

	forwardedFor := func(ip string) http.Header { return http.Header{"X-Forwarded-For": {ip}} }
	cases := []struct {
		name           string
		method, path   string
		header         http.Header
		body           any
		status         int
		bodyContaining string
	}{
		{"adminIps: a client in 10.0.0.0/8 behind the trusted proxy reads configurations",
			"GET", "/configurations", forwardedFor("10.20.30.40"), nil, http.StatusOK, "["},
		{"trustedReverseProxyIps: a client outside adminIps behind the trusted proxy is anonymous",
			"GET", "/configurations", forwardedFor("192.0.2.7"), nil, http.StatusForbidden, ""},
		{"sms.providerSettings.swift.notifyBCSwiftKey: a Swift reply with another key is refused",
			"POST", "/subscriptions/swift", nil, map[string]any{"notifyBCSwiftKey": "not-the-key", "PhoneNumber": "2505550100"}, http.StatusForbidden, ""},
		{"sms.providerSettings.swift.notifyBCSwiftKey: a Swift reply with the deployment's key is accepted",
			"POST", "/subscriptions/swift", nil, map[string]any{"notifyBCSwiftKey": "swift-shared-key", "PhoneNumber": "2505550100"}, http.StatusOK, "ok"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			if c.body != nil {
				body, _ = json.Marshal(c.body)
			}
			status, got, err := upgradeServeRequest(client, c.method, base+c.path, c.header, body)
			if err != nil {
				t.Fatal(err)
			}
			if status != c.status || !strings.Contains(string(got), c.bodyContaining) {
				t.Errorf("%s %s: got %d %s, want %d containing %q", c.method, c.path, status, got, c.status, c.bodyContaining)
			}
		})
	}

	// The datasource file is in force: the service keeps its records in
	// the database the file names, on the host it names, and started no
	// embedded store of its own in the data directory.
	mc, err := mongo.Connect(options.Client().ApplyURI(store.URI()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mc.Disconnect(context.Background()) }()
	n, err := mc.Database(database).Collection(notify.CollConfiguration).CountDocuments(context.Background(), bson.D{{Key: "name", Value: "rsa"}})
	if err != nil || n != 1 {
		t.Errorf("rsa key pair in %s.%s: %d, %v; want 1", database, notify.CollConfiguration, n, err)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
		t.Errorf("serve used its own store in the data directory: %v", entries)
	}

	cancel()
	<-exited
	if exitCode != 0 {
		t.Errorf("serve exited %d after its context ended, want 0\nstderr:\n%s", exitCode, stderr.String())
	}
}

func upgradeServeRequest(client *http.Client, method, u string, header http.Header, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp.StatusCode, got, err
}

// upgradeServeFreePort returns a port nobody listens on at the moment; serve
// takes its port from the config, so it cannot be handed a listener.
func upgradeServeFreePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

func upgradeServeCopyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// upgradeServeBuffer is written by the serving goroutine and read by the test.
type upgradeServeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *upgradeServeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *upgradeServeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// upgradeServeWatch closes seen once its content contains want.
type upgradeServeWatch struct {
	upgradeServeBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func (b *upgradeServeWatch) Write(p []byte) (int, error) {
	n, err := b.upgradeServeBuffer.Write(p)
	if strings.Contains(b.String(), b.want) {
		b.once.Do(func() { close(b.seen) })
	}
	return n, err
}
