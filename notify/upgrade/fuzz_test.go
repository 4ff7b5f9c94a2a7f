package upgrade

import (
	"strings"
	"testing"
)

// The printed diff of any two texts turns the first into the second.
func FuzzUnifiedDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd\n")
	f.Add("", "x")
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "0\n2\n3\n4\n5\n6\n7\n8\nnine")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 2000 || len(b) > 2000 || strings.Contains(a+b, "\r") {
			return
		}
		d := unifiedDiff("f", []byte(a), []byte(b))
		if a == b {
			if d != "" {
				t.Fatalf("diff of equal texts: %q", d)
			}
			return
		}
		got, err := applyUnified(map[string]string{"f": a}, d)
		if err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		if got["f"] != b {
			t.Fatalf("applying\n%s\ngives %q, want %q", d, got["f"], b)
		}
	})
}

// Any text that parses as a config module survives a rename and a delete
// as a module that still parses, with nothing else lost.
func FuzzJSEdits(f *testing.F) {
	f.Add("module.exports = {\n  smtp: {host: 'x'}, // c\n  a: [1, 2],\n};\n")
	f.Add("const x = 1;\nmodule.exports = { a: x, 'b-c': { d: () => 1 } }")
	f.Fuzz(func(t *testing.T, src string) {
		d, err := parseJSFile("f.js", src)
		if err != nil {
			return
		}
		keys := d.keys(nil)
		if len(keys) == 0 {
			return
		}
		n, _ := d.get([]string{keys[0]})
		if err := d.move([]string{keys[0]}, []string{"moved", "here"}); err != nil && n.kind != kindDynamic {
			return
		}
		if _, err := parseJSFile("f.js", string(d.bytes())); err != nil {
			t.Fatalf("edited text does not parse: %v\n%s", err, d.bytes())
		}
		if len(keys) > 1 {
			if err := d.del([]string{keys[1]}); err != nil {
				return
			}
			if _, err := parseJSFile("f.js", string(d.bytes())); err != nil {
				t.Fatalf("edited text does not parse: %v\n%s", err, d.bytes())
			}
		}
	})
}
