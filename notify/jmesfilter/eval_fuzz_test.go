package jmesfilter

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FuzzEvaluate runs any expression against any JSON data on the bounded
// evaluator, without the recover that Match puts around it: no input may
// panic, every evaluation stays within its step and byte budget, and what
// it really allocates stays in proportion to the byte budget and the data.
func FuzzEvaluate(f *testing.F) {
	for _, s := range [][2]string{
		{"a == 'b'", `{"a":"b"}`},
		{"pad_left(s, w)", `{"s":"x","w":1e12}`},
		{"length(" + strings.Repeat("[@,@][] | ", 30) + "@)", `[1]`},
		{"to_string(" + strings.Repeat("[@,@] | ", 30) + "@)", `"x"`},
		{"sort_by(@, &a)[0].a", `[{"a":2},{"a":1}]`},
		{"let $x = a in $x[::-1]", `{"a":[1,2,3]}`},
		{"a[::9223372036854775807]", `{"a":[1,2,3]}`},
		{"a[-9223372036854775808:]", `{"a":[1,2,3]}`},
		{"find_first(s, 'x', `5`, `1`)", `{"s":"xxxx"}`},
		{"replace(s, '', s)", `{"s":"abc"}`},
		{"contains([[1]], [`1`])", `null`},
		{"*.a | [*][*]", `{"x":{"a":[[1]]}}`},
		{"zip(a, a, a)", `{"a":[1,2]}`},
		{"group_by(a, &b)", `{"a":[{"b":"x"},{"b":"y"}]}`},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	e, err := NewWithLimits(nil, Limits{Steps: 20_000, Bytes: 256 << 10, Time: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string, raw []byte) {
		var data any
		if err := json.Unmarshal(raw, &data); err != nil {
			data = string(raw)
		}
		flt, err := e.Compile(expr)
		if err != nil {
			return
		}
		ev := &evaluator{ctx: context.Background(), engine: e, root: data, limits: e.limits, deadline: time.Now().Add(e.limits.Time)}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _ = ev.eval(flt.node, data, nil)
		runtime.ReadMemStats(&after)
		if ev.steps > e.limits.Steps || ev.bytes > e.limits.Bytes {
			t.Fatalf("%q: %d steps, %d bytes: over the limits", expr, ev.steps, ev.bytes)
		}
		// Slack for what is not charged: small headers, and the data
		// being read (a string slice copies it as runes).
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(4*e.limits.Bytes)+64*uint64(len(raw))+1<<20 {
			t.Fatalf("%q on %d bytes of data allocated %d bytes", expr, len(raw), alloc)
		}
	})
}
