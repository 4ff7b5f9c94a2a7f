package event_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/govkit/govkit/event"
)

// FuzzDecode feeds arbitrary bytes to the decoder. It must not panic;
// Validate and Parse must agree; a valid record must be JSON, must decode
// to the strings encoding/json sees, and must re-decode to the same value
// and marshal byte-identically; an invalid one must come with problems
// that name a property, a rule and a sentinel.
func FuzzDecode(f *testing.F) {
	for _, c := range loadCorpus(f) {
		f.Add(c.bytes(f))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		verr := event.Validate(data)
		e, perr := event.Parse(data)
		if (verr == nil) != (perr == nil) {
			t.Fatalf("Validate %v, Parse %v", verr, perr)
		}
		if perr != nil {
			var ps event.Problems
			if !errors.As(perr, &ps) || len(ps) == 0 {
				t.Fatalf("error is not a non-empty Problems: %v", perr)
			}
			for _, p := range ps {
				if p.Property == "" || p.Detail == "" || p.Err == nil || p.Rule.String() == "" {
					t.Fatalf("incomplete problem %#v", p)
				}
			}
			syntax := errors.Is(perr, event.ErrSyntax)
			tooDeep := strings.Contains(perr.Error(), "nested too deeply")
			if syntax == json.Valid(data) && !tooDeep {
				t.Fatalf("syntax error %v but json.Valid says %v", perr, json.Valid(data))
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted text that is not JSON")
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		start, end := "start_date", "end_date"
		if e.Form() == event.FormDateTime {
			start, end = "start_datetime", "end_datetime"
		}
		if m[start] != e.Start().String() {
			t.Fatalf("start %q, encoding/json sees %q", e.Start(), m[start])
		}
		if p, ok := e.End(); ok && m[end] != p.String() || !ok && m[end] != nil {
			t.Fatalf("end %q, encoding/json sees %q", p, m[end])
		}
		b1, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		again, err := event.Parse(b1)
		if err != nil || !again.Equal(e) {
			t.Fatalf("re-decoding %s: %v, %v", b1, again, err)
		}
		b2, _ := json.Marshal(again)
		if !bytes.Equal(b1, b2) {
			t.Fatalf("marshalled %s then %s", b1, b2)
		}
		if err := e.CheckOrder(); err != nil && !errors.Is(err, event.ErrOrder) {
			t.Fatalf("CheckOrder: %v", err)
		}
	})
}

// schemaPatterns returns the date and datetime patterns of
// event.schema.json, the oracle FuzzDecodeValue checks the hand-written
// format parser against.
func schemaPatterns(t testing.TB) (date, datetime *regexp.Regexp) {
	var s struct {
		Defs map[string]struct {
			Pattern string `json:"pattern"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(event.JSONSchema(), &s); err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(s.Defs["date"].Pattern), regexp.MustCompile(s.Defs["datetime"].Pattern)
}

// FuzzDecodeValue puts an arbitrary string into a start_date or
// start_datetime and checks the decoder's verdict against the schema's
// regular expression for that format.
func FuzzDecodeValue(f *testing.F) {
	date, datetime := schemaPatterns(f)
	for _, s := range []string{"2024-02-29", "2023-02-29", "0000-01-01", "2024-12-01T9:05:00.1Z",
		"2024-12-01T10:00:00.12345678Z", "2024-12-01t10:00:00z", "2016-12-31T23:59:60Z", "2024-12-01T10:00:00+00:00"} {
		f.Add(s, strings.Contains(s, ":"))
	}
	f.Fuzz(func(t *testing.T, value string, isDateTime bool) {
		prop, re := "start_date", date
		if isDateTime {
			prop, re = "start_datetime", datetime
		}
		record, err := json.Marshal(map[string]string{prop: value})
		if err != nil {
			t.Fatal(err)
		}
		got := event.Validate(record)
		if want := re.MatchString(value); want != (got == nil) {
			t.Fatalf("%q: pattern says %v, Validate says %v", value, want, got)
		}
	})
}
