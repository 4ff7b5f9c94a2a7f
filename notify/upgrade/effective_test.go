package upgrade

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dop251/goja"
)

// jsHelpers is the v3 and v4 loaders' merge (lodash mergeWith with arrays
// replaced) and the v4 key renames applied to a loaded config, in
// JavaScript, so the test compares what the service would see.
const jsHelpers = `
function isPlain(o) { return o !== null && typeof o === 'object' && !Array.isArray(o) && Object.getPrototypeOf(o) === Object.prototype; }
function merge(t, s) {
  for (const k of Object.keys(s)) {
    const sv = s[k], tv = t[k];
    if (sv === undefined) { if (!(k in t)) t[k] = undefined; continue; }
    if (isPlain(sv)) { if (isPlain(tv)) merge(tv, sv); else t[k] = merge({}, sv); }
    else t[k] = sv;
  }
  return t;
}
function getp(o, p) { for (const k of p) { if (!isPlain(o) || !(k in o)) return undefined; o = o[k]; } return o; }
function has(o, p) { for (const k of p.slice(0, -1)) { if (!isPlain(o) || !(k in o)) return false; o = o[k]; } return isPlain(o) && (p[p.length-1] in o); }
function delp(o, p) { for (const k of p.slice(0, -1)) { o = o[k]; } delete o[p[p.length-1]]; }
function setp(o, p, v) { for (const k of p.slice(0, -1)) { if (!isPlain(o[k])) o[k] = {}; o = o[k]; } o[p[p.length-1]] = v; }
function mv(o, from, to) { if (!has(o, from)) return; const v = getp(o, from); delp(o, from); setp(o, to, v); }
function renamesV4(c) {
  mv(c, ['smtp'], ['email', 'smtp']);
  mv(c, ['defaultSmtp'], ['email', 'defaultSmtp']);
  mv(c, ['inboundSmtpServer'], ['email', 'inboundSmtpServer']);
  mv(c, ['email', 'inboundSmtpServer', 'bounce'], ['email', 'bounce']);
  mv(c, ['notification', 'handleBounce'], ['email', 'bounce', 'enabled']);
  mv(c, ['notification', 'handleListUnsubscribeByEmail'], ['email', 'listUnsubscribeByEmail', 'enabled']);
  mv(c, ['smsServiceProvider'], ['sms', 'provider']);
  if (isPlain(c.sms)) for (const k of Object.keys(c.sms)) if (!['provider','providerSettings','throttle'].includes(k)) mv(c, ['sms', k], ['sms', 'providerSettings', k]);
  if (has(c, ['subscription', 'unsubscriptionEmailDomain'])) {
    if (!has(c, ['email', 'inboundSmtpServer', 'domain'])) mv(c, ['subscription', 'unsubscriptionEmailDomain'], ['email', 'inboundSmtpServer', 'domain']);
    else delp(c, ['subscription', 'unsubscriptionEmailDomain']);
  }
  for (const k of Object.keys(c)) if (isPlain(c[k]) && Object.keys(c[k]).length === 0) delete c[k];
  return c;
}
// functions compare by their source text
function plainOf(v) {
  if (typeof v === 'function') return 'function: ' + String(v);
  if (Array.isArray(v)) return v.map(plainOf);
  if (isPlain(v)) { const o = {}; for (const k of Object.keys(v)) if (v[k] !== undefined) o[k] = plainOf(v[k]); return o; }
  return v;
}
`

// loadConfig evaluates config files in order, as the service loads them,
// with the given process environment, and returns the merged result.
func loadConfig(t *testing.T, dir string, rels []string, env map[string]string, renames bool) any {
	t.Helper()
	vm := goja.New()
	if _, err := vm.RunString(jsHelpers); err != nil {
		t.Fatal(err)
	}
	penv := vm.NewObject()
	for k, v := range env {
		penv.Set(k, v)
	}
	proc := vm.NewObject()
	proc.Set("env", penv)
	vm.Set("process", proc)
	acc, _ := vm.RunString("({})")
	merge, _ := goja.AssertFunction(vm.Get("merge"))
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			continue
		}
		var v goja.Value
		if strings.HasSuffix(rel, ".json") {
			v, err = vm.RunString("(" + string(data) + ")")
		} else {
			v, err = vm.RunString("(function(){ var module = {exports: {}}; var exports = module.exports;\n" + string(data) + "\nreturn module.exports; })()")
		}
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if acc, err = merge(goja.Undefined(), acc, v); err != nil {
			t.Fatal(err)
		}
	}
	if renames {
		f, _ := goja.AssertFunction(vm.Get("renamesV4"))
		acc, _ = f(goja.Undefined(), acc)
	}
	f, _ := goja.AssertFunction(vm.Get("plainOf"))
	out, _ := f(goja.Undefined(), acc)
	return out.Export()
}

