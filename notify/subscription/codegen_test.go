package subscription_test

import (
	"regexp"
	"testing"

	"github.com/govkit/govkit/notify/subscription"
)

func TestGenerateCode(t *testing.T) {
	cases := []struct {
		name, expr string
	}{
		{"the default five digits", `\d{5}`},
		{"letters and digits", `[a-zA-Z0-9]{12}`},
		{"alternation and literals", `(abc|xyz)-\d{3}`},
		{"anchors generate nothing", `^\d{4}$`},
		{"unbounded repetition stops", `a+b*`},
		{"negated class stays printable", `[^a]{8}`},
		{"case folding", `(?i)code\d`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			re := regexp.MustCompile(`^(?:` + c.expr + `)$`)
			for range 50 {
				s, err := subscription.GenerateCode(c.expr)
				if err != nil {
					t.Fatal(err)
				}
				if !re.MatchString(s) {
					t.Fatalf("%q does not match %s", s, c.expr)
				}
			}
		})
	}
	t.Run("an invalid expression is an error", func(t *testing.T) {
		if _, err := subscription.GenerateCode(`\d{5`); err == nil {
			if _, err := subscription.GenerateCode(`(`); err == nil {
				t.Fatal("no error")
			}
		}
	})
	t.Run("codes differ between calls", func(t *testing.T) {
		seen := map[string]bool{}
		for range 20 {
			s, _ := subscription.GenerateCode(`\d{10}`)
			seen[s] = true
		}
		if len(seen) < 15 {
			t.Fatalf("only %d distinct codes in 20", len(seen))
		}
	})
}

func FuzzGenerateCode(f *testing.F) {
	for _, s := range []string{`\d{5}`, `[a-z]+`, `(a|b)*c?`, `^x$`, `.{3}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		re, err := regexp.Compile(`^(?:` + expr + `)$`)
		if err != nil {
			return
		}
		s, err := subscription.GenerateCode(expr)
		if err != nil {
			return
		}
		if !re.MatchString(s) {
			t.Fatalf("%q does not match %q", s, expr)
		}
	})
}
