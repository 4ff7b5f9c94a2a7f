package event_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/govkit/govkit/event"
)

// compileSchema compiles event.schema.json with format assertion on, so
// "format": "date" is checked as well as the patterns.
func compileSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(event.JSONSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://github.com/govkit/govkit/event/event.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// schemaValid runs the record through the JSON Schema validator the way a
// consumer would: parse the JSON (a record that does not parse is invalid),
// then validate the parsed value.
func schemaValid(sch *jsonschema.Schema, data []byte) bool {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return false
	}
	return sch.Validate(v) == nil
}

// TestJSONSchemaAgreesWithValidate runs every corpus record through both
// validators. They agree on every record except this documented exception:
//
//   - Rule 7 (duplicate keys): a JSON Schema validator sees the parsed
//     value, in which the last copy of a duplicated key has already won, so
//     the duplicate and anything wrong with the earlier copies are
//     invisible to it. For those records the test only requires that
//     Validate rejects them, and that the schema really does miss some.
//
// Everything else agrees, including what often differs between a schema
// and code: real calendar days (the date pattern encodes month lengths and
// leap years, so it holds even where a validator does not assert "format";
// here format assertion is on as well), year 0000, one-digit hours (the
// datetime is checked by pattern only, because "format": "date-time" would
// demand a two-digit hour), null and non-string values, and unknown keys
// (additionalProperties false in each branch).
func TestJSONSchemaAgreesWithValidate(t *testing.T) {
	sch := compileSchema(t)
	exceptions := 0
	for _, c := range loadCorpus(t) {
		data := c.bytes(t)
		goValid := event.Validate(data) == nil
		sValid := schemaValid(sch, data)
		switch {
		case slices.Contains(c.Rules, "7"):
			if goValid {
				t.Errorf("%s: Validate accepts a duplicated key", c.Name)
			}
			if sValid {
				exceptions++
			}
		case goValid != sValid:
			t.Errorf("%s: Validate says valid=%v, the JSON Schema says valid=%v", c.Name, goValid, sValid)
		}
	}
	if exceptions == 0 {
		t.Errorf("the corpus has no duplicate-key case; the exception list would be untested")
	}
	t.Logf("schema and Validate agree on every corpus case but %d duplicate-key cases the schema cannot see", exceptions)
}

// TestJSONSchemaDatePatternIsCalendarExact checks the date pattern alone
// (format assertion off) against the Go calendar for every day of a
// 400-year leap cycle and its impossible neighbours.
func TestJSONSchemaDatePatternIsCalendarExact(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(event.JSONSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler() // format is an annotation only
	const url = "https://github.com/govkit/govkit/event/event.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for y := 1600; y < 2000 && bad < 10; y++ {
		for m := 1; m <= 12; m++ {
			for d := 28; d <= 32; d++ {
				ds := event.Date{Year: y, Month: timeMonth(m), Day: d}
				rec := []byte(`{"start_date":"` + ds.String() + `"}`)
				if got, want := schemaValid(sch, rec), ds.IsValid(); got != want {
					t.Errorf("%s: pattern says %v, calendar says %v", ds, got, want)
					bad++
				}
			}
		}
	}
}

func timeMonth(m int) time.Month { return time.Month(m) }
