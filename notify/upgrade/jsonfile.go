package upgrade

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// jsonFile is a .json config file. It is decoded into ordered objects and,
// when an edit changed it, written back as JSON with the keys in their
// original order and the file's own indentation.
type jsonFile struct {
	name   string
	orig   []byte
	root   *omap
	lines  map[*omap]map[string]int // line of each key, for messages
	indent string
	edited bool
	crlf   bool // the file's lines end in \r\n
}

func parseJSONFile(name string, data []byte) (*jsonFile, error) {
	f := &jsonFile{name: name, orig: data, lines: map[*omap]map[string]int{}, indent: detectIndent(string(data)), crlf: bytes.Contains(data, []byte("\r\n"))}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := f.decode(dec, data)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, f.errAt(data, dec.InputOffset(), "unexpected text after the top-level value")
	}
	m, ok := v.(*omap)
	if !ok {
		return nil, fmt.Errorf("%s: the file must hold a JSON object", name)
	}
	f.root = m
	return f, nil
}

func (f *jsonFile) errAt(data []byte, off int64, msg string) error {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return &syntaxError{file: f.name, line: line, col: col, msg: "cannot parse as JSON: " + msg}
}

func (f *jsonFile) decode(dec *json.Decoder, data []byte) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, f.jsonErr(err, dec, data)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := newOmap()
			f.lines[m] = map[string]int{}
			for dec.More() {
				off := dec.InputOffset()
				kt, err := dec.Token()
				if err != nil {
					return nil, f.jsonErr(err, dec, data)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, f.errAt(data, off, "object key expected")
				}
				if _, dup := m.vals[k]; dup {
					return nil, f.errAt(data, off, fmt.Sprintf("duplicate key %q", k))
				}
				v, err := f.decode(dec, data)
				if err != nil {
					return nil, err
				}
				m.set(k, v)
				f.lines[m][k] = bytes.Count(data[:min(int(off)+1, len(data))], []byte("\n")) + 1
			}
			if _, err := dec.Token(); err != nil {
				return nil, f.jsonErr(err, dec, data)
			}
			return m, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := f.decode(dec, data)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, f.jsonErr(err, dec, data)
			}
			return arr, nil
		}
		return nil, f.errAt(data, dec.InputOffset(), "unexpected "+t.String())
	case json.Number:
		return numberLit(t.String()), nil
	default:
		return t, nil
	}
}

func (f *jsonFile) jsonErr(err error, dec *json.Decoder, data []byte) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return f.errAt(data, se.Offset, se.Error())
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return f.errAt(data, int64(len(data)), "unexpected end of file")
	}
	return f.errAt(data, dec.InputOffset(), err.Error())
}

func (f *jsonFile) walk(path []string) (*omap, bool) {
	m := f.root
	for _, k := range path {
		v, ok := m.get(k)
		if !ok {
			return nil, false
		}
		sub, ok := v.(*omap)
		if !ok {
			return nil, false
		}
		m = sub
	}
	return m, true
}

func (f *jsonFile) get(path []string) (node, bool) {
	parent, ok := f.walk(path[:len(path)-1])
	if !ok {
		return node{}, false
	}
	k := path[len(path)-1]
	v, ok := parent.get(k)
	if !ok {
		return node{}, false
	}
	n := node{src: renderJSON(v, "  ", false), line: f.lines[parent][k]}
	if _, isObj := v.(*omap); isObj {
		n.kind = kindObject
	} else if arr, isArr := v.([]any); isArr && containsObject(arr) {
		n.kind = kindDynamic
	} else {
		n.kind, n.static = kindStatic, plain(v)
	}
	return n, true
}

// jsonValue returns the raw JSON value at path (objects as *omap).
func (f *jsonFile) jsonValue(path []string) (any, bool) {
	parent, ok := f.walk(path[:len(path)-1])
	if !ok {
		return nil, false
	}
	return parent.get(path[len(path)-1])
}

func containsObject(arr []any) bool {
	for _, x := range arr {
		switch x := x.(type) {
		case *omap:
			return true
		case []any:
			if containsObject(x) {
				return true
			}
		}
	}
	return false
}

func (f *jsonFile) keys(path []string) []string {
	m, ok := f.walk(path)
	if !ok {
		return nil
	}
	return append([]string(nil), m.keys...)
}

func (f *jsonFile) del(path []string) error {
	parent, ok := f.walk(path[:len(path)-1])
	if !ok {
		return nil
	}
	if _, ok := parent.get(path[len(path)-1]); ok {
		parent.del(path[len(path)-1])
		f.edited = true
	}
	// An object left empty adds nothing to the merged config.
	if len(parent.keys) == 0 && len(path) > 1 {
		return f.del(path[:len(path)-1])
	}
	return nil
}

func (f *jsonFile) set(path []string, v value) error {
	if !v.isStatic || v.method {
		return fmt.Errorf("%s: %s would need a JavaScript expression (%s); convert the file to .js first", f.name, strings.Join(path, "."), v.src)
	}
	m := f.root
	for i, k := range path[:len(path)-1] {
		sub, ok := m.get(k)
		if !ok {
			nm := newOmap()
			m.set(k, nm)
			m = nm
			continue
		}
		o, ok := sub.(*omap)
		if !ok {
			return fmt.Errorf("%s:%d: cannot add %s: %s is not an object", f.name, f.lines[m][k], strings.Join(path, "."), strings.Join(path[:i+1], "."))
		}
		m = o
	}
	m.set(path[len(path)-1], toJSONValue(v.static))
	f.edited = true
	return nil
}

func toJSONValue(v any) any {
	switch v := v.(type) {
	case float64:
		return numberLit(formatNumber(v))
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = toJSONValue(x)
		}
		return out
	}
	return v
}

func (f *jsonFile) rename(path []string, newKey string) error {
	parent, ok := f.walk(path[:len(path)-1])
	if !ok {
		return nil
	}
	if _, ok := parent.get(path[len(path)-1]); ok {
		parent.rename(path[len(path)-1], newKey)
		f.edited = true
	}
	return nil
}

func (f *jsonFile) move(from, to []string) error {
	v, ok := f.jsonValue(from)
	if !ok {
		return nil
	}
	parent, _ := f.walk(from[:len(from)-1])
	parent.del(from[len(from)-1])
	f.edited = true
	if err := f.set(to, value{static: v, isStatic: true}); err != nil {
		return err
	}
	if len(parent.keys) == 0 && len(from) > 1 {
		return f.del(from[:len(from)-1])
	}
	return nil
}

func (f *jsonFile) bytes() []byte {
	if !f.edited {
		return f.orig
	}
	return f.lineEnds(renderJSON(f.root, f.indent, false) + "\n")
}

func (f *jsonFile) lineEnds(s string) []byte {
	if f.crlf {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	return []byte(s)
}

func (f *jsonFile) changed() bool   { return f.edited }
func (f *jsonFile) notes() []string { return nil }

func (f *jsonFile) export(path []string) (value, bool) {
	v, ok := f.jsonValue(path)
	if !ok {
		return value{}, false
	}
	return value{static: v, isStatic: true}, true
}

func (f *jsonFile) extract(path []string) ([]byte, error) {
	v, ok := f.jsonValue(path)
	if !ok {
		return nil, fmt.Errorf("%s: no %s", f.name, strings.Join(path, "."))
	}
	m, ok := v.(*omap)
	if !ok {
		return nil, fmt.Errorf("%s:%d: %s is not an object", f.name, f.lines[f.root][path[0]], strings.Join(path, "."))
	}
	return f.lineEnds(renderJSON(m, f.indent, false) + "\n"), nil
}
