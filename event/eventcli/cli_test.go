package eventcli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCmd(t *testing.T, cmd func(context.Context, []string, Streams) int, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cmd(context.Background(), args, Streams{strings.NewReader(stdin), &out, &errb})
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateInputs(t *testing.T) {
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		wantOut  string // exact stdout, with FILE standing for the file name
	}{
		{"a single valid object", `{"start_date":"2024-12-01"}`, nil, 0,
			"1 file: 1 record, 1 valid, 0 invalid (0 problems)\n"},
		{"a single object spanning lines reports the line it starts on", "\n\n{\n  \"start_date\": \"2024-02-30\",\n  \"end_date\": null\n}\n", nil, 1,
			"-:3: start_date: \"2024-02-30\": not a real day of that month and year (rule 5)\n-:3: end_date: null is not a string: leave the property out instead (rule 8)\n1 file: 1 record, 0 valid, 1 invalid (2 problems)\n"},
		{"NDJSON: each line is a record; blank lines are skipped", "{\"start_date\":\"2024-12-01\"}\n\n{\"start_date\":\"2023-02-29\"}\r\n{\"start_datetime\":\"2024-12-01T9:00:00Z\"}\n", nil, 1,
			"-:3: start_date: \"2023-02-29\": not a real day of that month and year (rule 5)\n1 file: 3 records, 2 valid, 1 invalid (1 problem)\n"},
		{"NDJSON: a broken line breaks only itself", "{\"start_date\":\"2024-12-01\"}\n{\"start_date\":\"2024-12-01\"\n{\"start_date\":\"2024-12-02\"}\n", nil, 1,
			"-:2: (record): invalid JSON at the end: expected ',' or '}' after a value (rule json)\n1 file: 3 records, 2 valid, 1 invalid (1 problem)\n"},
		{"NDJSON: a line that is not an object is an invalid record", "{\"start_date\":\"2024-12-01\"}\n[1]\nhello\n", nil, 1,
			"-:2: (record): the record is an array, not a JSON object (rule json)\n-:3: (record): invalid JSON at byte 1 ('h'): expected a value (rule json)\n1 file: 3 records, 1 valid, 2 invalid (2 problems)\n"},
		{"an array spanning lines reports the line each record starts on", "[\n  {\"start_date\": \"2024-12-01\"},\n  {\n    \"start_datetime\": \"2024-12-01t10:00:00Z\"\n  },\n  {\"start_date\": \"2024-12-01\", \"x\": 1}\n]\n", nil, 1,
			"-:3: start_datetime: \"2024-12-01t10:00:00Z\": must be YYYY-MM-DDTHH:MM:SS[.F]Z in UTC (uppercase T and Z, hour of one or two digits, 1-7 fraction digits) (rule 5)\n-:6: x: unknown property; an Event has only start_date, end_date, start_datetime, end_datetime (rule 6)\n1 file: 3 records, 1 valid, 2 invalid (2 problems)\n"},
		{"an array element that is not an object is an invalid record", `[{"start_date":"2024-12-01"}, "2024-12-01", 42, null]`, nil, 1,
			"-:1: (record): the record is a string, not a JSON object (rule json)\n-:1: (record): the record is a number, not a JSON object (rule json)\n-:1: (record): the record is null, not a JSON object (rule json)\n1 file: 4 records, 1 valid, 3 invalid (3 problems)\n"},
		{"an empty array has no records", "[ ]", nil, 0, "1 file: 0 records, 0 valid, 0 invalid (0 problems)\n"},
		{"an empty input has no records", "", nil, 0, "1 file: 0 records, 0 valid, 0 invalid (0 problems)\n"},
		{"an array missing a comma ends the file with one problem", "[{\"start_date\":\"2024-12-01\"}\n {\"start_date\":\"2024-12-02\"}]", nil, 1,
			"-:2: (record): invalid JSON array: expected ',' or ']' after an array element (rule json)\n1 file: 2 records, 1 valid, 1 invalid (1 problem)\n"},
		{"an array with a trailing comma", "[{\"start_date\":\"2024-12-01\"},\n]", nil, 1,
			"-:2: (record): invalid JSON array: trailing comma before ']' (rule json)\n1 file: 2 records, 1 valid, 1 invalid (1 problem)\n"},
		{"an array that is not closed", "[{\"start_date\":\"2024-12-01\"},\n{\"start_date\":\"2024-12-02\"}\n", nil, 1,
			"-:3: (record): invalid JSON array: the array is not closed (missing ']') (rule json)\n1 file: 3 records, 2 valid, 1 invalid (1 problem)\n"},
		{"data after the array", "[{\"start_date\":\"2024-12-01\"}]\n{}", nil, 1,
			"-:2: (record): data after the closing ']' of the array (rule json)\n1 file: 2 records, 1 valid, 1 invalid (1 problem)\n"},
		{"pretty-printed objects one after another", "{\n \"start_date\": \"2024-12-01\"\n}\n{\n \"start_date\": \"2024-12-01\",\n \"start_date\": \"2024-12-01\"\n}\n", nil, 1,
			"-:4: start_date: appears more than once in the object (rule 7)\n1 file: 2 records, 1 valid, 1 invalid (1 problem)\n"},
		{"braces inside strings do not confuse the split", "{\"x\": \"}{\",\n \"start_date\": \"2024-12-01\"}\n", nil, 1,
			"-:1: x: unknown property; an Event has only start_date, end_date, start_datetime, end_datetime (rule 6)\n1 file: 1 record, 0 valid, 1 invalid (1 problem)\n"},
		{"--order reports an end before its start", "{\"start_datetime\":\"2024-12-01T10:00:00Z\",\"end_datetime\":\"2024-12-01T9:00:00Z\"}\n{\"start_datetime\":\"2024-12-01T9:00:00Z\",\"end_datetime\":\"2024-12-01T10:00:00Z\"}\n", []string{"--order"}, 1,
			"-:1: end_datetime: 2024-12-01T9:00:00Z is before the start 2024-12-01T10:00:00Z (rule order)\n1 file: 2 records, 1 valid, 1 invalid (1 problem)\n"},
		{"without --order an end before its start is valid", "{\"start_date\":\"2024-12-02\",\"end_date\":\"2024-12-01\"}\n", nil, 0,
			"1 file: 1 record, 1 valid, 0 invalid (0 problems)\n"},
		{"an unknown key with a newline is quoted on one line", "{\"start_date\":\"2024-12-01\",\"a\\nb\":1}", nil, 1,
			"-:1: \"a\\nb\": unknown property; an Event has only start_date, end_date, start_datetime, end_datetime (rule 6)\n1 file: 1 record, 0 valid, 1 invalid (1 problem)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, Validate, tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if out != tt.wantOut {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tt.wantOut)
			}
		})
	}
}

