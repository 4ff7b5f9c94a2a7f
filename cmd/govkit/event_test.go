package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestEventCommands(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"event lists validate and to-date", []string{"event", "-h"}, "", 0, "to-date", ""},
		{"validate accepts a valid event", []string{"event", "validate"}, `{"start_date":"2024-12-01"}`, 0, "1 valid, 0 invalid", ""},
		{"validate reports FILE:LINE: PROPERTY", []string{"event", "validate", "-"}, "\n{\"start_date\":null}", 1, "-:2: start_date: null is not a string", ""},
		{"validate names a bad flag", []string{"event", "validate", "--bogus"}, "", 2, "", "govkit event validate: unknown flag --bogus\n"},
		{"to-date converts in Pacific time", []string{"event", "to-date"}, `{"start_datetime":"2024-12-01T07:59:59Z"}`, 0, `{"start_date":"2024-11-30"}`, ""},
		{"to-date rejects an unknown zone", []string{"event", "to-date", "--tz", "Nowhere/Else"}, "", 2, "", "unknown time zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tt.args, stdio{strings.NewReader(tt.stdin), &out, &errb})
			if code != tt.wantCode || !strings.Contains(out.String(), tt.wantOut) || !strings.Contains(errb.String(), tt.wantErr) {
				t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", code, tt.wantCode, out.String(), tt.wantOut, errb.String(), tt.wantErr)
			}
		})
	}
}
