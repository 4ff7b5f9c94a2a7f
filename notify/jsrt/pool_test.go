package jsrt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/jsrt"
)

func newPool(t *testing.T, code string, opts jsrt.Options) (*jsrt.Pool, map[string]any) {
	t.Helper()
	p, vals, err := jsrt.New([]jsrt.Source{{Name: "config.local.js", Code: code}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := vals[0].(map[string]any)
	if !ok {
		t.Fatalf("exports = %#v", vals[0])
	}
	return p, m
}

func TestExportedValuesAreJSONCompatible(t *testing.T) {
	_, m := newPool(t, `module.exports = {
  n: 3, f: 1.5, s: 'x', b: true, nul: null, und: undefined,
  arr: [1, 'a', null, undefined], obj: {a: {b: 2}},
  date: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)), re: /5\.\d{1,3}/,
  big: 10n, boxed: new String('s'),
};`, jsrt.Options{})
	want := map[string]any{
		"n": 3.0, "f": 1.5, "s": "x", "b": true, "nul": nil,
		"arr": []any{1.0, "a", nil, nil}, "obj": map[string]any{"a": map[string]any{"b": 2.0}},
		"date": "2026-01-02T03:04:05.000Z", "re": `5\.\d{1,3}`, "big": 10.0, "boxed": "s",
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %#v\nwant %#v", m, want)
	}
}

func TestCircularExportsAreRefused(t *testing.T) {
	_, _, err := jsrt.New([]jsrt.Source{{Name: "c.js", Code: "const a = {}; a.self = a; module.exports = {a};"}}, jsrt.Options{})
	var je *jsrt.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, "a.self: circular reference") {
		t.Fatalf("err = %v", err)
	}
}

func TestFunctionsAreCallableByPath(t *testing.T) {
	_, m := newPool(t, `module.exports = {
  prefix: 'p-',
  add(a, b) { return a + b; },
  nested: { greet: function (o) { return 'hi ' + o.name + ' ' + Array.isArray(o.list) + ' ' + o.list.length; } },
  list: [function () { return 'first'; }],
  self() { return this.prefix; },
  obj() { return {a: [1, {b: 'c'}], f: function () {}}; },
  async later(ms) { await new Promise(r => setTimeout(r, ms)); return 'done'; },
  rejects() { return Promise.reject(new Error('nope')); },
  throws() { throw new TypeError('bad arg'); },
  never() { return new Promise(() => {}); },
};`, jsrt.Options{})
	call := func(path string, args ...any) (any, error) {
		var cur any = m
		for _, k := range strings.Split(path, ".") {
			switch c := cur.(type) {
			case map[string]any:
				cur = c[k]
			case []any:
				var i int
				fmt.Sscan(k, &i)
				cur = c[i]
			}
		}
		f, ok := cur.(jsrt.Func)
		if !ok {
			t.Fatalf("%s is %T", path, cur)
		}
		return f(context.Background(), args...)
	}
	cases := []struct {
		name    string
		path    string
		args    []any
		want    any
		wantErr string
	}{
		{"numbers come back as float64", "add", []any{2, 3}, 5.0, ""},
		{"maps and slices arrive as plain objects and arrays", "nested.greet", []any{map[string]any{"name": "ann", "list": []any{1, 2}}}, "hi ann true 2", ""},
		{"typed Go slices arrive as arrays", "nested.greet", []any{map[string]any{"name": "bob", "list": []string{"x"}}}, "hi bob true 1", ""},
		{"functions inside arrays", "list.0", nil, "first", ""},
		{"this is the containing object", "self", nil, "p-", ""},
		{"results are exported, functions in them dropped", "obj", nil, map[string]any{"a": []any{1.0, map[string]any{"b": "c"}}}, ""},
		{"async functions with timers are awaited", "later", []any{5}, "done", ""},
		{"a rejected promise is an error", "rejects", nil, nil, "promise rejected: nope"},
		{"a throw is an error with the file", "throws", nil, nil, "config.local.js"},
		{"a promise that never settles is an error", "never", nil, nil, "never settles"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call(tc.path, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestCallEndsWithItsContext(t *testing.T) {
	_, m := newPool(t, `module.exports = { spin() { for (;;) {} }, wait() { return new Promise(function (r) { setTimeout(r, 60000); }); }, ok() { return 1; } };`,
		jsrt.Options{Size: 1, CallTimeout: time.Minute})
	for _, name := range []string{"spin", "wait"} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		_, err := m[name].(jsrt.Func)(ctx)
		cancel()
		if err == nil {
			t.Fatalf("%s: no error after its context ended", name)
		}
	}
	if got, err := m["ok"].(jsrt.Func)(context.Background()); err != nil || got != 1.0 {
		t.Fatalf("after interrupt: %v %v", got, err)
	}
}

func TestCallResultsAreBounded(t *testing.T) {
	_, m := newPool(t, `module.exports = {
  sparse() { var a = []; a.length = 4000000000; return a; },
  many() { var a = []; for (var i = 0; i < 200000; i++) a.push(i); return a; },
  long() { return 'x'.repeat(9 * 1024 * 1024); },
  keys() { var o = {}; for (var i = 0; i < 200000; i++) o['k' + i] = 1; return o; },
  fine() { var a = []; for (var i = 0; i < 1000; i++) a.push({n: i}); return a; },
};`, jsrt.Options{Size: 1})
	for _, name := range []string{"sparse", "many", "long", "keys"} {
		if _, err := m[name].(jsrt.Func)(context.Background()); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("%s: err = %v, want the result refused", name, err)
		}
	}
	if got, err := m["fine"].(jsrt.Func)(context.Background()); err != nil || len(got.([]any)) != 1000 {
		t.Errorf("fine: %v", err)
	}
}

func TestRunawayCallIsInterrupted(t *testing.T) {
	_, m := newPool(t, `module.exports = { spin() { for (;;) {} }, ok() { return 1; } };`,
		jsrt.Options{Size: 1, CallTimeout: 50 * time.Millisecond})
	if _, err := m["spin"].(jsrt.Func)(context.Background()); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("err = %v", err)
	}
	// The single runtime is usable again afterwards.
	if got, err := m["ok"].(jsrt.Func)(context.Background()); err != nil || got != 1.0 {
		t.Fatalf("after interrupt: %v %v", got, err)
	}
}

// TestPoolConcurrency calls one config function from many goroutines; run
// with -race. Each runtime has its own module state, so per-runtime
// counters add up to the number of calls.
func TestPoolConcurrency(t *testing.T) {
	const size, goroutines, calls = 3, 16, 25
	_, m := newPool(t, `
let n = 0;
const id = Math.random();
module.exports = {
  isAdmin(user) { n++; return {admin: user.roles.indexOf('admin') >= 0, runtime: id, count: n}; },
};`, jsrt.Options{Size: size})
	isAdmin := m["isAdmin"].(jsrt.Func)
	var mu sync.Mutex
	maxCount := map[float64]float64{}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*calls)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				roles := []any{"user"}
				if (g+i)%2 == 0 {
					roles = append(roles, "admin")
				}
				res, err := isAdmin(context.Background(), map[string]any{"roles": roles})
				if err != nil {
					errs <- err
					return
				}
				r := res.(map[string]any)
				if r["admin"] != ((g+i)%2 == 0) {
					errs <- fmt.Errorf("goroutine %d call %d: admin = %v", g, i, r["admin"])
					return
				}
				mu.Lock()
				if c := r["count"].(float64); c > maxCount[r["runtime"].(float64)] {
					maxCount[r["runtime"].(float64)] = c
				}
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(maxCount) > size {
		t.Errorf("%d runtimes used, pool size %d", len(maxCount), size)
	}
	var total float64
	for _, c := range maxCount {
		total += c
	}
	if total != goroutines*calls {
		t.Errorf("calls counted across runtimes = %v, want %d", total, goroutines*calls)
	}
}

func TestProcessEnvAndRequire(t *testing.T) {
	_, m := newPool(t, `
const path = require('path');
const os = require('node:os');
module.exports = {
  env: process.env.MY_VAR,
  missing: process.env.NOT_SET === undefined,
  joined: path.join('/a/b', '..', 'c.pem'),
  base: path.basename('/x/key.pem', '.pem'),
  ext: path.extname('a/b.ts'),
  eol: os.EOL,
  exists: require('fs').existsSync('/definitely/not/here'),
  readErr: (() => { try { require('fs').readFileSync('/definitely/not/here'); } catch (e) { return e.code; } })(),
  lodash: require('lodash').get({a: [{b: 1}]}, 'a[0].b'),
};`, jsrt.Options{Env: map[string]string{"MY_VAR": "v"}})
	want := map[string]any{"env": "v", "missing": true, "joined": "/a/c.pem", "base": "key", "ext": ".ts", "eol": "\n", "exists": false, "readErr": "ENOENT", "lodash": 1.0}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %#v\nwant %#v", m, want)
	}
}

