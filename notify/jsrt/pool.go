package jsrt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// Func is a JavaScript function of a config file, callable from Go. Arguments
// are converted to JavaScript values (maps and slices deeply, as plain
// objects and arrays); the result is exported like config values, up to
// MaxResultValues values and MaxResultBytes of text. A returned promise is
// awaited. The call ends, JavaScript interrupted, when ctx ends or after
// Options.CallTimeout, whichever comes first. Func is safe for concurrent
// use.
type Func func(ctx context.Context, args ...any) (any, error)

// Bounds of what a call may return: a function that builds a huge value
// (from arguments an attacker chose, say) cannot make the service
// allocate without bound while its result is converted.
const (
	MaxResultValues = 100_000
	MaxResultBytes  = 8 << 20
)

// Source is one CommonJS module.
type Source struct {
	// Name is the file path shown in errors and given as __filename.
	Name string
	// Code is JavaScript (already transpiled when the file was TypeScript).
	Code string
}

// Options configure a Pool.
type Options struct {
	// Env is what the modules see as process.env.
	Env map[string]string
	// Size is the number of runtimes kept for calls; 0 means GOMAXPROCS.
	// Runtimes beyond the first are created on demand.
	Size int
	// CallTimeout bounds one call of a Func, waiting for its promise
	// included; 0 means 30 seconds. A call that runs longer is interrupted
	// and returns an error.
	CallTimeout time.Duration
	// Log receives console output of the modules (level is log, info, warn,
	// error or debug). Nil discards it.
	Log func(level, msg string)
	// Root is the directory below which modules may require other files
	// by relative path ("./db.datasource.production.js"); "" allows none.
	Root string
}

// Error is a JavaScript error located in a file.
type Error struct {
	File    string
	Line    int // 0 when unknown
	Column  int
	Message string
}

func (e *Error) Error() string {
	if e.Line > 0 && e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Message)
}

// Pool evaluates a set of modules in each of its runtimes and runs calls of
// their functions on whichever runtime is free.
type Pool struct {
	sources []Source
	progs   []*goja.Program
	opts    Options

	idle    chan *vm
	mu      sync.Mutex
	created int

	root     string // absolute Options.Root
	fileMu   sync.Mutex
	compiled map[string]*goja.Program // required files by absolute path
}

// New compiles and evaluates the sources and returns the pool and the value
// each module exported (module.exports), in the order of sources. Errors of
// all modules are reported together (errors.Join of *Error); a module that
// failed has a nil value.
func New(sources []Source, opts Options) (*Pool, []any, error) {
	if opts.Size <= 0 {
		opts.Size = runtime.GOMAXPROCS(0)
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 30 * time.Second
	}
	p := &Pool{sources: sources, opts: opts, idle: make(chan *vm, opts.Size), compiled: map[string]*goja.Program{}}
	if opts.Root != "" {
		p.root, _ = filepath.Abs(opts.Root)
	}
	var errs []error
	p.progs = make([]*goja.Program, len(sources))
	for i, s := range sources {
		prog, err := compileModule(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.progs[i] = prog
	}
	first, evalErrs := p.newVM()
	errs = append(errs, evalErrs...)
	values := make([]any, len(sources))
	for i := range sources {
		if first.exports[i] == nil {
			continue
		}
		v, err := first.safeExport(first.exports[i], &exportCtx{src: i, pool: p, file: sources[i].Name})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		values[i] = v
	}
	p.created = 1
	p.idle <- first
	return p, values, errors.Join(errs...)
}

// safeExport is export for values whose getters may throw.
func (v *vm) safeExport(val goja.Value, c *exportCtx) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = runtimeError(c.file, e)
				return
			}
			err = &Error{File: c.file, Message: fmt.Sprintf("%s: %v", pathString(c.path), r)}
		}
	}()
	return v.export(val, c)
}

// compileModule wraps the source in Node's CommonJS function wrapper, on the
// first line so that line numbers stay those of the file.
func compileModule(s Source) (*goja.Program, error) {
	code := "(function (exports, require, module, __filename, __dirname) {" + s.Code + "\n})"
	prog, err := goja.Compile(s.Name, code, false)
	if err != nil {
		err := syntaxError(s.Name, err)
		// An error found in the wrapper's closing line means the file
		// ended too early: place it on the file's last line.
		if je, ok := err.(*Error); ok {
			if last := strings.Count(strings.TrimRight(s.Code, "\n"), "\n") + 1; je.Line > last {
				je.Line, je.Column = last, 0
				je.Message = "syntax error: unexpected end of file"
			}
		}
		return nil, err
	}
	return prog, nil
}

