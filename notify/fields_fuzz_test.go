package notify_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify"
)

// FuzzFieldsJSON checks that any JSON object a client sends survives being
// read into Fields and written back: the written form reads back to the
// same document, and is valid JSON.
func FuzzFieldsJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1,2.5,"x",null,true],"c":{"d":{}}}`, `{"big":3000000000,"neg":-1e300}`, `{"a":1,"a":2}`, `{"\u00e9":"\ud83d\ude00"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var doc notify.Fields
		if err := json.Unmarshal([]byte(in), &doc); err != nil {
			return
		}
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("marshal %s: %v", in, err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %s from %s", out, in)
		}
		var again notify.Fields
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("re-read %s: %v", out, err)
		}
		out2, _ := json.Marshal(again)
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable: %s then %s", out, out2)
		}
	})
}

// FuzzDecodeJSONValue feeds any bytes, as a client may send them as a
// request body, to the one decoder every route uses: it must not panic,
// must refuse nesting beyond MaxDepth and objects beyond MaxKeys, must
// read what it accepts as JSON.parse does (the last of repeated keys wins),
// and must allocate in proportion to the input, whatever its shape.
func FuzzDecodeJSONValue(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1,"a":2,"b":[1,{"c":null}]}`, `[[[[1]]]]`, strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70),
		`{"a":` + strings.Repeat(`[`, 64) + strings.Repeat(`]`, 64) + `}`, `{"k":1,"k":{"k":[]},"j":2,"k":3}`,
		`"x"`, `1e400`, `{"a":1} trailing`, `{"a"`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, err := notify.DecodeJSONValue(in)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10+256*uint64(len(in)) {
			t.Fatalf("%d bytes of input allocated %d bytes", len(in), alloc)
		}
		if err != nil {
			var ne *strconv.NumError
			if json.Valid(in) && !errors.Is(err, notify.ErrTooDeep) && !errors.Is(err, notify.ErrTooManyKeys) && !errors.As(err, &ne) {
				t.Fatalf("refused %q, which is JSON: %v", in, err)
			}
			return
		}
		if d := depth(v); d > notify.MaxDepth {
			t.Fatalf("accepted a value %d levels deep", d)
		}
		var want any
		if err := json.Unmarshal(in, &want); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", in, err)
		}
		got, _ := json.Marshal(notify.PlainValue(v))
		exp, _ := json.Marshal(want)
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal(exp, &w)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("read %s as %s, JSON.parse reads %s", in, got, exp)
		}
		// Every record type takes the document (or refuses it) without
		// panicking.
		if doc, ok := v.(notify.Fields); ok {
			for _, r := range []notify.Record{&notify.Subscription{}, &notify.Notification{}, &notify.Configuration{}, &notify.Bounce{}, &notify.Administrator{}} {
				if err := r.SetFields(doc); err == nil {
					_ = r.Fields()
				}
			}
		}
	})
}

// depth is how deeply objects and arrays nest in v (a scalar is 0).
func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case notify.Fields:
		for _, e := range x {
			d = max(d, depth(e.Value))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}
