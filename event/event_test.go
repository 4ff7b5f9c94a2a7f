package event_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/event"
)

type ruleCase struct {
	name  string
	input string
	want  error // sentinel that must be among the problems; nil: valid
	prop  string
}

// checkRule runs a table for one rule: each case is either valid, or must
// report the given sentinel on the given property under rule r.
func checkRule(t *testing.T, r event.Rule, cases []ruleCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := event.Parse([]byte(c.input))
			if c.want == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("want %v, got %v", c.want, err)
			}
			var ps event.Problems
			errors.As(err, &ps)
			for _, p := range ps {
				if p.Rule == r && errors.Is(p, c.want) && p.Property == c.prop {
					return
				}
			}
			t.Fatalf("no problem with rule %s on %s: %v", r, c.prop, err)
		})
	}
}

func TestRule1ExactlyOneStart(t *testing.T) {
	checkRule(t, event.RuleOneStart, []ruleCase{
		{"start_date alone is one start", `{"start_date":"2024-12-01"}`, nil, ""},
		{"start_datetime alone is one start", `{"start_datetime":"2024-12-01T10:00:00Z"}`, nil, ""},
		{"empty object has no start", `{}`, event.ErrNoStart, event.PropertyRecord},
		{"end_date alone has no start", `{"end_date":"2024-12-01"}`, event.ErrNoStart, "start_date"},
		{"end_datetime alone has no start", `{"end_datetime":"2024-12-01T10:00:00Z"}`, event.ErrNoStart, "start_datetime"},
		{"both starts are two starts", `{"start_date":"2024-12-01","start_datetime":"2024-12-01T10:00:00Z"}`, event.ErrTwoStarts, "start_datetime"},
		{"a null start is present, not absent", `{"start_date":null,"start_datetime":"2024-12-01T10:00:00Z"}`, event.ErrTwoStarts, "start_datetime"},
	})
}

func TestRule2DateForm(t *testing.T) {
	checkRule(t, event.RuleDateForm, []ruleCase{
		{"start_date with end_date", `{"start_date":"2024-12-01","end_date":"2024-12-02"}`, nil, ""},
		{"end_date needs start_date", `{"end_date":"2024-12-02"}`, event.ErrEndWithoutStart, "end_date"},
	})
}

func TestRule3DateTimeForm(t *testing.T) {
	checkRule(t, event.RuleDateTimeForm, []ruleCase{
		{"start_datetime with end_datetime", `{"start_datetime":"2024-12-01T10:00:00Z","end_datetime":"2024-12-01T11:00:00Z"}`, nil, ""},
		{"end_datetime needs start_datetime", `{"end_datetime":"2024-12-01T11:00:00Z"}`, event.ErrEndWithoutStart, "end_datetime"},
	})
}

func TestRule4NoMixing(t *testing.T) {
	checkRule(t, event.RuleNoMixing, []ruleCase{
		{"end_datetime with start_date", `{"start_date":"2024-12-01","end_datetime":"2024-12-01T11:00:00Z"}`, event.ErrMixedForms, "end_datetime"},
		{"end_date with start_datetime", `{"start_datetime":"2024-12-01T10:00:00Z","end_date":"2024-12-02"}`, event.ErrMixedForms, "end_date"},
		{"a null end of the other form still mixes", `{"start_date":"2024-12-01","end_datetime":null}`, event.ErrMixedForms, "end_datetime"},
	})
}

