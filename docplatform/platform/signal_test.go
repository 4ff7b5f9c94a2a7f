package platform_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/platform"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
	"github.com/govkit/govkit/docplatform/upload"
)

// TestServeChild is the server process of the tests that run the
// platform as a real process (TestServeStopsOnSIGTERM, the replica
// tests); it runs only when one of them starts it.
//
// With GOVKIT_TEST_UPLOAD_STOP naming a state of package upload
// (receiving, stored, completed, committed), the first upload to reach it
// stops there: the process prints "upload stopped at <state>" and waits
// for a line on its standard input before going on, so the test can kill
// it at that exact step (or let it go on) without guessing at timing.
func TestServeChild(t *testing.T) {
	if os.Getenv("GOVKIT_SERVE_CHILD") != "1" {
		t.Skip("started by the tests that run the platform as a process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var hooks platform.Hooks
	if name := os.Getenv("GOVKIT_TEST_UPLOAD_STOP"); name != "" {
		at, ok := upload.ParseState(name)
		if !ok {
			t.Fatalf("GOVKIT_TEST_UPLOAD_STOP=%q names no upload state", name)
		}
		var once sync.Once
		hooks.Upload = func(_ context.Context, s upload.State) {
			if s != at {
				return
			}
			once.Do(func() {
				fmt.Printf("upload stopped at %s\n", s)
				bufio.NewReader(os.Stdin).ReadString('\n')
			})
		}
	}
	os.Exit(platform.ServeWithHooks(ctx, []string{"--data-dir", os.Getenv("GOVKIT_SERVE_DIR"), "--listen", "127.0.0.1:0"}, os.Getenv, os.Stdout, os.Stderr, hooks))
}

// logURL is the url of a log line with the message msg, such as serve's
// "listening".
func logURL(line, msg string) (string, bool) {
	var l struct{ Msg, URL string }
	if json.Unmarshal([]byte(line), &l) != nil || l.Msg != msg || l.URL == "" {
		return "", false
	}
	return l.URL, true
}

// A real process gets a real SIGTERM: it stops serving and exits 0.
func TestServeStopsOnSIGTERM(t *testing.T) {
	idp := ssotest.New(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
	cmd.Env = append(os.Environ(),
		"GOVKIT_SERVE_CHILD=1", "GOVKIT_SERVE_DIR="+dir,
		"SSO_AUTH_SERVER_URL="+idp.Server.URL, "SSO_REALM=test",
		"SSO_CLIENT_ID="+idp.ClientID, "SSO_CLIENT_SECRET="+idp.ClientSecret,
		"SSO_REDIRECT_URI=http://127.0.0.1/api/auth/callback", "FRONTEND_URL=http://127.0.0.1:3000",
		"COOKIE_SECRET="+strings.Repeat("s", 32), "DATABASE_URL="+filepath.Join(dir, "p.db"))
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			if u, ok := logURL(sc.Text(), "listening"); ok {
				lines <- u
			}
		}
	}()
	var base string
	select {
	case base = <-lines:
	case <-time.After(60 * time.Second):
		t.Fatal("child never listened")
	}
	resp, err := http.Get(base + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("health: %s", resp.Status)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("child did not exit after SIGTERM")
	}
}