func TestErrorsOfSeveralModulesAreAllReported(t *testing.T) {
	_, vals, err := jsrt.New([]jsrt.Source{
		{Name: "a.js", Code: "module.exports = {"},
		{Name: "b.js", Code: "module.exports = {ok: true};"},
		{Name: "c.js", Code: "\nrequire('child_process');"},
	}, jsrt.Options{})
	var list interface{ Unwrap() []error }
	if !errors.As(err, &list) || len(list.Unwrap()) != 2 {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "a.js:1") || !strings.Contains(err.Error(), "c.js:2") {
		t.Fatalf("err = %v", err)
	}
	if !reflect.DeepEqual(vals[1], map[string]any{"ok": true}) || vals[0] != nil || vals[2] != nil {
		t.Fatalf("values = %#v", vals)
	}
}

func TestTranspileTS(t *testing.T) {
	code, err := jsrt.TranspileTS("c.ts", "const x: number = 1;\nexport const y = x + 1;\n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(code, ": number") || !strings.Contains(code, "sourceMappingURL=data:") {
		t.Fatalf("code = %s", code)
	}
	_, err = jsrt.TranspileTS("c.ts", "\nconst x: = 1;\n")
	var je *jsrt.Error
	if !errors.As(err, &je) || je.Line != 2 || je.File != "c.ts" {
		t.Fatalf("err = %#v", err)
	}
}