func TestRule5Format(t *testing.T) {
	checkRule(t, event.RuleFormat, []ruleCase{
		{"leap day of a leap year", `{"start_date":"2024-02-29"}`, nil, ""},
		{"leap day of 2000 (divisible by 400)", `{"start_date":"2000-02-29"}`, nil, ""},
		{"leap day of 2023 is not a day", `{"start_date":"2023-02-29"}`, event.ErrFormat, "start_date"},
		{"leap day of 1900 (divisible by 100) is not a day", `{"start_date":"1900-02-29"}`, event.ErrFormat, "start_date"},
		{"April 31 is not a day", `{"start_date":"2024-04-31"}`, event.ErrFormat, "start_date"},
		{"year 0000 is a four-digit year", `{"start_date":"0000-01-01"}`, nil, ""},
		{"one-digit hour", `{"start_datetime":"2024-12-01T9:00:00Z"}`, nil, ""},
		{"seven fraction digits", `{"start_datetime":"2024-12-01T10:00:00.1234567Z"}`, nil, ""},
		{"eight fraction digits", `{"start_datetime":"2024-12-01T10:00:00.12345678Z"}`, event.ErrFormat, "start_datetime"},
		{"lowercase t", `{"start_datetime":"2024-12-01t10:00:00Z"}`, event.ErrFormat, "start_datetime"},
		{"lowercase z", `{"start_datetime":"2024-12-01T10:00:00z"}`, event.ErrFormat, "start_datetime"},
		{"offset +00:00", `{"start_datetime":"2024-12-01T10:00:00+00:00"}`, event.ErrFormat, "start_datetime"},
		{"comma fraction", `{"start_datetime":"2024-12-01T10:00:00,5Z"}`, event.ErrFormat, "start_datetime"},
		{"leap second 60", `{"start_datetime":"2016-12-31T23:59:60Z"}`, event.ErrFormat, "start_datetime"},
		{"trailing newline inside the string", `{"end_datetime":"2024-12-01T10:00:00Z\n","start_datetime":"2024-12-01T10:00:00Z"}`, event.ErrFormat, "end_datetime"},
		{"non-ASCII digits", `{"start_date":"٢٠٢٤-٠١-٠١"}`, event.ErrFormat, "start_date"},
		{`\u005a is Z`, `{"start_datetime":"2024-12-01T10:00:00\u005a"}`, nil, ""},
		{"a number is not a string", `{"start_date":20241201}`, event.ErrNotString, "start_date"},
		{"an object is not a string", `{"start_date":{}}`, event.ErrNotString, "start_date"},
		{"true is not a string", `{"end_date":true,"start_date":"2024-12-01"}`, event.ErrNotString, "end_date"},
	})
}

func TestRule6NoUnknownProperties(t *testing.T) {
	checkRule(t, event.RuleNoUnknown, []ruleCase{
		{"typo end_datetme", `{"start_datetime":"2024-12-01T10:00:00Z","end_datetme":"2024-12-01T11:00:00Z"}`, event.ErrUnknownProperty, "end_datetme"},
		{"extra key with null value", `{"start_date":"2024-12-01","note":null}`, event.ErrUnknownProperty, "note"},
		{"empty key is named quoted", `{"start_date":"2024-12-01","":1}`, event.ErrUnknownProperty, `""`},
		{"key with a space is named quoted", `{"start_date":"2024-12-01","a b":1}`, event.ErrUnknownProperty, `"a b"`},
	})
	_, err := event.Parse([]byte(`{"start_datetime":"2024-12-01T10:00:00Z","end_datetme":"2024-12-01T11:00:00Z"}`))
	if !strings.Contains(err.Error(), "did you mean end_datetime?") {
		t.Errorf("a typo should suggest the property meant: %v", err)
	}
}

func TestRule7NoDuplicateKeys(t *testing.T) {
	checkRule(t, event.RuleNoDuplicate, []ruleCase{
		{"same key twice", `{"start_date":"2024-12-01","start_date":"2024-12-01"}`, event.ErrDuplicate, "start_date"},
		{"same key twice through an escape", `{"end_date":"2024-12-01","start_date":"2024-12-01","end_\u0064ate":"2024-12-02"}`, event.ErrDuplicate, "end_date"},
		{"unknown key twice", `{"start_date":"2024-12-01","x":1,"x":1}`, event.ErrDuplicate, "x"},
	})
}

func TestRule8NullIsNotAString(t *testing.T) {
	checkRule(t, event.RuleNoNull, []ruleCase{
		{"null start", `{"start_date":null}`, event.ErrNull, "start_date"},
		{"null end", `{"start_date":"2024-12-01","end_date":null}`, event.ErrNull, "end_date"},
		{"null datetime end", `{"start_datetime":"2024-12-01T10:00:00Z","end_datetime":null}`, event.ErrNull, "end_datetime"},
	})
}