func TestValidateFilesAndExitCodes(t *testing.T) {
	good := writeFile(t, "good.ndjson", "{\"start_date\":\"2024-12-01\"}\n")
	bad := writeFile(t, "bad.json", "[\n{\"start_date\":\"2024-12-01\"},\n{\"end_date\":\"2024-12-01\",\"start_date\":\"2024-12-01T00:00:00Z\"}\n]")

	code, out, _ := runCmd(t, Validate, "", good, good)
	if code != 0 || out != "2 files: 2 records, 2 valid, 0 invalid (0 problems)\n" {
		t.Errorf("two good files: %d %q", code, out)
	}

	code, out, _ = runCmd(t, Validate, "{}", good, bad, "-")
	want := bad + ":3: start_date: \"2024-12-01T00:00:00Z\": must be YYYY-MM-DD (ten ASCII characters, leading zeroes) (rule 5)\n" +
		"-:1: (record): neither start_date nor start_datetime is present; an event needs exactly one start (rule 1)\n" +
		"3 files: 4 records, 2 valid, 2 invalid (2 problems)\n"
	if code != 1 || out != want {
		t.Errorf("files and stdin: exit %d\n%s\nwant\n%s", code, out, want)
	}

	missing := filepath.Join(t.TempDir(), "missing.json")
	code, out, errOut := runCmd(t, Validate, "", good, missing)
	if code != 2 || !strings.Contains(errOut, "missing.json") || !strings.Contains(out, "1 file: 1 record") {
		t.Errorf("an unreadable file exits 2 after checking the others: %d %q %q", code, out, errOut)
	}
	if !strings.Contains(out, "1 file: 1 record, 1 valid, 0 invalid (0 problems); 1 file could not be read to the end\n") {
		t.Errorf("the summary does not say a file was not read: %q", out)
	}
	code, out, errOut = runCmd(t, Validate, "", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "is a directory") || out != "" {
		t.Errorf("a directory cannot be read: %d %q %q", code, out, errOut)
	}
}

