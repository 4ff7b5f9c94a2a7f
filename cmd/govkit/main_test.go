package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCapture(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, stdio{strings.NewReader(""), &out, &errb})
	return code, out.String(), errb.String()
}

func TestDispatch(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // substring of stdout
		wantErr  string // substring of stderr
	}{
		{"no arguments print usage and exit 2", nil, 2, "", "Usage: govkit"},
		{"unknown command prints usage and exits 2", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"help lists every command", []string{"help"}, 0, "docplatform", ""},
		{"-h prints usage on stdout", []string{"-h"}, 0, "Usage: govkit", ""},
		{"version prints the version", []string{"version"}, 0, "govkit ", ""},
		{"version takes no arguments", []string{"version", "x"}, 2, "", "Usage"},
		{"unknown subcommand of a part exits 2", []string{"notify", "frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"a part without a subcommand prints its usage and exits 2", []string{"event"}, 2, "", "Usage: govkit event"},
		{"dev rejects an unknown flag", []string{"dev", "--bogus"}, 2, "", "flag provided but not defined"},
		{"dev rejects stray arguments", []string{"dev", "extra"}, 2, "", "Usage: govkit dev"},
		{"dev's token lifetime is a Go duration", []string{"dev", "--token-lifetime", "soon"}, 2, "", "invalid value"},
		{"dev's token lifetime is at least a second", []string{"dev", "--token-lifetime", "500ms"}, 2, "", "--token-lifetime must be at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCapture(tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout %q lacks %q", out, tt.wantOut)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tt.wantErr)
			}
		})
	}
}

func TestDevSaysWhatItStartedAndStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stop as soon as everything has started
	var out, errb bytes.Buffer
	code := run(ctx, []string{"dev", "--data-dir", t.TempDir()}, stdio{strings.NewReader(""), &out, &errb})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, p := range devParts() {
		if !strings.Contains(out.String(), p.name) {
			t.Errorf("dev output does not mention %q:\n%s", p.name, out.String())
		}
	}
	if !strings.Contains(out.String(), "stopping") {
		t.Errorf("dev did not say it was stopping:\n%s", out.String())
	}
}
