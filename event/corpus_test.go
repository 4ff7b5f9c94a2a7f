package event_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/govkit/govkit/event"
)

// corpusCase is one entry of testdata/corpus.json: a record as raw bytes,
// whether it is a valid Event, and for an invalid one why and which rules
// it breaks ("1".."8", or "json" for a record that is not a JSON object).
type corpusCase struct {
	Name        string   `json:"name"`
	Input       *string  `json:"input"`
	InputBase64 string   `json:"input_base64"` // for bytes that are not UTF-8
	Valid       bool     `json:"valid"`
	Why         string   `json:"why"`
	Rules       []string `json:"rules"`
}

func (c corpusCase) bytes(t testing.TB) []byte {
	if c.Input != nil {
		return []byte(*c.Input)
	}
	b, err := base64.StdEncoding.DecodeString(c.InputBase64)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	return b
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	data, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func ruleSet(ps event.Problems) []string {
	var rules []string
	for _, p := range ps {
		rules = append(rules, p.Rule.String())
	}
	slices.Sort(rules)
	return slices.Compact(rules)
}

func TestCorpus(t *testing.T) {
	cases := loadCorpus(t)
	if len(cases) < 150 {
		t.Fatalf("corpus has %d cases, want at least 150", len(cases))
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if seen[c.Name] {
				t.Fatalf("duplicate case name")
			}
			seen[c.Name] = true
			if !c.Valid && (c.Why == "" || len(c.Rules) == 0) {
				t.Fatalf("an invalid case must say why and which rules it breaks")
			}
			data := c.bytes(t)
			verr := event.Validate(data)
			e, perr := event.Parse(data)
			if (verr == nil) != (perr == nil) {
				t.Fatalf("Validate says %v, Parse says %v", verr, perr)
			}
			if c.Valid {
				if perr != nil {
					t.Fatalf("valid case rejected: %v", perr)
				}
				if e.Form() == event.FormNone {
					t.Fatalf("valid case parsed to the zero Event")
				}
				return
			}
			if perr == nil {
				t.Fatalf("invalid case (%s) accepted as %s", c.Why, e)
			}
			var ps event.Problems
			if !errors.As(perr, &ps) || len(ps) == 0 {
				t.Fatalf("error %v is not a non-empty Problems", perr)
			}
			if got := ruleSet(ps); !slices.Equal(got, c.Rules) {
				t.Errorf("rules %v, want %v: %v", got, c.Rules, perr)
			}
			for _, p := range ps {
				if p.Property == "" || p.Detail == "" || p.Err == nil {
					t.Errorf("problem without property, detail or sentinel: %#v", p)
				}
				if !errors.Is(perr, p.Err) {
					t.Errorf("errors.Is(err, %v) is false", p.Err)
				}
			}
		})
	}
}