// A missing file is an error, said first and alone: a summary of zero
// files and zero records would read like a clean result.
func TestValidateMissingFileSaysSoWithoutASummary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "events.json")
	for name, cmd := range map[string]func(context.Context, []string, Streams) int{"validate": Validate, "to-date": ToDate} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runCmd(t, cmd, "", missing)
			want := "govkit event " + name + ": open " + missing + ": no such file or directory\n"
			if code != 2 || out != "" || errOut != want {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, %q", code, out, errOut, want)
			}
		})
	}
}

func TestValidateJSONFormat(t *testing.T) {
	in := "{\"start_date\":\"2024-12-01\",\"end_datetime\":null}\n{\"start_date\":\"2024-12-01\"}\n"
	code, out, errOut := runCmd(t, Validate, in, "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var got []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("stdout is not NDJSON: %v\n%s", err, out)
		}
		got = append(got, m)
	}
	want := []map[string]any{
		{"file": "-", "line": 1.0, "property": "end_datetime", "rule": "8", "message": "null is not a string: leave the property out instead"},
		{"file": "-", "line": 1.0, "property": "end_datetime", "rule": "4", "message": "end_datetime (a datetime) cannot go with start_date (a date)"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d objects: %s", len(got), out)
	}
	for i := range want {
		for k, v := range want[i] {
			if got[i][k] != v {
				t.Errorf("object %d: %s = %v, want %v", i, k, got[i][k], v)
			}
		}
		if len(got[i]) != 5 {
			t.Errorf("object %d has keys %v, want exactly file, line, property, rule, message", i, got[i])
		}
	}
	if errOut != "1 file: 2 records, 1 valid, 1 invalid (2 problems)\n" {
		t.Errorf("the summary goes to stderr in json format: %q", errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name    string
		cmd     func(context.Context, []string, Streams) int
		args    []string
		code    int
		wantErr string
	}{
		{"validate: unknown flag", Validate, []string{"--bogus"}, 2, "govkit event validate: unknown flag --bogus\nrun 'govkit help event validate'\n"},
		{"validate: bad format", Validate, []string{"--format", "xml"}, 2, "--format must be text or json"},
		{"validate: format without value", Validate, []string{"--format"}, 2, "govkit event validate: --format needs a value\n"},
		{"to-date: unknown flag", ToDate, []string{"--order"}, 2, "govkit event to-date: unknown flag --order\nrun 'govkit help event to-date'\n"},
		{"to-date: unknown zone", ToDate, []string{"--tz", "Mars/Olympus_Mons"}, 2, "unknown time zone"},
		{"to-date: empty zone", ToDate, []string{"--tz", ""}, 2, "empty zone name"},
		{"validate: -h prints usage and exits 0", Validate, []string{"-h"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tt.cmd, "", tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, tt.code, errOut, tt.wantErr)
			}
			if code == 0 && !strings.Contains(out, "Usage:") {
				t.Fatalf("-h prints usage on stdout: %q", out)
			}
		})
	}
}

