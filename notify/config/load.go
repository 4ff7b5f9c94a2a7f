package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/govkit/govkit/notify/jsrt"
)

// Options say where the deployment's files are and what environment they
// see. Load reads nothing from the process environment itself.
type Options struct {
	// Dir is the config directory, the original's src/ ("" means "src").
	Dir string
	// NodeEnv is the value of NODE_ENV: it picks config.<NodeEnv>.* and,
	// when "test", skips the local files.
	NodeEnv string
	// Env is what .js and .ts files see as process.env (NODE_ENV is added
	// from NodeEnv when Env lacks it).
	Env map[string]string
	// CertsDir holds key.pem, cert.pem and ca.pem for TLS ("" means
	// Dir/../server/certs, where the original looks).
	CertsDir string
	// JSPoolSize is the number of JavaScript runtimes serving calls of
	// config functions (0: GOMAXPROCS).
	JSPoolSize int
	// JSCallTimeout bounds one call of a config function (0: 30 s).
	JSCallTimeout time.Duration
	// Log receives console output of the JavaScript files.
	Log func(level, msg string)
}

// kind is one of the three layered file sets.
type kind int

const (
	kindConfig kind = iota
	kindMiddleware
	kindDatasource
)

// layerFile is one file that exists and takes part in a layering.
type layerFile struct {
	kind kind
	path string
	tree map[string]any // nil when it could not be read
}

// candidateFiles lists, in ascending precedence, the files the original
// would read for one kind, relative to dir: the base file (only .json and
// .js: the base .ts is the original's own defaults file, which Defaults
// replaces), then the NODE_ENV file, then the local file unless
// NODE_ENV=test.
func candidateFiles(dir, base, nodeEnv string) []string {
	var names []string
	names = append(names, base+".json", base+".js")
	if nodeEnv != "" {
		for _, ext := range []string{".json", ".js", ".ts"} {
			names = append(names, base+"."+nodeEnv+ext)
		}
	}
	if nodeEnv != "test" && nodeEnv != "local" {
		for _, ext := range []string{".json", ".js", ".ts"} {
			names = append(names, base+".local"+ext)
		}
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out
}

// Load reads a deployment's configuration: built-in defaults, then
// config.<NodeEnv>.{json,js,ts}, then config.local.{json,js,ts} (skipped
// when NodeEnv is "test"), deep-merged with arrays replaced; the same for
// middleware.* and datasources/db.datasource.*. It refuses to start on keys
// that older major versions used (naming the upgrade step), on datasource
// keys other than uri for the address, and on invalid values, reporting
// every problem at once in an *Error. Unknown and deprecated keys become
// warnings (Config.Warnings).
func Load(opts Options) (*Config, error) {
	if opts.Dir == "" {
		opts.Dir = "src"
	}
	if _, ok := opts.Env["NODE_ENV"]; !ok && opts.NodeEnv != "" {
		env := make(map[string]string, len(opts.Env)+1)
		for k, v := range opts.Env {
			env[k] = v
		}
		env["NODE_ENV"] = opts.NodeEnv
		opts.Env = env
	}
	if opts.CertsDir == "" {
		opts.CertsDir = filepath.Join(opts.Dir, "..", "server", "certs")
	}
	l := &loader{opts: opts, locators: map[string]*jsrt.Locator{}}
	if st, err := os.Stat(opts.Dir); err != nil || !st.IsDir() {
		l.warn(Problem{File: opts.Dir, Message: "config directory not found: running on the built-in defaults"})
	}
	l.checkV1Layout()
	l.checkBaseFiles()

	var files []*layerFile
	for _, set := range []struct {
		k    kind
		dir  string
		base string
	}{
		{kindConfig, opts.Dir, "config"},
		{kindMiddleware, opts.Dir, "middleware"},
		{kindDatasource, filepath.Join(opts.Dir, "datasources"), "db.datasource"},
	} {
		for _, p := range candidateFiles(set.dir, set.base, opts.NodeEnv) {
			st, err := os.Stat(p)
			if err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					l.problem(Problem{File: p, Message: err.Error()})
				}
				continue
			}
			if st.IsDir() {
				continue
			}
			files = append(files, &layerFile{kind: set.k, path: p})
		}
	}
	l.read(files)
	appTree := Defaults()
	addCertificates(appTree, opts.CertsDir, l)
	return l.build(appTree, files)
}