func syntaxError(name string, err error) error {
	var ce *goja.CompilerSyntaxError
	if errors.As(err, &ce) && ce.File != nil {
		pos := ce.File.Position(ce.Offset)
		return &Error{File: name, Line: pos.Line, Column: pos.Column, Message: "syntax error: " + ce.Message}
	}
	msg := err.Error()
	if ce != nil {
		msg = ce.Message
	}
	if i := strings.Index(msg, " (and "); i > 0 && strings.HasSuffix(msg, " more errors)") {
		msg = msg[:i]
	}
	// The parser's message reads "<name>: Line L:C <text>".
	if rest, ok := strings.CutPrefix(msg, name+": "); ok {
		msg = rest
	}
	e := &Error{File: name, Message: "syntax error: " + msg}
	var line, col int
	if n, _ := fmt.Sscanf(msg, "Line %d:%d", &line, &col); n == 2 {
		e.Line, e.Column = line, col
		if i := strings.Index(msg, " "); i > 0 {
			if j := strings.Index(msg[i+1:], " "); j > 0 {
				e.Message = "syntax error: " + msg[i+1+j+1:]
			}
		}
	}
	return e
}

// runtimeError locates a thrown exception in the module that threw it.
func runtimeError(name string, err error) error {
	var ex *goja.Exception
	if errors.As(err, &ex) {
		msg := ex.Value().String()
		if obj, ok := ex.Value().(*goja.Object); ok {
			if m := obj.Get("message"); m != nil && !goja.IsUndefined(m) {
				n := obj.Get("name")
				if n != nil && !goja.IsUndefined(n) {
					msg = n.String() + ": " + m.String()
				} else {
					msg = m.String()
				}
			}
		}
		e := &Error{File: name, Message: msg}
		for _, f := range ex.Stack() {
			pos := f.Position()
			if pos.Line > 0 && f.SrcName() != "" && !strings.HasPrefix(f.SrcName(), "<") {
				e.File = f.SrcName()
				e.Line, e.Column = pos.Line, pos.Column
				break
			}
		}
		return e
	}
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		return &Error{File: name, Message: fmt.Sprint(ie.Value())}
	}
	return &Error{File: name, Message: err.Error()}
}

// vm is one runtime with the modules evaluated in it.
type vm struct {
	rt      *goja.Runtime
	exports []goja.Value // module.exports per source; nil when it failed
	loop    *loop
	modules map[string]*goja.Object // built-in modules by name
	cache   map[string]*goja.Object // file modules by absolute path
	pool    *Pool
}

func (p *Pool) newVM() (*vm, []error) {
	rt := goja.New()
	v := &vm{rt: rt, exports: make([]goja.Value, len(p.sources)), loop: &loop{}, cache: map[string]*goja.Object{}, pool: p}
	v.installGlobals(p.opts)
	var errs []error
	for i, prog := range p.progs {
		if prog == nil {
			continue
		}
		exp, err := v.runModule(p.sources[i], prog)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		v.exports[i] = exp
	}
	// Timers a module left behind belong to evaluation, not to later calls.
	v.loop.reset()
	return v, errs
}

func (v *vm) runModule(s Source, prog *goja.Program) (goja.Value, error) {
	exp, err := v.evalModule(s.Name, prog)
	if err != nil {
		return nil, runtimeError(s.Name, err)
	}
	// An ES module transpiled from TypeScript ("export default {…}") puts
	// the config under exports.default.
	if obj, ok := exp.(*goja.Object); ok {
		if es := obj.Get("__esModule"); es != nil && es.ToBoolean() {
			if d := obj.Get("default"); d != nil && !goja.IsUndefined(d) {
				exp = d
			}
		}
	}
	return exp, nil
}

// evalModule runs a compiled module once per runtime, Node-style: the
// module object is cached by absolute path before it runs, so a file that
// is both a config layer and required by another layer (the Helm chart's
// db.datasource.local.js requires db.datasource.production.js) is one
// module, and circular requires see partial exports instead of looping.
func (v *vm) evalModule(name string, prog *goja.Program) (goja.Value, error) {
	rt := v.rt
	abs, _ := filepath.Abs(name)
	if m, ok := v.cache[abs]; ok {
		return m.Get("exports"), nil
	}
	wrapper, err := rt.RunProgram(prog)
	if err != nil {
		return nil, err
	}
	fn, ok := goja.AssertFunction(wrapper)
	if !ok {
		return nil, fmt.Errorf("%s: module wrapper is not a function", name)
	}
	module := rt.NewObject()
	exports := rt.NewObject()
	_ = module.Set("exports", exports)
	dir := filepath.Dir(abs)
	req := v.requireFunc(dir)
	_ = module.Set("filename", abs)
	_ = module.Set("id", abs)
	_ = module.Set("require", req)
	v.cache[abs] = module
	if _, err := fn(exports, exports, req, module, rt.ToValue(abs), rt.ToValue(dir)); err != nil {
		delete(v.cache, abs)
		return nil, err
	}
	return module.Get("exports"), nil
}