func BenchmarkCall(b *testing.B) {
	_, vals, err := jsrt.New([]jsrt.Source{{Name: "c.js", Code: `module.exports = {isAdmin(u) { const r = u.resource_access.NotifyBC.roles; return r.indexOf('admin') > -1; }};`}}, jsrt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	f := vals[0].(map[string]any)["isAdmin"].(jsrt.Func)
	payload := map[string]any{"resource_access": map[string]any{"NotifyBC": map[string]any{"roles": []any{"user", "admin"}}}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if v, err := f(context.Background(), payload); err != nil || v != true {
				b.Fatal(v, err)
			}
		}
	})
}

func TestThrowingGetterIsAnErrorNotACrash(t *testing.T) {
	_, _, err := jsrt.New([]jsrt.Source{{Name: "g.js", Code: "module.exports = {\n  get port() { throw new Error('no port'); },\n};"}}, jsrt.Options{})
	var je *jsrt.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, "no port") || je.File != "g.js" || je.Line != 2 {
		t.Fatalf("err = %#v", err)
	}
}

func TestRelativeRequire(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lib.js", "exports.double = function (x) { return 2 * x; };\n")
	write("data.json", `{"n": 21}`)
	write("typed.ts", "export const triple = (x: number): number => 3 * x;\n")
	write("main.js", "const lib = require('./lib');\nconst d = require('./data.json');\nconst t = require('./typed');\nmodule.exports = {n: lib.double(d.n), f: lib.double, g: t.triple, same: require('./lib.js') === lib};\n")
	src, _ := os.ReadFile(filepath.Join(dir, "main.js"))
	_, vals, err := jsrt.New([]jsrt.Source{{Name: filepath.Join(dir, "main.js"), Code: string(src)}}, jsrt.Options{Root: dir, Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	m := vals[0].(map[string]any)
	if m["n"] != 42.0 || m["same"] != true {
		t.Fatalf("exports = %v", m)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			if got, err := m["f"].(jsrt.Func)(context.Background(), g); err != nil || got != float64(2*g) {
				t.Errorf("double(%d) = %v, %v", g, got, err)
			}
			if got, err := m["g"].(jsrt.Func)(context.Background(), g); err != nil || got != float64(3*g) {
				t.Errorf("triple(%d) = %v, %v", g, got, err)
			}
		}(g)
	}
	wg.Wait()

	_, _, err = jsrt.New([]jsrt.Source{{Name: filepath.Join(dir, "x.js"), Code: "require('./lib');"}}, jsrt.Options{})
	if err == nil || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("without Root: %v", err)
	}
	_, _, err = jsrt.New([]jsrt.Source{{Name: filepath.Join(dir, "x.js"), Code: "require('/etc/passwd');"}}, jsrt.Options{Root: dir})
	if err == nil || !strings.Contains(err.Error(), "only files in the config directory") {
		t.Fatalf("outside Root: %v", err)
	}
}