// New builds a Config from the built-in defaults with the given trees merged
// over them in order, as if each were a config.local file: renamed keys and
// wrong types are refused and unknown keys warned about as by Load. Function
// values may be given as Func. It reads no file (no certificates either):
// for tests and for embedded setups such as govkit dev. Middleware and
// datasource are the defaults.
func New(overrides ...map[string]any) (*Config, error) {
	l := &loader{locators: map[string]*jsrt.Locator{}}
	var files []*layerFile
	for i, o := range overrides {
		files = append(files, &layerFile{kind: kindConfig, path: fmt.Sprintf("override %d", i+1), tree: Clone(o)})
	}
	return l.build(Defaults(), files)
}

// build merges the files over the defaults, checks and decodes.
func (l *loader) build(appTree map[string]any, files []*layerFile) (*Config, error) {
	cfg := &Config{pool: l.pool, Dir: l.opts.Dir, NodeEnv: l.opts.NodeEnv}
	mwTree := DefaultMiddleware()
	dsTree := DefaultDatasource()
	for _, f := range files {
		if f.tree == nil {
			continue
		}
		cfg.Files = append(cfg.Files, f.path)
		cfg.layers = append(cfg.layers, f)
		switch f.kind {
		case kindConfig:
			l.checkConfigKeys(f)
			Merge(appTree, f.tree)
		case kindMiddleware:
			l.checkMiddlewareKeys(f)
			Merge(mwTree, f.tree)
		case kindDatasource:
			l.checkDatasourceKeys(f)
			Merge(dsTree, f.tree)
		}
	}
	deriveRest(appTree)
	cfg.tree = appTree
	cfg.middlewareTree = mwTree
	cfg.datasourceTree = dsTree
	l.files = files
	l.decode(cfg)
	l.locate(l.problems)
	l.locate(l.warnings)
	cfg.Warnings = l.warnings
	if len(l.problems) > 0 {
		return nil, &Error{Problems: l.problems, Warnings: l.warnings}
	}
	return cfg, nil
}

// deriveRest fills rest.host and rest.port from host and port, as the
// original does for code that reads the rest.* names.
func deriveRest(tree map[string]any) {
	rest, _ := tree["rest"].(map[string]any)
	if rest == nil {
		rest = map[string]any{}
		tree["rest"] = rest
	}
	if _, ok := rest["host"]; !ok {
		rest["host"] = tree["host"]
	}
	if _, ok := rest["port"]; !ok {
		rest["port"] = tree["port"]
	}
}

// addCertificates reproduces the original's src/config.ts tail: the PEM
// files found in server/certs become tls.key/cert/ca, TLS is enabled when
// key and cert exist, client certificates when ca exists too. Config files
// may still override any of it (tls.enabled: false, say).
func addCertificates(tree map[string]any, dir string, l *loader) {
	tls := tree["tls"].(map[string]any)
	for _, e := range []string{"key", "cert", "ca"} {
		p := filepath.Join(dir, e+".pem")
		b, err := os.ReadFile(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				l.problem(Problem{File: p, Message: err.Error()})
			}
			continue
		}
		tls[e] = string(b)
		l.certFiles = append(l.certFiles, p)
	}
	if tls["key"] != nil && tls["cert"] != nil {
		tls["enabled"] = true
		if tls["ca"] != nil {
			tls["clientCertificateEnabled"] = true
		}
	}
}

type loader struct {
	opts      Options
	locators  map[string]*jsrt.Locator // by file path: where keys are written
	problems  []Problem
	warnings  []Problem
	pool      *jsrt.Pool
	files     []*layerFile
	certFiles []string
}

func (l *loader) problem(p Problem) { l.problems = append(l.problems, p) }
func (l *loader) warn(p Problem)    { l.warnings = append(l.warnings, p) }