func TestNotAnObject(t *testing.T) {
	checkRule(t, event.RuleJSON, []ruleCase{
		{"array", `[{"start_date":"2024-12-01"}]`, event.ErrNotObject, event.PropertyRecord},
		{"string", `"2024-12-01"`, event.ErrNotObject, event.PropertyRecord},
		{"truncated", `{"start_date":"2024-12-01"`, event.ErrSyntax, event.PropertyRecord},
		{"empty", ``, event.ErrSyntax, event.PropertyRecord},
	})
}

func TestEveryProblemIsReportedAtOnce(t *testing.T) {
	_, err := event.Parse([]byte(`{"start_date":"2023-02-29","end_datetime":null,"end_datetme":"x","start_date":"2024-01-01"}`))
	var ps event.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("got %v", err)
	}
	for _, want := range []error{event.ErrFormat, event.ErrNull, event.ErrUnknownProperty, event.ErrDuplicate, event.ErrMixedForms} {
		if !errors.Is(err, want) {
			t.Errorf("missing %v in %v", want, err)
		}
	}
	if len(ps) != 5 {
		t.Errorf("got %d problems, want 5: %v", len(ps), err)
	}
	var p event.Problem
	if !errors.As(err, &p) || p.Property != "start_date" || p.Rule != event.RuleFormat {
		t.Errorf("errors.As finds the first problem: %#v", p)
	}
	if want := `start_date: "2023-02-29": not a real day of that month and year (rule 5)`; ps[0].Error() != want {
		t.Errorf("message %q, want %q", ps[0].Error(), want)
	}
}

