package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNotifyUpgradeIsWired(t *testing.T) {
	code, out, _ := runCapture("notify", "-h")
	if code != 0 || !strings.Contains(out, "upgrade") {
		t.Fatalf("notify -h: exit %d, lists no upgrade:\n%s", code, out)
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "src", "config.local.json")
	if err := os.WriteFile(cfg, []byte("{\n  \"notification\": {\n    \"logSuccessfulBroadcastDispatches\": true\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCapture("notify", "upgrade", "--dir", dir, "--from", "2", "--to", "3")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	data, _ := os.ReadFile(cfg)
	if !strings.Contains(string(data), "guaranteedBroadcastPushDispatchProcessing") {
		t.Errorf("the file was not rewritten:\n%s", data)
	}

	code, _, errOut = runCapture("notify", "upgrade", "--dir", dir, "--from", "2", "--to", "4")
	if code != 2 || !strings.Contains(errOut, "--from 3 --to 4") {
		t.Errorf("a skip: exit %d\n%s", code, errOut)
	}
}