// read parses JSON files directly and evaluates JavaScript and TypeScript
// files together in one runtime pool, so functions of any of them stay
// callable.
func (l *loader) read(files []*layerFile) {
	var sources []jsrt.Source
	var jsFiles []*layerFile
	for _, f := range files {
		b, err := os.ReadFile(f.path)
		if err != nil {
			l.problem(Problem{File: f.path, Message: err.Error()})
			continue
		}
		switch filepath.Ext(f.path) {
		case ".json":
			f.tree = l.parseJSON(f.path, b)
			l.locators[f.path] = jsrt.NewLocator(f.path, string(b))
		case ".js":
			sources = append(sources, jsrt.Source{Name: f.path, Code: string(b)})
			jsFiles = append(jsFiles, f)
			l.locators[f.path] = jsrt.NewLocator(f.path, string(b))
		case ".ts":
			code, err := jsrt.TranspileTS(f.path, string(b))
			if err != nil {
				l.jsProblem(f.path, err)
				continue
			}
			sources = append(sources, jsrt.Source{Name: f.path, Code: code})
			jsFiles = append(jsFiles, f)
			l.locators[f.path] = jsrt.NewLocator(f.path, code)
		}
	}
	pool, values, err := jsrt.New(sources, jsrt.Options{
		Env:         l.opts.Env,
		Size:        l.opts.JSPoolSize,
		CallTimeout: l.opts.JSCallTimeout,
		Log:         l.opts.Log,
		Root:        l.opts.Dir,
	})
	l.pool = pool
	if err != nil {
		l.jsProblem("", err)
	}
	for i, f := range jsFiles {
		if values[i] == nil {
			continue
		}
		m, ok := values[i].(map[string]any)
		if !ok {
			l.problem(Problem{File: f.path, Message: "module.exports must be an object"})
			continue
		}
		f.tree = m
	}
}

// locate adds the line where the key of a problem is written, when the
// file writes it literally.
func (l *loader) locate(ps []Problem) {
	for i := range ps {
		p := &ps[i]
		if p.Line != 0 || p.Path == "" {
			continue
		}
		if loc := l.locators[p.File]; loc != nil {
			p.Line = loc.Line(p.Path)
		}
	}
}

// jsProblem turns errors of the JavaScript runtime into problems with file
// and line.
func (l *loader) jsProblem(file string, err error) {
	var list interface{ Unwrap() []error }
	if errors.As(err, &list) {
		for _, e := range list.Unwrap() {
			l.jsProblem(file, e)
		}
		return
	}
	var je *jsrt.Error
	if errors.As(err, &je) {
		l.problem(Problem{File: je.File, Line: je.Line, Message: je.Message})
		return
	}
	l.problem(Problem{File: file, Message: err.Error()})
}

func (l *loader) parseJSON(path string, b []byte) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(b))
	var v any
	if err := dec.Decode(&v); err != nil {
		p := Problem{File: path, Message: "invalid JSON: " + err.Error()}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			p.Line = lineOf(b, se.Offset)
		case errors.As(err, &te):
			p.Line = lineOf(b, te.Offset)
		case errors.Is(err, io.ErrUnexpectedEOF):
			p.Line = lineOf(b, int64(len(b)))
		}
		l.problem(p)
		return nil
	}
	if dec.More() {
		l.problem(Problem{File: path, Line: lineOf(b, dec.InputOffset()), Message: "invalid JSON: data after the top-level value"})
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		l.problem(Problem{File: path, Message: "the top-level value must be an object"})
		return nil
	}
	return m
}

func lineOf(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// checkV1Layout refuses a deployment still in version 1's layout: config,
// datasource and middleware files under server/ instead of src/.
func (l *loader) checkV1Layout() {
	serverDir := filepath.Join(l.opts.Dir, "..", "server")
	for _, name := range []string{"config.json", "config.local.json", "config.local.js", "datasources.json", "datasources.local.json", "datasources.local.js", "middleware.json", "middleware.local.json"} {
		p := filepath.Join(serverDir, name)
		if _, err := os.Stat(p); err == nil {
			l.problem(Problem{File: p, Message: fmt.Sprintf("a version 1 file: from version 2 on, config, datasource and middleware files live in %s; run `govkit notify upgrade --from 1 --to 2`", l.opts.Dir)})
		}
	}
}