func TestToDate(t *testing.T) {
	in := strings.Join([]string{
		`{"start_datetime":"2024-12-01T07:59:59Z"}`,
		`{"start_datetime":"2025-01-01T07:59:59Z","end_datetime":"2025-01-01T08:00:00Z"}`,
		`{"end_date":"2024-12-31","start_date":"2024-12-01"}`,
		`{"start_datetime":"2024-12-01T07:59:59+00:00"}`,
		`{"start_datetime":"2024-11-03T08:30:00Z","end_datetime":"2024-11-03T09:30:00Z"}`,
		`{"start_datetime":"0000-01-01T00:00:00Z"}`,
	}, "\n")
	code, out, errOut := runCmd(t, ToDate, in)
	wantOut := `{"start_date":"2024-11-30"}
{"start_date":"2024-12-31","end_date":"2025-01-01"}
{"start_date":"2024-12-01","end_date":"2024-12-31"}
{"start_date":"2024-11-03","end_date":"2024-11-03"}
`
	if code != 1 || out != wantOut {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", code, out, wantOut)
	}
	wantErr := `-:4: start_datetime: "2024-12-01T07:59:59+00:00": must end in an uppercase Z: only UTC, no offset (rule 5)
-:6: start_datetime: 0000-01-01T00:00:00Z falls on a day of year -1 in America/Vancouver, which a date cannot write (rule convert)
1 file: 6 records, 4 valid, 2 invalid (2 problems), converted in America/Vancouver
`
	if errOut != wantErr {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut, wantErr)
	}

	code, out, _ = runCmd(t, ToDate, `{"start_datetime":"2024-12-31T15:00:00Z"}`, "--tz", "Asia/Tokyo")
	if code != 0 || out != "{\"start_date\":\"2025-01-01\"}\n" {
		t.Errorf("--tz Asia/Tokyo: %d %q", code, out)
	}
	code, out, _ = runCmd(t, ToDate, `{"start_datetime":"2024-12-31T23:59:59Z"}`, "--tz", "UTC")
	if code != 0 || out != "{\"start_date\":\"2024-12-31\"}\n" {
		t.Errorf("--tz UTC: %d %q", code, out)
	}
	code, _, errOut = runCmd(t, ToDate, `{"start_datetime":"2024-12-31T23:59:59Z"}`, "--tz", "Local")
	if code != 0 || !strings.Contains(errOut, "converted in Local") {
		t.Errorf("--tz Local uses the machine's zone: %d %q", code, errOut)
	}
}

func TestOversizedAndUnterminatedRecords(t *testing.T) {
	huge := `{"start_date":"2024-12-01","x":"` + strings.Repeat("a", maxRecord) + `"}`
	tests := []struct {
		name, in, want string
	}{
		{"an NDJSON line over the bound is one invalid record; the next lines still count", "{\"start_date\":\"2024-12-01\"}\n" + huge + "\n{\"start_date\":\"2024-12-02\"}\n",
			"-:2: (record): record longer than 1024 KiB; an Event is a small object (rule json)\n1 file: 3 records, 2 valid, 1 invalid (1 problem)\n"},
		{"an array element over the bound", "[" + huge + ",\n{\"start_date\":\"2024-12-02\"}]",
			"-:1: (record): record longer than 1024 KiB; an Event is a small object (rule json)\n1 file: 2 records, 1 valid, 1 invalid (1 problem)\n"},
		{"a multi-line object that never closes", "{\n\"start_date\":\"2024-12-01\",\n",
			"-:1: (record): invalid JSON at the end: expected a property name in double quotes (rule json)\n1 file: 1 record, 0 valid, 1 invalid (1 problem)\n"},
		{"an unterminated string on the first line does not swallow the file", "\"abc\n{\"start_date\":\"2024-12-01\"}\n",
			"-:1: (record): invalid JSON at byte 5: control character inside a string (it must be escaped) (rule json)\n1 file: 2 records, 1 valid, 1 invalid (1 problem)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, _ := runCmd(t, Validate, tt.in)
			if code != 1 || out != tt.want {
				t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s", code, out, tt.want)
			}
		})
	}
}

func TestInterruptedRunExits2(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := Validate(ctx, nil, Streams{strings.NewReader(`{"start_date":"2024-12-01"}`), &out, &errb})
	if code != 2 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

func TestToDateReadsArraysAndReportsLines(t *testing.T) {
	in := "[\n {\"start_datetime\": \"2024-03-10T09:59:59Z\"},\n {\"start_datetime\": null},\n {\"start_date\": \"2024-03-10\"}\n]\n"
	code, out, errOut := runCmd(t, ToDate, in)
	if want := "{\"start_date\":\"2024-03-10\"}\n{\"start_date\":\"2024-03-10\"}\n"; code != 1 || out != want {
		t.Errorf("exit %d, stdout %q, want %q", code, out, want)
	}
	if !strings.HasPrefix(errOut, "-:3: start_datetime: null is not a string") {
		t.Errorf("stderr %q", errOut)
	}
}
