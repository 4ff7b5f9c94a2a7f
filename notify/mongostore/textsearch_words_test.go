package mongostore

import (
	"slices"
	"testing"
)

func TestSearchWordsAreThoseTextMatchesOn(t *testing.T) {
	for in, want := range map[string][]string{
		"road closure":          {"road", "closure"},
		`"main street" closed`:  {"main street", "closed"},
		"road -closure":         {"road"},
		"  spaced\tout\n":       {"spaced", "out"},
		`"unterminated phrase`:  {"unterminated phrase"},
		"":                      nil,
		`""`:                    nil,
		"a@invalid.local 250-5": {"a@invalid.local", "250-5"},
	} {
		if got := searchWords(in); !slices.Equal(got, want) {
			t.Errorf("searchWords(%q) = %q, want %q", in, got, want)
		}
	}
}
