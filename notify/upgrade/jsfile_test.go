package upgrade

import (
	"strings"
	"testing"
)

// Edits of .js files change only the property they touch; everything else
// keeps its text.
func TestJSEditsKeepTheRestOfTheFile(t *testing.T) {
	tests := []struct {
		name string
		src  string
		edit func(d configDoc) error
		want string
	}{
		{"rename keeps value and comments",
			"module.exports = {\n  a: { /* x */ b: 1 }, // y\n};\n",
			func(d configDoc) error { return d.rename(p("a"), "routes:before") },
			"module.exports = {\n  'routes:before': { /* x */ b: 1 }, // y\n};\n"},
		{"delete the last property without a comma removes the comma before it",
			"module.exports = {\n  a: 1,\n  b: 2\n};\n",
			func(d configDoc) error { return d.del(p("b")) },
			"module.exports = {\n  a: 1\n};\n"},
		{"delete takes the property's leading comment along",
			"module.exports = {\n  // about a\n  a: 1,\n  b: 2,\n};\n",
			func(d configDoc) error { return d.del(p("a")) },
			"module.exports = {\n  b: 2,\n};\n"},
		{"insert into a multi-line object follows its indentation",
			"module.exports = {\n    a: 1\n};\n",
			func(d configDoc) error { return d.set(p("b.c"), staticValue("x")) },
			"module.exports = {\n    a: 1,\n    b: {\n        c: 'x',\n    },\n};\n"},
		{"insert into a one-line object stays on the line",
			"module.exports = { a: 1 };\n",
			func(d configDoc) error { return d.set(p("b"), staticValue(true)) },
			"module.exports = { a: 1, b: true };\n"},
		{"insert into an empty object",
			"module.exports = {};\n",
			func(d configDoc) error { return d.set(p("q"), staticValue(2.5)) },
			"module.exports = {\n  q: 2.5,\n};\n"},
		{"move carries comments and the value's text, and removes the emptied parent",
			"const x = 1;\nmodule.exports = {\n  a: {\n    // keep me\n    b: process.env.B || x, // and me\n  },\n  c: 3,\n};\n",
			func(d configDoc) error { return d.move(p("a.b"), p("c2.d")) },
			"const x = 1;\nmodule.exports = {\n  c: 3,\n  c2: {\n    // keep me\n    // and me\n    d: process.env.B || x,\n  },\n};\n"},
		{"a parenthesized value is replaced whole",
			"module.exports = {\n  a: (1 + 2),\n};\n",
			func(d configDoc) error { return d.set(p("a"), staticValue(3.0)) },
			"module.exports = {\n  a: 3,\n};\n"},
		{"non-ASCII text before an edit keeps positions right",
			"// Ünïcödé ✓\nmodule.exports = {\n  s: 'é', a: 1,\n};\n",
			func(d configDoc) error { return d.rename(p("a"), "b") },
			"// Ünïcödé ✓\nmodule.exports = {\n  s: 'é', b: 1,\n};\n"},
		{"a multi-line template literal is moved without re-indenting it",
			"module.exports = {\n  a: {\n    t: `line1\n  line2`,\n  },\n};\n",
			func(d configDoc) error { return d.move(p("a.t"), p("t")) },
			"module.exports = {\n  t: `line1\n  line2`,\n};\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := parseJSFile("config.local.js", tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.edit(d); err != nil {
				t.Fatal(err)
			}
			if got := string(d.bytes()); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestJSShapes(t *testing.T) {
	tests := []struct {
		name, src string
		ok        bool
	}{
		{"an object literal", "module.exports = {a: 1};", true},
		{"declarations and a use-strict directive before it", "'use strict';\nconst path = require('path');\nfunction f() {}\nmodule.exports = {a: f};", true},
		{"a required module", "module.exports = require('./x');", false},
		{"a variable", "const c = {};\nmodule.exports = c;", false},
		{"exports.x assignments", "exports.a = 1;", false},
		{"a later property assignment", "module.exports = {};\nmodule.exports.a = 1;", false},
		{"an if statement", "module.exports = {};\nif (x) { module.exports.a = 1 }", false},
		{"nothing exported", "const a = 1;", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseJSFile("f.js", tt.src)
			if (err == nil) != tt.ok {
				t.Errorf("parse: %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !tt.ok && !strings.Contains(err.Error(), "module.exports = { … }") {
				t.Errorf("the message does not ask for the shape: %v", err)
			}
		})
	}
}

// JSON files keep their key order and indentation, and are rewritten only
// when changed.
func TestJSONKeepsKeyOrder(t *testing.T) {
	src := "{\n    \"z\": 1,\n    \"a\": {\"y\": [1, 2], \"b\": null},\n    \"m\": 1.50\n}\n"
	d, err := parseJSONFile("x.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if string(d.bytes()) != src {
		t.Errorf("an unchanged file was rewritten:\n%s", d.bytes())
	}
	if err := d.rename(p("a.y"), "q"); err != nil {
		t.Fatal(err)
	}
	want := "{\n    \"z\": 1,\n    \"a\": {\n        \"q\": [1, 2],\n        \"b\": null\n    },\n    \"m\": 1.50\n}\n"
	if got := string(d.bytes()); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
