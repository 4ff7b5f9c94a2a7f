package sso

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"unicode/utf8"
)

// referenceDecodeExact is decodeExact written the plain way, on
// json.Decoder's tokens: the fuzz target checks the fast walk against it.
func referenceDecodeExact(data []byte, v any) error {
	if !utf8.Valid(data) {
		return errors.New("not UTF-8")
	}
	rv := reflect.ValueOf(v).Elem()
	fields := jsonFields(rv.Type())
	d := json.NewDecoder(bytes.NewReader(data))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		name := t.(string)
		if seen[name] {
			return errors.New("duplicate")
		}
		seen[name] = true
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return err
		}
		if i, ok := fields.index[name]; ok {
			if err := json.Unmarshal(raw, rv.Field(i).Addr().Interface()); err != nil {
				return err
			}
		}
	}
	if t, err := d.Token(); err != nil || t != json.Delim('}') {
		return errors.New("not a JSON object")
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

// Any bytes: no panic, and the same verdict and the same claims as the
// plain decoder.
func FuzzDecodeExact(f *testing.F) {
	for _, s := range []string{
		`{"iss":"i","sub":"s","aud":["a","b"],"exp":1.5,"typ":"Bearer"}`,
		`{"sub":"a","Sub":"b"}`, `{"sub":"a","sub":"b"}`, `{"s\u0075b":"a","sub":"b"}`,
		`{"nonce":null,"at_hash":{"x":[1,"]}"]},"azp":"p"}`, ` { "sub" : "x" , "exp" : 1e3 } `,
		`{}`, `[]`, `{"sub":1}`, `{"exp":"1"}`, `{"a":"\"}"}`, `{"sub":"x"} {}`, `{"\ud800":1,"\ufffd":2}`, "{\"s\x88b\":1,\"s\x85b\":2}",
	} {
		f.Add([]byte(s))
	}
	// Past the linear search's 32 names: a duplicate found in the map.
	many := `{"sub":"x"`
	for i := range 40 {
		many += fmt.Sprintf(`,"c%d":%d`, i, i)
	}
	f.Add([]byte(many + `}`))
	f.Add([]byte(many + `,"c35":1}`))
	f.Add([]byte(many + `,"sub":"y"}`))
	f.Add([]byte(many + `,"Sub":"y"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want accessClaims
		errGot := decodeExact(data, &got)
		errWant := referenceDecodeExact(data, &want)
		if (errGot == nil) != (errWant == nil) {
			t.Fatalf("%q: decodeExact error %v, reference error %v", data, errGot, errWant)
		}
		if errGot == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decodeExact %+v, reference %+v", data, got, want)
		}
	})
}

// The verdicts the fuzz target's seeds must give, past the linear search's
// 32 names included.
func TestDecodeExactVerdicts(t *testing.T) {
	many := `{"sub":"x"`
	for i := range 40 {
		many += fmt.Sprintf(`,"c%d":%d`, i, i)
	}
	cases := []struct {
		name, data string
		wantSub    string // "" for an error
	}{
		{"41 distinct members", many + `}`, "x"},
		{"a repeated member past the 32nd", many + `,"c35":1}`, ""},
		{"sub repeated past the 32nd", many + `,"sub":"y"}`, ""},
		{"Sub past the 32nd does not replace sub", many + `,"Sub":"y"}`, "x"},
		{"Sub alone is no sub", `{"Sub":"y"}`, ""},
		{"invalid UTF-8 in a name", "{\"s\xffb\":\"y\",\"sub\":\"x\"}", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var cl accessClaims
			err := decodeExact([]byte(tc.data), &cl)
			if tc.wantSub == "" {
				if err == nil && cl.Subject != "" {
					t.Fatalf("accepted with sub %q", cl.Subject)
				}
				return
			}
			if err != nil || cl.Subject != tc.wantSub {
				t.Fatalf("sub %q, error %v; want %q", cl.Subject, err, tc.wantSub)
			}
		})
	}
}
