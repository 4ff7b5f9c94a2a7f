package jsrt

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/dop251/goja"
)

// Modules lists what require offers to config files.
var Modules = []string{"fs", "lodash", "os", "path", "process"}

func (v *vm) installGlobals(opts Options) {
	rt := v.rt
	process := rt.NewObject()
	env := rt.NewObject()
	keys := make([]string, 0, len(opts.Env))
	for k := range opts.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_ = env.Set(k, opts.Env[k])
	}
	_ = process.Set("env", env)
	_ = process.Set("platform", runtime.GOOS)
	_ = process.Set("cwd", func() string {
		wd, _ := os.Getwd()
		return wd
	})
	_ = rt.Set("process", process)

	console := rt.NewObject()
	for _, level := range []string{"log", "info", "warn", "error", "debug"} {
		level := level
		_ = console.Set(level, func(call goja.FunctionCall) goja.Value {
			if opts.Log != nil {
				parts := make([]string, len(call.Arguments))
				for i, a := range call.Arguments {
					parts[i] = a.String()
				}
				opts.Log(level, strings.Join(parts, " "))
			}
			return goja.Undefined()
		})
	}
	_ = rt.Set("console", console)

	setTimer := func(call goja.FunctionCall, zero bool) goja.Value {
		fn, ok := goja.AssertFunction(call.Argument(0))
		if !ok {
			panic(rt.NewTypeError("callback must be a function"))
		}
		var delay time.Duration
		rest := call.Arguments
		if len(rest) > 0 {
			rest = rest[1:]
		}
		if !zero {
			if ms := call.Argument(1).ToFloat(); ms > 0 {
				delay = time.Duration(ms * float64(time.Millisecond))
			}
			if len(rest) > 0 {
				rest = rest[1:]
			}
		}
		return rt.ToValue(v.loop.add(fn, delay, append([]goja.Value(nil), rest...)))
	}
	_ = rt.Set("setTimeout", func(call goja.FunctionCall) goja.Value { return setTimer(call, false) })
	_ = rt.Set("setImmediate", func(call goja.FunctionCall) goja.Value { return setTimer(call, true) })
	clear := func(call goja.FunctionCall) goja.Value {
		v.loop.clear(call.Argument(0).ToInteger())
		return goja.Undefined()
	}
	_ = rt.Set("clearTimeout", clear)
	_ = rt.Set("clearImmediate", clear)
}

// jsError makes a plain JavaScript Error, so scripts can catch it and
// messages read as in Node.
func jsError(rt *goja.Runtime, msg string) *goja.Object {
	e, err := rt.New(rt.Get("Error"), rt.ToValue(msg))
	if err != nil {
		return rt.NewGoError(errors.New(msg))
	}
	return e
}

// requireFunc is the require of a module in dir. Modules are built once
// per runtime and shared between the files evaluated in it, as in Node.
func (v *vm) requireFunc(dir string) goja.Value {
	rt := v.rt
	return rt.ToValue(func(call goja.FunctionCall) goja.Value {
		name := call.Argument(0).String()
		if strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || strings.HasPrefix(name, "/") {
			return v.requireFile(dir, name)
		}
		name = strings.TrimPrefix(name, "node:")
		switch name {
		case "fs":
			return v.fsModule()
		case "path":
			return v.pathModule()
		case "os":
			return v.osModule()
		case "process":
			return rt.Get("process")
		case "lodash":
			return v.lodashModule()
		}
		panic(jsError(rt, fmt.Sprintf("require(%q): module not available in govkit config files; available: %s",
			call.Argument(0).String(), strings.Join(Modules, ", "))))
	})
}

