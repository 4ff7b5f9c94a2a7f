package sso

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"
)

// decodeExact fills the struct v points to from the JSON object data (a
// token's header or claims), matching each member to the field whose json
// tag names it exactly, and refuses an object that names a member twice.
//
// encoding/json alone will not do for tokens. It matches member names to
// fields ignoring case and keeps the last of duplicates, so a payload
// {"sub":"alice","Sub":"admin"} — a provider that lets users add claims of
// their choosing signs exactly that — would be read as subject "admin",
// while another reader of the same token (a gateway, the provider's own
// introspection) reads "alice". Which token we accept must not depend on
// such parser differences: RFC 7519 §4 lets a JWT parser refuse duplicate
// names, and we do, exact duplicates included (JSON escapes are decoded
// first, so "s\u0075b" is "sub"; text that is not UTF-8 is refused).
//
// It runs on every request, so it walks the object's top level itself
// (after json.Valid) rather than through json.Decoder's tokens, which
// doubled the allocations of a cookie-authenticated request.
func decodeExact(data []byte, v any) error {
	// RFC 8259 §8.1: JSON exchanged between systems is UTF-8. Invalid bytes
	// would otherwise let two names differ here and be equal to a reader
	// that replaces them with U+FFFD, as encoding/json does.
	if !utf8.Valid(data) || !json.Valid(data) {
		return errors.New("not valid UTF-8 JSON")
	}
	rv := reflect.ValueOf(v).Elem()
	fields := jsonFields(rv.Type())
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return errors.New("not a JSON object")
	}
	var seen members
	i = skipSpace(data, i+1)
	for data[i] != '}' {
		end := skipValue(data, i) // the member name, a string
		name := data[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var s string
			if err := json.Unmarshal(data[i:end], &s); err != nil {
				return err
			}
			name = []byte(s)
		}
		if !seen.add(name) {
			return fmt.Errorf("member %q appears more than once", clip(string(name)))
		}
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		end = skipValue(data, i)
		if f, ok := fields[string(name)]; ok {
			if err := json.Unmarshal(data[i:end], rv.Field(f).Addr().Interface()); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return nil
}

// members are the names seen so far in an object. Tokens have a few dozen
// claims, which a linear search handles best; a crafted 64 KiB token with
// thousands of them gets a map, so that it costs linear time too.
type members struct {
	list [][]byte
	set  map[string]struct{}
}

// add records name and reports whether it was new.
func (m *members) add(name []byte) bool {
	if m.set != nil {
		if _, dup := m.set[string(name)]; dup {
			return false
		}
		m.set[string(name)] = struct{}{}
		return true
	}
	for _, n := range m.list {
		if bytes.Equal(n, name) {
			return false
		}
	}
	m.list = append(m.list, name)
	if len(m.list) > 32 {
		m.set = make(map[string]struct{}, 2*len(m.list))
		for _, n := range m.list {
			m.set[string(n)] = struct{}{}
		}
	}
	return true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at data[i], which
// json.Valid has already vouched for.
func skipValue(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of a literal inside the enclosing object
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

var fieldCache sync.Map // reflect.Type → map[string]int

// jsonFields maps the json names of a struct's fields to their indices.
func jsonFields(t reflect.Type) map[string]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]int)
	}
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	fieldCache.Store(t, m)
	return m
}