func (p *Pool) acquire(ctx context.Context) (*vm, error) {
	select {
	case v := <-p.idle:
		return v, nil
	default:
	}
	p.mu.Lock()
	if p.created < p.opts.Size {
		p.created++
		p.mu.Unlock()
		// Evaluation succeeded once; should it fail now (the files read
		// something that changed), the modules that failed have no
		// exports in this runtime and calls into them report it.
		v, _ := p.newVM()
		return v, nil
	}
	p.mu.Unlock()
	select {
	case v := <-p.idle:
		return v, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *Pool) release(v *vm) { p.idle <- v }

// seg is one step of a key path: a property name or an array index.
type seg struct {
	key   string
	index int
	isIdx bool
}

func (s seg) String() string {
	if s.isIdx {
		return fmt.Sprintf("[%d]", s.index)
	}
	return s.key
}

func pathString(path []seg) string {
	var b strings.Builder
	for i, s := range path {
		if i > 0 && !s.isIdx {
			b.WriteByte('.')
		}
		b.WriteString(s.String())
	}
	return b.String()
}

// bind returns the Go handle of the function at path in module src.
func (p *Pool) bind(src int, path []seg) Func {
	path = append([]seg(nil), path...)
	where := p.sources[src].Name + ": " + pathString(path)
	return func(ctx context.Context, args ...any) (any, error) {
		v, err := p.acquire(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		defer p.release(v)
		return v.call(ctx, src, path, where, p.sources[src].Name, p.opts.CallTimeout, args)
	}
}

func (v *vm) call(ctx context.Context, src int, path []seg, where, file string, timeout time.Duration, args []any) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %v", where, r)
		}
		v.loop.reset()
		v.rt.ClearInterrupt()
	}()
	root := v.exports[src]
	if root == nil {
		return nil, fmt.Errorf("%s: module did not load in this runtime", where)
	}
	this := goja.Undefined()
	cur := root
	for _, s := range path {
		obj, ok := cur.(*goja.Object)
		if !ok {
			return nil, fmt.Errorf("%s: not found", where)
		}
		this = obj
		if s.isIdx {
			cur = obj.Get(fmt.Sprint(s.index))
		} else {
			cur = obj.Get(s.key)
		}
		if cur == nil {
			return nil, fmt.Errorf("%s: not found", where)
		}
	}
	fn, ok := goja.AssertFunction(cur)
	if !ok {
		return nil, fmt.Errorf("%s: not a function", where)
	}
	jsArgs := make([]goja.Value, len(args))
	for i, a := range args {
		jsArgs[i] = toJS(v.rt, a)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	// The interrupts run on goroutines of their own. One that has started
	// is waited for before the call returns, so that it cannot land after
	// the deferred ClearInterrupt and stop the runtime's next call.
	timedOut, stopped := make(chan struct{}), make(chan struct{})
	timer := time.AfterFunc(timeout, func() {
		v.rt.Interrupt(fmt.Sprintf("call did not finish within %s", timeout))
		close(timedOut)
	})
	defer func() {
		if !timer.Stop() {
			<-timedOut
		}
	}()
	stop := context.AfterFunc(ctx, func() {
		v.rt.Interrupt(fmt.Sprintf("call stopped: %v", ctx.Err()))
		close(stopped)
	})
	defer func() {
		if !stop() {
			<-stopped
		}
	}()
	out, err := fn(this, jsArgs...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, runtimeError(file, err))
	}
	// Only a promise is exported here: exporting any other value would
	// convert it whole, before the bounds of export apply.
	if prom, ok := promise(out); ok {
		if err := v.loop.runUntil(v.rt, prom, deadline); err != nil {
			return nil, fmt.Errorf("%s: %w", where, runtimeError(file, err))
		}
		switch prom.State() {
		case goja.PromiseStateRejected:
			return nil, fmt.Errorf("%s: %w", where, rejection(file, prom.Result()))
		case goja.PromiseStatePending:
			return nil, fmt.Errorf("%s: returned a promise that never settles", where)
		}
		out = prom.Result()
	}
	res, err = v.export(out, &exportCtx{src: -1, file: file, budget: &resultBudget{values: MaxResultValues, bytes: MaxResultBytes}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return res, nil
}

var promiseType = reflect.TypeOf((*goja.Promise)(nil))

func promise(v goja.Value) (*goja.Promise, bool) {
	if v == nil || v.ExportType() != promiseType {
		return nil, false
	}
	p, ok := v.Export().(*goja.Promise)
	return p, ok
}

func rejection(file string, reason goja.Value) error {
	msg := reason.String()
	if obj, ok := reason.(*goja.Object); ok {
		if m := obj.Get("message"); m != nil && !goja.IsUndefined(m) {
			msg = m.String()
		}
	}
	return &Error{File: file, Message: "promise rejected: " + msg}
}