// requireFile loads a .js, .json or .ts file below the pool's root, with
// Node's resolution (the exact name, then with .js, .json, .ts appended,
// then index.js in a directory).
func (v *vm) requireFile(dir, name string) goja.Value {
	rt := v.rt
	root := v.pool.root
	if root == "" {
		panic(jsError(rt, fmt.Sprintf("require(%q): requiring files is not available here", name)))
	}
	base := filepath.Clean(filepath.Join(dir, name))
	if strings.HasPrefix(name, "/") {
		base = filepath.Clean(name)
	}
	if rel, err := filepath.Rel(root, base); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		panic(jsError(rt, fmt.Sprintf("require(%q): only files in the config directory %s may be required", name, root)))
	}
	var file string
	for _, c := range []string{base, base + ".js", base + ".json", base + ".ts", filepath.Join(base, "index.js")} {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			file = c
			break
		}
	}
	if file == "" {
		e := jsError(rt, fmt.Sprintf("Cannot find module '%s'", name))
		_ = e.Set("code", "MODULE_NOT_FOUND")
		panic(e)
	}
	if m, ok := v.cache[file]; ok {
		return m.Get("exports")
	}
	if filepath.Ext(file) == ".json" {
		b, err := os.ReadFile(file)
		if err != nil {
			panic(jsError(rt, fmt.Sprintf("require(%q): %v", name, err)))
		}
		parse, _ := goja.AssertFunction(rt.Get("JSON").(*goja.Object).Get("parse"))
		val, err := parse(goja.Undefined(), rt.ToValue(string(b)))
		if err != nil {
			panic(jsError(rt, fmt.Sprintf("%s: invalid JSON: %v", file, err)))
		}
		module := rt.NewObject()
		_ = module.Set("exports", val)
		v.cache[file] = module
		return val
	}
	prog, err := v.pool.compileFile(file)
	if err != nil {
		panic(jsError(rt, err.Error()))
	}
	exp, err := v.evalModule(file, prog)
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			panic(ex)
		}
		panic(jsError(rt, err.Error()))
	}
	return exp
}

