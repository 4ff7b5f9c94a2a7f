package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/httpapi"
)

// serveUntil runs serve on a deployment until the returned stop is
// called, and returns its base URL.
func serveUntil(t *testing.T, dir, data string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs := &syncBuffer{}
	go func() {
		done <- httpapi.Run(ctx, httpapi.RunOptions{Dir: dir, DataDir: data, Env: map[string]string{}, Log: logs, RSABits: 2048,
			Ready: func(addr string) { ready <- addr }})
	}()
	select {
	case url := <-ready:
		return url, func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	case err := <-done:
		t.Fatalf("Run: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("not ready")
	}
	return "", nil
}

// TestCopyStoreMovesAOneMachineInstallToMongoDB: a deployment on the
// embedded store with subscriptions and an administrator is copied with
// `govkit notify copy-store` into a MongoDB-protocol server; serve on that
// server then has the same subscriptions, the administrator signs in, and
// a second copy is refused without --drop.
func TestCopyStoreMovesAOneMachineInstallToMongoDB(t *testing.T) {
	target := strings.TrimSuffix(testsvc.RequireFerretDB(t), "/") + "/notify-moved"
	src := deployment(t, map[string]string{
		"src/config.local.json": `{"host": "127.0.0.1", "port": 0, "queue": {"connection": null}, "email": {"inboundSmtpServer": {"enabled": false}}}`,
	})
	data := t.TempDir()
	url, stop := serveUntil(t, src, data)
	for i := range 3 { // from 127.0.0.1, the default admin address
		b, _ := json.Marshal(map[string]any{"serviceName": "roads", "channel": "email", "userChannelId": fmt.Sprintf("r%d@example.org", i), "state": "confirmed"})
		resp, err := http.Post(url+"/api/subscriptions", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("subscribe: %d", resp.StatusCode)
		}
	}
	stop()
	run := func(main func(context.Context, []string, map[string]string, *bytes.Buffer, *bytes.Buffer) int, args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := main(context.Background(), args, map[string]string{}, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	copyStore := func(ctx context.Context, args []string, env map[string]string, out, errOut *bytes.Buffer) int {
		return httpapi.CopyStoreMain(ctx, args, env, out, errOut)
	}
	var adminOut, adminErr bytes.Buffer
	if code := httpapi.AdminMain(context.Background(), []string{"add", "--dir", src, "--data-dir", data, "--email", "ops@example.org", "--password", "Moved-Passw0rd!"},
		map[string]string{}, strings.NewReader(""), &adminOut, &adminErr); code != 0 {
		t.Fatalf("admin add: %s", adminErr.String())
	}

	code, out := run(copyStore, "--dir", src, "--data-dir", data, "--to", target)
	if code != 0 || !strings.Contains(out, "subscription ") || !strings.Contains(out, "3 documents") || !strings.Contains(out, "administrator ") {
		t.Fatalf("copy-store: exit %d\n%s", code, out)
	}
	if code, out := run(copyStore, "--dir", src, "--data-dir", data, "--to", target); code != 1 || !strings.Contains(out, "not empty") {
		t.Fatalf("a second copy without --drop: exit %d\n%s", code, out)
	}
	if code, out := run(copyStore, "--dir", src, "--data-dir", data, "--to", target, "--drop"); code != 0 {
		t.Fatalf("a second copy with --drop: exit %d\n%s", code, out)
	}

	moved := deployment(t, map[string]string{
		"src/config.local.json":                    `{"host": "127.0.0.1", "port": 0, "adminIps": [], "queue": {"connection": null}, "email": {"inboundSmtpServer": {"enabled": false}}}`,
		"src/datasources/db.datasource.local.json": fmt.Sprintf(`{"uri": %q}`, target),
	})
	url, stop = serveUntil(t, moved, t.TempDir())
	defer stop()
	b, _ := json.Marshal(map[string]string{"email": "ops@example.org", "password": "Moved-Passw0rd!"})
	resp, err := http.Post(url+"/api/administrators/login", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ Token string }
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if resp.StatusCode != 200 || tok.Token == "" {
		t.Fatalf("the copied administrator cannot sign in: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("GET", url+"/api/subscriptions/count", nil)
	req.Header.Set("Authorization", tok.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var count struct{ Count int }
	json.NewDecoder(resp.Body).Decode(&count)
	resp.Body.Close()
	if count.Count != 3 {
		t.Fatalf("subscriptions after the move: %d, want 3", count.Count)
	}
}
