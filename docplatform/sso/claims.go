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
// doubled the allocations of a cookie-authenticated request, and then lets
// encoding/json decode the whole object in one pass unless some member is
// another spelling of a field's name; only then are the exactly named
// members decoded one by one.
func decodeExact(data []byte, v any) error {
	// RFC 8259 §8.1: JSON exchanged between systems is UTF-8. Invalid bytes
	// would otherwise let two names differ here and be equal to a reader
	// that replaces them with U+FFFD, as encoding/json does.
	if !utf8.Valid(data) || !json.Valid(data) {
		return errors.New("not valid UTF-8 JSON")
	}
	rv := reflect.ValueOf(v).Elem()
	fields := jsonFields(rv.Type())
	type span struct{ field, start, end int }
	var found [16]span // the members that name a field exactly
	exact, folded := found[:0], false
	// The names seen so far: tokens have a few dozen claims, which a
	// linear search over a stack array handles best; a crafted 64 KiB
	// token with thousands of them spills into a map, so that it costs
	// linear time too.
	var listed [maxListed][]byte
	nListed := 0
	var spilled map[string]struct{}
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return errors.New("not a JSON object")
	}
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
		dup := false
		if spilled != nil {
			_, dup = spilled[string(name)]
			spilled[string(name)] = struct{}{}
		} else {
			for _, l := range listed[:nListed] {
				if bytes.Equal(l, name) {
					dup = true
					break
				}
			}
			if nListed < maxListed {
				listed[nListed] = name
				nListed++
			} else {
				spilled = make(map[string]struct{}, 4*maxListed)
				for _, l := range listed {
					spilled[string(l)] = struct{}{}
				}
				spilled[string(name)] = struct{}{}
			}
		}
		if dup {
			return fmt.Errorf("member %q appears more than once", clip(string(name)))
		}
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		end = skipValue(data, i)
		if f, ok := fields.index[string(name)]; ok {
			exact = append(exact, span{f, i, end})
		} else if !folded {
			for _, n := range fields.names {
				if bytes.EqualFold(name, n) {
					folded = true // "Sub" beside (or instead of) "sub"
					break
				}
			}
		}
		i = skipSpace(data, end)
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	if !folded {
		// No name repeats and none is another spelling of a field's: the
		// standard decoder, in one pass, reads exactly the same.
		return json.Unmarshal(data, v)
	}
	for _, sp := range exact {
		if err := json.Unmarshal(data[sp.start:sp.end], rv.Field(sp.field).Addr().Interface()); err != nil {
			return fmt.Errorf("%s: %w", rv.Type().Field(sp.field).Tag.Get("json"), err)
		}
	}
	return nil
}

// maxListed is how many member names decodeExact searches linearly.
const maxListed = 32

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

// structFields are the json names of a struct's fields.
type structFields struct {
	index map[string]int // name → field index
	names [][]byte
}

var fieldCache sync.Map // reflect.Type → structFields

func jsonFields(t reflect.Type) structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(structFields)
	}
	f := structFields{index: make(map[string]int, t.NumField())}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			f.index[name] = i
			f.names = append(f.names, []byte(name))
		}
	}
	fieldCache.Store(t, f)
	return f
}