// v3 loaded config.local before config.<env>; v4 loads only the local
// files once the environment's are merged into them. The effective config
// must be the same (keys renamed), with the environment variables the
// files read both set and unset.
func TestV3ToV4KeepsTheEffectiveConfig(t *testing.T) {
	cases := []struct {
		fixture, env string
		before       []string
		after        []string
	}{
		{"v3-js", "production", []string{"src/config.local.js", "src/config.production.js"}, []string{"src/config.local.js"}},
		{"v3-json", "dev", []string{"src/config.local.json", "src/config.dev.json"}, []string{"src/config.local.json"}},
		{"v3-js", "production", []string{"src/middleware.local.js", "src/middleware.production.json"}, []string{"src/middleware.local.js"}},
	}
	envs := []map[string]string{
		{},
		{"NOTIFY_HTTP_HOST": "https://prod.example.gov", "TWILIO_SID": "sid", "TWILIO_TOKEN": "tok", "MONGODB_URL": "mongodb://x/y"},
	}
	for _, c := range cases {
		for _, e := range envs {
			before := filepath.Join("testdata/steps", c.fixture, "before")
			after := filepath.Join("testdata/steps", c.fixture, "after")
			renames := strings.Contains(c.before[0], "config.")
			want := loadConfig(t, before, c.before, e, renames)
			got := loadConfig(t, after, c.after, e, false)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %v with %v: effective config changed\n got %#v\nwant %#v", c.fixture, c.after, e, got, want)
			}
		}
	}
}

// The merge keeps lodash's semantics for values known only at run time,
// proved by evaluating both layouts.
func TestMergeOfExpressionsKeepsTheEffectiveConfig(t *testing.T) {
	tests := []struct {
		name       string
		local, env string
	}{
		{"an environment read over a literal falls back to the literal when unset",
			"module.exports = { a: 'local', b: { c: 1 } };", "module.exports = { a: process.env.A };"},
		{"an environment read with a default always wins",
			"module.exports = { a: 'local' };", "module.exports = { a: process.env.A || 'env' };"},
		{"nested objects merge key by key",
			"module.exports = { o: { x: 1, y: { z: 2 } } };", "module.exports = { o: { y: { w: process.env.W }, v: [1, 2] } };"},
		{"arrays are replaced, not merged",
			"module.exports = { ips: ['a', 'b'] };", "module.exports = { ips: ['c'] };"},
		{"a function replaces a function",
			"module.exports = { f: function (x) { return 1; } };", "module.exports = { f(x) { return 2; } };"},
		{"an object replaces a string",
			"module.exports = { s: 'x' };", "module.exports = { s: { t: process.env.T } };"},
		{"a string read from the environment over an object",
			"module.exports = { s: { t: 1 } };", "module.exports = { s: process.env.S };"},
		{"keys only in the environment file are added with their comments",
			"module.exports = {\n  a: 1,\n};", "module.exports = {\n  // b is new\n  b: `t${process.env.B}`,\n};"},
		{"declarations the environment file's values use are carried over",
			"const x = 1;\nmodule.exports = { a: x };", "const domain = process.env.D || 'd';\nfunction up(s) { return s.toUpperCase(); }\nmodule.exports = { b: up(domain), c: x2, a: domain };\nfunction x2() { return 2; }"},
		{"an empty local object",
			"module.exports = {};", "module.exports = { a: { b: process.env.B } };"},
	}
	envs := []map[string]string{{}, {"A": "envA", "W": "w", "T": "t", "S": "s", "B": "b", "D": "dom"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"src/config.local.js": tt.local, "src/config.production.js": tt.env})
			w, err := loadWorkspace(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := mergeEnv(w, roleConfig, "production"); err != nil {
				t.Fatal(err)
			}
			w.sync()
			out := t.TempDir()
			writeTree(t, out, map[string]string{"src/config.local.js": string(w.files["src/config.local.js"])})
			for _, e := range envs {
				want := loadConfig(t, dir, []string{"src/config.local.js", "src/config.production.js"}, e, false)
				got := loadConfig(t, out, []string{"src/config.local.js"}, e, false)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("with %v:\n got %#v\nwant %#v\nmerged file:\n%s", e, got, want, w.files["src/config.local.js"])
				}
			}
		})
	}
}

// Where no text can express lodash's merge, the merge is refused with the
// key named.
func TestMergeRefusesWhatOnlyRunTimeCouldDecide(t *testing.T) {
	tests := []struct {
		name, local, env, want string
	}{
		{"an unknown expression over an object", "module.exports = { o: { a: 1 } };", "module.exports = { o: require('./other') };", "cannot merge o"},
		{"a helper declared differently in both files", "const x = 1;\nmodule.exports = { a: x };", "const x = 2;\nmodule.exports = { b: x };", `"x" is declared in both`},
		{"an object over an unknown expression", "const x = {a: 1};\nmodule.exports = { o: x };", "module.exports = { o: { b: 2 } };", "cannot merge o"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"src/config.local.js": tt.local, "src/config.production.js": tt.env})
			w, err := loadWorkspace(dir)
			if err != nil {
				t.Fatal(err)
			}
			err = mergeEnv(w, roleConfig, "production")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
