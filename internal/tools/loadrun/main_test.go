package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary be the floor's server, as loadrun is when
// it runs itself with bare-server.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "bare-server" {
		os.Exit(bareServer(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestSmoke runs the harness end to end on SQLite for 300 requests of the
// floor and of cookie /me: it builds govkit, starts the platform and the
// provider, signs in, seeds a few documents, and checks that the run
// produces a well-formed table row and JSON without errors. It says
// nothing about speed. Only with GOVKIT_LOAD=1 (it builds govkit).
func TestSmoke(t *testing.T) {
	if os.Getenv("GOVKIT_LOAD") != "1" {
		t.Skip("load harness smoke run: set GOVKIT_LOAD=1")
	}
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	var out, errs bytes.Buffer
	args := []string{"-store", "sqlite", "-scenarios", "bare,cookie-me", "-requests", "300", "-d", "10m",
		"-warmup", "0", "-c", "4", "-docs", "3", "-json", jsonPath}
	if code := run(context.Background(), args, &out, &errs); code != 0 {
		t.Fatalf("loadrun exited %d\nstdout:\n%s\nstderr:\n%s", code, &out, &errs)
	}
	var row []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "| cookie GET /api/auth/me | sqlite |") {
			row = strings.Split(strings.Trim(line, "| "), " | ")
		}
	}
	if len(row) != 9 || strings.Trim(row[2], "0123456789,") != "" || !strings.HasSuffix(row[3], " ms") || !strings.HasSuffix(row[8], " MiB") {
		t.Fatalf("no well-formed cookie /me row (scenario, store, req/s, p50, p99, CPU, ratio, DB CPU, RSS) in:\n%s", &out)
	}
	var rep report
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want bare and cookie-me: %s", len(rep.Results), b)
	}
	for _, r := range rep.Results {
		if r.Requests < 300 || r.Errors != 0 || r.Store != "sqlite" || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("result %+v: want at least 300 requests, no errors, p50 ≤ p99", r)
		}
	}
}
