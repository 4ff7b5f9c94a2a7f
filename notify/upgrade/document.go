package upgrade

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dop251/goja/ast"
)

// kind tells what the upgrade rules may assume about a config value.
type kind int

const (
	kindObject  kind = iota // an object literal whose properties can be edited
	kindStatic              // a literal: string, number, boolean, null or an array of them
	kindDynamic             // an expression only known when the file runs (process.env, functions, …)
)

// node is a value read from a config file.
type node struct {
	kind   kind
	static any    // for kindStatic: string, float64, bool, nil or []any
	src    string // source text of the value as written
	line   int
	expr   ast.Expression            // JavaScript files only
	consts map[string]ast.Expression // the file's top-level constants, to judge identifiers
}

// value is a value to write. src, when set, is JavaScript source written at
// indentation zero; otherwise static is rendered in the file's language.
type value struct {
	src      string
	static   any // string, float64, bool, nil, []any or *omap
	isStatic bool
	comments string // comment lines to put before the property (JavaScript only)
	method   bool   // src is a whole method property (`f(x) { … }`), key included
}

func staticValue(v any) value { return value{static: v, isStatic: true} }

func (v value) jsSource() string {
	if v.src != "" {
		return v.src
	}
	return renderJSON(v.static, "  ", true)
}

// configDoc is one config, middleware or datasource file. The upgrade rules
// are written once against this interface and apply to .json and .js files
// alike.
type configDoc interface {
	get(path []string) (node, bool)
	keys(path []string) []string // keys of the object at path, in file order
	del(path []string) error
	set(path []string, v value) error
	rename(path []string, newKey string) error
	move(from, to []string) error
	// export returns the value at path ready to be written into another
	// file: JSON values as data, JavaScript values as source text with
	// their leading comments.
	export(path []string) (value, bool)
	// extract returns the file with its top-level object replaced by the
	// object at path (a v1 datasources file holds {db: {…}}).
	extract(path []string) ([]byte, error)
	bytes() []byte
	changed() bool
	notes() []string
}

// parseDoc parses a config file by its extension. .ts files are read as
// JavaScript: the shape `module.exports = { … }` without type annotations
// is both.
func parseDoc(name string, data []byte) (configDoc, error) {
	// Node strips a byte order mark before parsing; so do we.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	switch filepath.Ext(name) {
	case ".json":
		return parseJSONFile(name, data)
	case ".js":
		return parseJSFile(name, string(data))
	case ".ts":
		d, err := parseJSFile(name, string(data))
		if err != nil {
			return nil, fmt.Errorf("%w (TypeScript files are edited as JavaScript: rename it to .js, or remove type annotations)", err)
		}
		return d, nil
	}
	return nil, fmt.Errorf("%s: not a .json, .js or .ts file", name)
}

func p(path string) []string { return strings.Split(path, ".") }

// omap is a JSON object that keeps its key order.
type omap struct {
	keys []string
	vals map[string]any
}

func newOmap() *omap { return &omap{vals: map[string]any{}} }

func (m *omap) get(k string) (any, bool) {
	v, ok := m.vals[k]
	return v, ok
}

func (m *omap) set(k string, v any) {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
}

func (m *omap) del(k string) {
	if _, ok := m.vals[k]; !ok {
		return
	}
	delete(m.vals, k)
	for i, x := range m.keys {
		if x == k {
			m.keys = append(m.keys[:i:i], m.keys[i+1:]...)
			break
		}
	}
}

func (m *omap) rename(from, to string) {
	v, ok := m.vals[from]
	if !ok {
		return
	}
	delete(m.vals, from)
	if _, dup := m.vals[to]; dup {
		m.del(to)
	}
	for i, x := range m.keys {
		if x == from {
			m.keys[i] = to
		}
	}
	m.vals[to] = v
}

// renderJSON writes v like JSON.stringify(v, null, indent). With js set,
// the output is meant for a JavaScript file: keys are bare where possible
// and strings single-quoted, as in the original's own files.
func renderJSON(v any, indent string, js bool) string {
	var b strings.Builder
	writeJSON(&b, v, indent, "", js)
	return b.String()
}

func writeJSON(b *strings.Builder, v any, indent, cur string, js bool) {
	switch v := v.(type) {
	case *omap:
		if len(v.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range v.keys {
			b.WriteString(cur + indent)
			if js {
				b.WriteString(jsKey(k))
			} else {
				b.WriteString(jsonString(k))
			}
			b.WriteString(": ")
			writeJSON(b, v.vals[k], indent, cur+indent, js)
			if i < len(v.keys)-1 || js {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(cur + "}")
	case []any:
		if len(v) == 0 {
			b.WriteString("[]")
			return
		}
		if inline := inlineArray(v, js); inline != "" {
			b.WriteString(inline)
			return
		}
		b.WriteString("[\n")
		for i, x := range v {
			b.WriteString(cur + indent)
			writeJSON(b, x, indent, cur+indent, js)
			if i < len(v)-1 || js {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(cur + "]")
	case string:
		if js {
			b.WriteString(jsString(v))
		} else {
			b.WriteString(jsonString(v))
		}
	case numberLit:
		b.WriteString(string(v))
	case float64:
		b.WriteString(formatNumber(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	default:
		b.WriteString(fmt.Sprint(v))
	}
}

// numberLit is a JSON number kept as written.
type numberLit string

// formatNumber writes a number as JavaScript's Number#toString does for
// the values config files hold.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// plain converts a JSON value to the plain Go values node.static holds.
func plain(v any) any {
	switch v := v.(type) {
	case numberLit:
		f, _ := strconv.ParseFloat(string(v), 64)
		return f
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = plain(x)
		}
		return out
	}
	return v
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// inlineArray writes a short array of scalars on one line, as the
// original's own files (formatted by prettier) have them.
func inlineArray(v []any, js bool) string {
	parts := make([]string, len(v))
	for i, x := range v {
		switch x.(type) {
		case *omap, []any:
			return ""
		}
		parts[i] = renderJSON(x, "", js)
	}
	s := "[" + strings.Join(parts, ", ") + "]"
	if len(s) > 60 {
		return ""
	}
	return s
}
