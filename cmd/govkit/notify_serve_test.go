package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNotifyServeCommand(t *testing.T) {
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "src", "config.local.json"), []byte(`{"smsServiceProvider": "swift", "port": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"notify lists serve", []string{"notify", "-h"}, 0, "serve", ""},
		{"notify lists admin", []string{"notify", "-h"}, 0, "add|set-password|list|remove", ""},
		{"notify lists check-config", []string{"notify", "-h"}, 0, "check-config", ""},
		{"docplatform lists check-config", []string{"docplatform", "-h"}, 0, "check-config", ""},
		{"a --config-dir that does not exist is refused", []string{"notify", "serve", "--config-dir", filepath.Join(bad, "nope"), "--data-dir", t.TempDir()}, 2, "", "does not exist"},
		{"admin without a command is a usage error", []string{"notify", "admin"}, 2, "", "set-password"},
		{"an unknown flag is a usage error", []string{"notify", "serve", "--bogus"}, 2, "", "govkit notify serve: unknown flag --bogus\n"},
		{"stray arguments are a usage error", []string{"notify", "serve", "extra"}, 2, "", "govkit notify serve: unexpected argument \"extra\"\n"},
		{"config problems are all reported and the service does not start", []string{"notify", "serve", "--dir", bad, "--data-dir", t.TempDir()}, 2, "", "sms.provider"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCapture(c.args...)
			if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.err) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
			}
		})
	}
}