// compileFile compiles a required file once for all runtimes.
func (p *Pool) compileFile(file string) (*goja.Program, error) {
	p.fileMu.Lock()
	defer p.fileMu.Unlock()
	if prog, ok := p.compiled[file]; ok {
		return prog, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	code := string(b)
	if filepath.Ext(file) == ".ts" {
		if code, err = TranspileTS(file, code); err != nil {
			return nil, err
		}
	}
	prog, err := compileModule(Source{Name: file, Code: code})
	if err != nil {
		return nil, err
	}
	p.compiled[file] = prog
	return prog, nil
}

func (v *vm) cached(name string, build func() *goja.Object) goja.Value {
	if v.modules == nil {
		v.modules = map[string]*goja.Object{}
	}
	if m, ok := v.modules[name]; ok {
		return m
	}
	m := build()
	v.modules[name] = m
	return m
}

func absPath(p string) string {
	if path.IsAbs(p) {
		return path.Clean(p)
	}
	wd, _ := os.Getwd()
	return path.Join(wd, p)
}

func (v *vm) fsModule() goja.Value {
	return v.cached("fs", func() *goja.Object {
		rt := v.rt
		m := rt.NewObject()
		_ = m.Set("readFileSync", func(call goja.FunctionCall) goja.Value {
			p := call.Argument(0).String()
			b, err := os.ReadFile(absPath(p))
			if err != nil {
				code := "EIO"
				switch {
				case os.IsNotExist(err):
					code = "ENOENT"
				case os.IsPermission(err):
					code = "EACCES"
				}
				e := jsError(rt, fmt.Sprintf("%s: cannot read file '%s'", code, p))
				_ = e.Set("code", code)
				panic(e)
			}
			// No Buffer here: the content is returned as text, which is
			// what certificates, keys and secrets are.
			return rt.ToValue(string(b))
		})
		_ = m.Set("existsSync", func(p string) bool {
			_, err := os.Stat(absPath(p))
			return err == nil
		})
		return m
	})
}

func (v *vm) pathModule() goja.Value {
	return v.cached("path", func() *goja.Object {
		rt := v.rt
		m := rt.NewObject()
		strs := func(call goja.FunctionCall) []string {
			out := make([]string, len(call.Arguments))
			for i, a := range call.Arguments {
				out[i] = a.String()
			}
			return out
		}
		_ = m.Set("join", func(call goja.FunctionCall) goja.Value {
			j := path.Join(strs(call)...)
			if j == "" {
				j = "."
			}
			return rt.ToValue(j)
		})
		_ = m.Set("resolve", func(call goja.FunctionCall) goja.Value {
			wd, _ := os.Getwd()
			res := wd
			for _, p := range strs(call) {
				if path.IsAbs(p) {
					res = p
				} else if p != "" {
					res = path.Join(res, p)
				}
			}
			return rt.ToValue(path.Clean(res))
		})
		_ = m.Set("normalize", func(p string) string { return path.Clean(p) })
		_ = m.Set("dirname", func(p string) string { return path.Dir(p) })
		_ = m.Set("basename", func(p string, ext goja.Value) string {
			b := path.Base(p)
			if ext != nil && !goja.IsUndefined(ext) {
				b = strings.TrimSuffix(b, ext.String())
			}
			return b
		})
		_ = m.Set("extname", func(p string) string { return path.Ext(p) })
		_ = m.Set("isAbsolute", func(p string) bool { return path.IsAbs(p) })
		_ = m.Set("relative", func(from, to string) string {
			from, to = absPath(from), absPath(to)
			fs, ts := strings.Split(from, "/"), strings.Split(to, "/")
			i := 0
			for i < len(fs) && i < len(ts) && fs[i] == ts[i] {
				i++
			}
			var parts []string
			for range fs[i:] {
				parts = append(parts, "..")
			}
			parts = append(parts, ts[i:]...)
			return strings.Join(parts, "/")
		})
		_ = m.Set("sep", "/")
		_ = m.Set("delimiter", ":")
		_ = m.Set("posix", m)
		return m
	})
}

func (v *vm) osModule() goja.Value {
	return v.cached("os", func() *goja.Object {
		m := v.rt.NewObject()
		_ = m.Set("hostname", func() string {
			h, _ := os.Hostname()
			return h
		})
		_ = m.Set("platform", func() string { return runtime.GOOS })
		_ = m.Set("tmpdir", func() string { return os.TempDir() })
		_ = m.Set("homedir", func() string {
			h, _ := os.UserHomeDir()
			return h
		})
		_ = m.Set("EOL", "\n")
		return m
	})
}

// lodashSubset holds the lodash functions config files of the original use
// (its documentation's custom filter function uses toLower). Asking for
// any other name throws, naming it, instead of failing later with
// "undefined is not a function".
const lodashSubset = `(function () {
  function get(obj, path, def) {
    var parts = Array.isArray(path) ? path : String(path).replace(/\[(\w+)\]/g, '.$1').split('.').filter(function (p) { return p !== ''; });
    var cur = obj;
    for (var i = 0; i < parts.length; i++) {
      if (cur === null || cur === undefined) return def;
      cur = cur[parts[i]];
    }
    return cur === undefined ? def : cur;
  }
  function has(obj, path) {
    var parts = Array.isArray(path) ? path : String(path).replace(/\[(\w+)\]/g, '.$1').split('.');
    var cur = obj;
    for (var i = 0; i < parts.length; i++) {
      if (cur === null || cur === undefined || !Object.prototype.hasOwnProperty.call(cur, parts[i])) return false;
      cur = cur[parts[i]];
    }
    return true;
  }
  function str(s) { return s === null || s === undefined ? '' : String(s); }
  var api = {
    get: get,
    has: has,
    toLower: function (s) { return str(s).toLowerCase(); },
    toUpper: function (s) { return str(s).toUpperCase(); },
    trim: function (s) { return str(s).trim(); },
    startsWith: function (s, t) { return str(s).indexOf(str(t)) === 0; },
    endsWith: function (s, t) { s = str(s); t = str(t); return s.length >= t.length && s.lastIndexOf(t) === s.length - t.length; },
    includes: function (c, v) {
      if (typeof c === 'string') return c.indexOf(v) >= 0;
      if (Array.isArray(c)) return c.indexOf(v) >= 0;
      if (c && typeof c === 'object') return Object.keys(c).some(function (k) { return c[k] === v; });
      return false;
    },
    isEmpty: function (v) {
      if (v === null || v === undefined) return true;
      if (typeof v === 'string' || Array.isArray(v)) return v.length === 0;
      if (typeof v === 'object') return Object.keys(v).length === 0;
      return true;
    },
    isNil: function (v) { return v === null || v === undefined; },
    isArray: Array.isArray,
    isString: function (v) { return typeof v === 'string'; },
    isNumber: function (v) { return typeof v === 'number'; },
    isBoolean: function (v) { return typeof v === 'boolean'; },
    isObject: function (v) { return v !== null && (typeof v === 'object' || typeof v === 'function'); },
    isFunction: function (v) { return typeof v === 'function'; }
  };
  return new Proxy(api, {
    get: function (t, k) {
      if (typeof k !== 'string' || k in t || k === 'then' || k === 'default' || k === '__esModule') return t[k];
      throw new Error('lodash.' + k + ' is not available in govkit config files; available: ' + Object.keys(t).sort().join(', '));
    }
  });
})()`

func (v *vm) lodashModule() goja.Value {
	return v.cached("lodash", func() *goja.Object {
		val, err := v.rt.RunString(lodashSubset)
		if err != nil {
			panic(err)
		}
		return val.(*goja.Object)
	})
}