func TestRoundTripIsByteExact(t *testing.T) {
	tests := []struct{ name, in, out string }{
		{"one-digit hour and one fraction digit are kept", `{"start_datetime":"2024-12-01T9:05:00.1Z"}`, `{"start_datetime":"2024-12-01T9:05:00.1Z"}`},
		{"trailing fraction zeros are kept", `{"start_datetime":"2024-12-01T10:00:00.0000000Z","end_datetime":"2024-12-01T10:00:00.500Z"}`, `{"start_datetime":"2024-12-01T10:00:00.0000000Z","end_datetime":"2024-12-01T10:00:00.500Z"}`},
		{"keys are written start first", ` { "end_date" : "2024-12-31" , "start_date" : "2024-12-01" } `, `{"start_date":"2024-12-01","end_date":"2024-12-31"}`},
		{`escapes are decoded: \u005a is written as Z`, `{"start_datetime":"2024-12-01T10:00:00\u005a"}`, `{"start_datetime":"2024-12-01T10:00:00Z"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := event.Parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.out {
				t.Fatalf("marshalled %s, want %s", b, tt.out)
			}
			again, err := event.Parse(b)
			if err != nil || !again.Equal(e) {
				t.Fatalf("re-decoded %v (%v), want %v", again, err, e)
			}
		})
	}
	// Every valid corpus value comes back as the same string that
	// encoding/json decodes from the input.
	for _, c := range loadCorpus(t) {
		if !c.Valid {
			continue
		}
		var m map[string]string
		if err := json.Unmarshal(c.bytes(t), &m); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		e, err := event.Parse(c.bytes(t))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		start, end := "start_date", "end_date"
		if e.Form() == event.FormDateTime {
			start, end = "start_datetime", "end_datetime"
		}
		if e.Start().String() != m[start] {
			t.Errorf("%s: start %q, want %q", c.Name, e.Start(), m[start])
		}
		if p, ok := e.End(); ok != (m[end] != "") || p.String() != m[end] {
			t.Errorf("%s: end %q (%v), want %q", c.Name, p, ok, m[end])
		}
	}
}

type permit struct {
	ID    string       `json:"id"`
	When  event.Event  `json:"when"`
	Later *event.Event `json:"later,omitempty"`
}

func TestEmbeddedInAStructEnforcesTheRules(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
	}{
		{"a valid event decodes", `{"id":"a","when":{"start_date":"2024-12-01"}}`, nil},
		{"an unknown key inside the event is rejected", `{"id":"a","when":{"start_date":"2024-12-01","ongoing":true}}`, event.ErrUnknownProperty},
		{"a duplicate key inside the event is rejected", `{"id":"a","when":{"start_date":"2024-12-01","start_date":"2024-12-02"}}`, event.ErrDuplicate},
		{"a null value inside the event is rejected", `{"id":"a","when":{"start_date":"2024-12-01","end_date":null}}`, event.ErrNull},
		{"a bad date inside the event is rejected", `{"id":"a","when":{"start_date":"2023-02-29"}}`, event.ErrFormat},
		{"a mixed event is rejected", `{"id":"a","when":{"start_date":"2024-12-01","end_datetime":"2024-12-02T00:00:00Z"}}`, event.ErrMixedForms},
		{"an empty event is rejected", `{"id":"a","when":{}}`, event.ErrNoStart},
		{"an event that is a string is rejected", `{"id":"a","when":"2024-12-01"}`, event.ErrNotObject},
		{"a pointer event is checked too", `{"id":"a","when":{"start_date":"2024-12-01"},"later":{"start_date":"2024-12-32"}}`, event.ErrFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p permit
			err := json.Unmarshal([]byte(tt.in), &p)
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("want %v, got %v", tt.want, err)
			}
		})
	}

	var p permit
	if err := json.Unmarshal([]byte(`{"id":"a","when":{"start_datetime":"2024-12-01T9:05:00.1Z"},"later":null}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Later != nil {
		t.Errorf("a null pointer field stays nil")
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"a","when":{"start_datetime":"2024-12-01T9:05:00.1Z"}}`; string(out) != want {
		t.Errorf("marshalled %s, want %s", out, want)
	}
	if _, err := json.Marshal(permit{ID: "zero"}); !errors.Is(err, event.ErrZero) {
		t.Errorf("marshalling the zero Event must fail with ErrZero, got %v", err)
	}
}

func TestConstructors(t *testing.T) {
	vancouver := mustZone(t, "America/Vancouver")
	tests := []struct {
		name string
		make func() (event.Event, error)
		want string // JSON, or "" for an error
		err  error
	}{
		{"date", func() (event.Event, error) { return event.NewDate(event.Date{2024, 2, 29}) }, `{"start_date":"2024-02-29"}`, nil},
		{"date range", func() (event.Event, error) {
			return event.NewDateRange(event.Date{2024, 12, 1}, event.Date{2024, 12, 31})
		}, `{"start_date":"2024-12-01","end_date":"2024-12-31"}`, nil},
		{"year 0000 is written with four digits", func() (event.Event, error) { return event.NewDate(event.Date{0, 1, 1}) }, `{"start_date":"0000-01-01"}`, nil},
		{"not a real day", func() (event.Event, error) { return event.NewDate(event.Date{2023, 2, 29}) }, "", event.ErrFormat},
		{"end not a real day", func() (event.Event, error) {
			return event.NewDateRange(event.Date{2024, 4, 1}, event.Date{2024, 4, 31})
		}, "", event.ErrFormat},
		{"year 10000", func() (event.Event, error) { return event.NewDate(event.Date{10000, 1, 1}) }, "", event.ErrOutOfRange},
		{"datetime is converted to UTC", func() (event.Event, error) {
			return event.NewDateTime(time.Date(2024, 11, 30, 23, 59, 59, 0, vancouver))
		}, `{"start_datetime":"2024-12-01T07:59:59Z"}`, nil},
		{"nanoseconds are truncated to 100 ns", func() (event.Event, error) {
			return event.NewDateTime(time.Date(2024, 12, 1, 10, 0, 0, 123456789, time.UTC))
		}, `{"start_datetime":"2024-12-01T10:00:00.1234567Z"}`, nil},
		{"the fraction is as short as its value", func() (event.Event, error) {
			return event.NewDateTime(time.Date(2024, 12, 1, 9, 5, 0, 500_000_000, time.UTC))
		}, `{"start_datetime":"2024-12-01T09:05:00.5Z"}`, nil},
		{"less than 100 ns is no fraction", func() (event.Event, error) {
			return event.NewDateTime(time.Date(2024, 12, 1, 9, 5, 0, 99, time.UTC))
		}, `{"start_datetime":"2024-12-01T09:05:00Z"}`, nil},
		{"datetime range", func() (event.Event, error) {
			return event.NewDateTimeRange(time.Date(2024, 12, 1, 10, 0, 0, 0, time.UTC), time.Date(2024, 12, 1, 11, 0, 0, 100, time.UTC))
		}, `{"start_datetime":"2024-12-01T10:00:00Z","end_datetime":"2024-12-01T11:00:00.0000001Z"}`, nil},
		{"year -1 cannot be written", func() (event.Event, error) {
			return event.NewDateTime(time.Date(-1, 12, 31, 0, 0, 0, 0, time.UTC))
		}, "", event.ErrOutOfRange},
		{"a Vancouver time in year 9999 that is 10000 in UTC", func() (event.Event, error) {
			return event.NewDateTime(time.Date(9999, 12, 31, 20, 0, 0, 0, vancouver))
		}, "", event.ErrOutOfRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := tt.make()
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("want %v, got %v (%s)", tt.err, err, e)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.String() != tt.want {
				t.Fatalf("got %s, want %s", e, tt.want)
			}
			// What a constructor builds is what Parse accepts.
			back, err := event.Parse([]byte(e.String()))
			if err != nil || !back.Equal(e) {
				t.Fatalf("constructed event does not re-parse equal: %v %v", back, err)
			}
			if st, ok := e.Start().Time(); ok {
				bt, _ := back.Start().Time()
				if !st.Equal(bt) || st.Location() != time.UTC {
					t.Fatalf("instant %v, re-parsed %v", st, bt)
				}
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	e, err := event.Parse([]byte(`{"start_datetime":"2024-12-01T9:05:00.25Z","end_datetime":"2024-12-01T10:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.Form() != event.FormDateTime || e.Form().String() != "datetime" {
		t.Errorf("form %v", e.Form())
	}
	st, ok := e.Start().Time()
	if !ok || !st.Equal(time.Date(2024, 12, 1, 9, 5, 0, 250_000_000, time.UTC)) {
		t.Errorf("start %v %v", st, ok)
	}
	if _, ok := e.Start().Date(); ok {
		t.Errorf("a datetime point has no calendar date without a zone")
	}
	if end, ok := e.End(); !ok || end.String() != "2024-12-01T10:00:00Z" {
		t.Errorf("end %v %v", end, ok)
	}

	d, _ := event.Parse([]byte(`{"start_date":"2024-02-29"}`))
	if day, ok := d.Start().Date(); !ok || day != (event.Date{2024, time.February, 29}) {
		t.Errorf("date %v %v", day, ok)
	}
	if _, ok := d.Start().Time(); ok {
		t.Errorf("a date point is not an instant")
	}
	if _, ok := d.End(); ok {
		t.Errorf("no end was given, none may be invented")
	}
	if !(event.Event{}).IsZero() || d.IsZero() {
		t.Errorf("IsZero")
	}
}

func TestCheckOrder(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		inOrder bool
	}{
		{"no end is in order", `{"start_date":"2024-12-01"}`, true},
		{"same day", `{"start_date":"2024-12-01","end_date":"2024-12-01"}`, true},
		{"end day after start", `{"start_date":"2024-12-01","end_date":"2025-01-01"}`, true},
		{"end day before start", `{"start_date":"2024-12-02","end_date":"2024-12-01"}`, false},
		{"T10 is after T9 although it sorts before as a string", `{"start_datetime":"2024-12-01T9:00:00Z","end_datetime":"2024-12-01T10:00:00Z"}`, true},
		{"T9 is before T10 although it sorts after as a string", `{"start_datetime":"2024-12-01T10:00:00Z","end_datetime":"2024-12-01T9:00:00Z"}`, false},
		{"same instant written differently", `{"start_datetime":"2024-12-01T09:00:00.000Z","end_datetime":"2024-12-01T9:00:00Z"}`, true},
		{"100 ns before", `{"start_datetime":"2024-12-01T09:00:00.0000001Z","end_datetime":"2024-12-01T09:00:00Z"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := event.Parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			err = e.CheckOrder()
			if tt.inOrder != (err == nil) {
				t.Fatalf("CheckOrder = %v, want in order %v", err, tt.inOrder)
			}
			if err != nil && !errors.Is(err, event.ErrOrder) {
				t.Fatalf("error %v does not wrap ErrOrder", err)
			}
		})
	}
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestToDateForm(t *testing.T) {
	vancouver := mustZone(t, "America/Vancouver")
	tokyo := mustZone(t, "Asia/Tokyo")
	tests := []struct {
		name string
		in   string
		loc  *time.Location
		want string
	}{
		{"Pacific evening is the previous day, not the UTC date", `{"start_datetime":"2024-12-01T07:59:59Z"}`, vancouver, `{"start_date":"2024-11-30"}`},
		{"Pacific midnight is the UTC date", `{"start_datetime":"2024-12-01T08:00:00Z"}`, vancouver, `{"start_date":"2024-12-01"}`},
		{"year end: last second of 2024 in Vancouver", `{"start_datetime":"2025-01-01T07:59:59Z"}`, vancouver, `{"start_date":"2024-12-31"}`},
		{"year end: first second of 2025 in Vancouver", `{"start_datetime":"2025-01-01T08:00:00Z"}`, vancouver, `{"start_date":"2025-01-01"}`},
		{"spring forward: last second of Mar 9 (PST)", `{"start_datetime":"2024-03-10T07:59:59Z"}`, vancouver, `{"start_date":"2024-03-09"}`},
		{"spring forward: 01:59:59 PST just before the skipped hour", `{"start_datetime":"2024-03-10T09:59:59Z"}`, vancouver, `{"start_date":"2024-03-10"}`},
		{"spring forward: 03:00 PDT just after the skipped hour", `{"start_datetime":"2024-03-10T10:00:00Z"}`, vancouver, `{"start_date":"2024-03-10"}`},
		{"spring forward: the short day ends at 07:00Z (PDT)", `{"start_datetime":"2024-03-11T06:59:59Z","end_datetime":"2024-03-11T07:00:00Z"}`, vancouver, `{"start_date":"2024-03-10","end_date":"2024-03-11"}`},
		{"autumn back: day before ends at 07:00Z (PDT)", `{"start_datetime":"2024-11-03T06:59:59Z","end_datetime":"2024-11-03T07:00:00Z"}`, vancouver, `{"start_date":"2024-11-02","end_date":"2024-11-03"}`},
		{"autumn back: both 01:30s of the repeated hour are Nov 3", `{"start_datetime":"2024-11-03T08:30:00Z","end_datetime":"2024-11-03T09:30:00Z"}`, vancouver, `{"start_date":"2024-11-03","end_date":"2024-11-03"}`},
		{"autumn back: the long day ends at 08:00Z (PST)", `{"start_datetime":"2024-11-04T07:59:59.9999999Z","end_datetime":"2024-11-04T08:00:00Z"}`, vancouver, `{"start_date":"2024-11-03","end_date":"2024-11-04"}`},
		{"another zone: Tokyo is ahead", `{"start_datetime":"2024-12-31T15:00:00Z"}`, tokyo, `{"start_date":"2025-01-01"}`},
		{"UTC is truncation", `{"start_datetime":"2024-12-01T23:59:59Z"}`, time.UTC, `{"start_date":"2024-12-01"}`},
		{"a date event is unchanged", `{"start_date":"2024-12-01","end_date":"2024-11-01"}`, vancouver, `{"start_date":"2024-12-01","end_date":"2024-11-01"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := event.Parse([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.ToDateForm(tt.loc)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want || got.Form() != event.FormDate {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}

	for _, tt := range []struct {
		name, in string
		loc      *time.Location
	}{
		{"year 0000 in UTC is year -1 in Vancouver", `{"start_datetime":"0000-01-01T00:00:00Z"}`, vancouver},
		{"year 9999 in UTC is year 10000 in Tokyo", `{"start_datetime":"2024-01-01T00:00:00Z","end_datetime":"9999-12-31T23:00:00Z"}`, tokyo},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := event.Parse([]byte(tt.in))
			if _, err := e.ToDateForm(tt.loc); !errors.Is(err, event.ErrOutOfRange) {
				t.Fatalf("want ErrOutOfRange, got %v", err)
			}
		})
	}
	e, _ := event.Parse([]byte(`{"start_datetime":"2024-12-01T10:00:00Z"}`))
	if _, err := e.ToDateForm(nil); err == nil {
		t.Errorf("a nil zone must be an error, not UTC")
	}
}

func TestPurpose(t *testing.T) {
	tests := []struct {
		name      string
		purpose   event.Purpose
		timeKnown bool
		want      event.Form
	}{
		{"reporting uses dates even when the time is known", event.PurposeReporting, true, event.FormDate},
		{"reporting without a time uses dates", event.PurposeReporting, false, event.FormDate},
		{"logging with a time uses datetimes", event.PurposeLogging, true, event.FormDateTime},
		{"logging without a time uses dates", event.PurposeLogging, false, event.FormDate},
		{"auditing with a time uses datetimes", event.PurposeAuditing, true, event.FormDateTime},
		{"unknown purpose with a time uses datetimes", event.PurposeUnknown, true, event.FormDateTime},
		{"unknown purpose without a time uses dates", event.PurposeUnknown, false, event.FormDate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := event.FormFor(tt.purpose, tt.timeKnown); got != tt.want {
				t.Fatalf("FormFor = %v, want %v", got, tt.want)
			}
		})
	}
	vancouver := mustZone(t, "America/Vancouver")
	dt, _ := event.Parse([]byte(`{"start_datetime":"2024-12-01T07:59:59Z"}`))
	if got, err := dt.ForPurpose(event.PurposeReporting, vancouver); err != nil || got.String() != `{"start_date":"2024-11-30"}` {
		t.Errorf("a datetime for reporting becomes its Pacific date: %s %v", got, err)
	}
	if got, _ := dt.ForPurpose(event.PurposeAuditing, vancouver); !got.Equal(dt) {
		t.Errorf("a datetime for auditing stays: %s", got)
	}
	d, _ := event.Parse([]byte(`{"start_date":"2024-12-01"}`))
	if got, _ := d.ForPurpose(event.PurposeLogging, vancouver); !got.Equal(d) {
		t.Errorf("a date for logging stays a date (no time is invented): %s", got)
	}
}

func TestValidateAllocatesNothingOnTheValidPath(t *testing.T) {
	for _, c := range loadCorpus(t) {
		if !c.Valid {
			continue
		}
		data := c.bytes(t)
		if n := testing.AllocsPerRun(20, func() {
			if event.Validate(data) != nil {
				t.Fatal("invalid")
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per Validate", c.Name, n)
		}
	}
}

func TestValuesOfUnknownKeysMustStillBeJSON(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		name  string
		value string
		want  error
	}{
		{"nested arrays and objects are skipped", `[1,{"a":[true,false,null,"x",-0.5e+3]},{}]`, event.ErrUnknownProperty},
		{"nesting up to the limit is JSON", nest(512), event.ErrUnknownProperty},
		{"nesting beyond the limit is refused", nest(513), event.ErrSyntax},
		{"a bracket closed by a brace", `[1,{"a":[}]`, event.ErrSyntax},
		{"a key without a colon inside", `{"a" 1}`, event.ErrSyntax},
		{"a trailing comma inside", `[1,]`, event.ErrSyntax},
		{"an unclosed array at the end", `[1,2`, event.ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"start_date":"2024-12-01","extra":` + tt.value + `}`
			err := event.Validate([]byte(in))
			if !errors.Is(err, tt.want) {
				t.Fatalf("want %v, got %v", tt.want, err)
			}
			// encoding/json allows deeper nesting (10000); everything else
			// it must judge alike.
			if want := tt.want == event.ErrUnknownProperty; json.Valid([]byte(in)) != want && !strings.Contains(tt.name, "beyond the limit") {
				t.Fatalf("encoding/json disagrees on whether this is JSON")
			}
		})
	}
}
