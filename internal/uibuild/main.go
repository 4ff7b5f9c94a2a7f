// Command uibuild builds one of govkit's browser UIs from the TypeScript
// sources in ui/ into the dist directory of the Go package that embeds and
// serves it. It is run by `go generate` in that package, for example
//
//	//go:generate go run ../../internal/uibuild -ui ../../ui -app platform -out dist
//
// and does, in order:
//
//  1. checks that ui/node_modules was installed from ui/package-lock.json
//     (`npm ci` in ui/; .ci/install-deps runs it), and says so plainly if not;
//  2. type-checks every UI with the pinned TypeScript (tsc --noEmit);
//  3. bundles ui/src/<app>/main.tsx with esbuild's Go API — minified, ES
//     modules, JSX for Preact — into <out>/assets/<name>-<hash>.js and .css,
//     file names carrying a hash of their content so they can be cached for
//     good;
//  4. writes <out>/index.html from ui/src/<app>/index.html with the bundle's
//     script and style sheet linked as files (the CSPs forbid inline code),
//     copies ui/src/<app>/public/* (icons) to <out>, and writes
//     <out>/licenses.txt with the licence of every npm package in the bundle.
//
// The output is a function of the sources and the pinned versions only:
// the same input gives byte-identical files, which is what lets CI rebuild
// and fail on any difference from the committed build. Nothing is left in
// <out> but what this build wrote.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

func main() {
	var o options
	flag.StringVar(&o.ui, "ui", "", "the ui/ directory (package.json, node_modules, src)")
	flag.StringVar(&o.app, "app", "", "which UI to build: the directory name under ui/src")
	flag.StringVar(&o.out, "out", "", "output directory; emptied and rewritten")
	flag.StringVar(&o.base, "base", "/", "URL path the UI is served under")
	flag.BoolVar(&o.typecheck, "typecheck", true, "type-check with tsc before bundling")
	flag.Parse()
	if o.ui == "" || o.app == "" || o.out == "" {
		fmt.Fprintln(os.Stderr, "usage: uibuild -ui DIR -app NAME -out DIR [-base /] [-typecheck=false]")
		os.Exit(2)
	}
	if err := build(o); err != nil {
		fmt.Fprintln(os.Stderr, "uibuild:", err)
		os.Exit(1)
	}
}

type options struct {
	ui, app, out, base string
	typecheck          bool
}

func build(o options) error {
	ui, err := filepath.Abs(o.ui)
	if err != nil {
		return err
	}
	if err := checkNodeModules(ui); err != nil {
		return err
	}
	if o.typecheck {
		if err := typecheck(ui); err != nil {
			return err
		}
	}
	files, err := bundle(ui, o.app, o.base)
	if err != nil {
		return err
	}
	return writeOut(o.out, files)
}

// checkNodeModules makes sure `npm ci` ran in ui/ since package-lock.json
// last changed: the bundle would otherwise silently use other versions.
func checkNodeModules(ui string) error {
	hint := "run `npm ci` in " + ui + " (.ci/install-deps does it)"
	lock, err := os.Stat(filepath.Join(ui, "package-lock.json"))
	if err != nil {
		return err
	}
	installed, err := os.Stat(filepath.Join(ui, "node_modules", ".package-lock.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s/node_modules is missing: %s", ui, hint)
	}
	if err != nil {
		return err
	}
	if installed.ModTime().Before(lock.ModTime()) {
		return fmt.Errorf("%s/node_modules is older than package-lock.json: %s", ui, hint)
	}
	return nil
}

func typecheck(ui string) error {
	cmd := exec.Command(filepath.Join(ui, "node_modules", ".bin", "tsc"), "--noEmit", "-p", ui)
	cmd.Dir = ui
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("type check (tsc --noEmit) failed: %w", err)
	}
	return nil
}

// bundle builds the app and returns the files of the output directory by
// their slash-separated path in it.
func bundle(ui, app, base string) (map[string][]byte, error) {
	src := filepath.Join(ui, "src", app)
	res := api.Build(api.BuildOptions{
		AbsWorkingDir:     ui,
		EntryPoints:       []string{filepath.Join(src, "main.tsx")},
		Bundle:            true,
		Outdir:            "out",
		EntryNames:        "assets/[name]-[hash]",
		AssetNames:        "assets/[name]-[hash]",
		PublicPath:        base,
		Format:            api.FormatESModule,
		Platform:          api.PlatformBrowser,
		Target:            api.ES2022,
		JSX:               api.JSXAutomatic,
		JSXImportSource:   "preact",
		MinifyWhitespace:  true,
		MinifyIdentifiers: true,
		MinifySyntax:      true,
		Charset:           api.CharsetUTF8,
		LegalComments:     api.LegalCommentsNone, // licences go to licenses.txt whole
		Metafile:          true,
		Write:             false,
		LogLevel:          api.LogLevelWarning,
	})
	if len(res.Errors) > 0 {
		return nil, fmt.Errorf("esbuild: %d error(s), first: %s", len(res.Errors), res.Errors[0].Text)
	}
	outRoot := filepath.Join(ui, "out")
	files := map[string][]byte{}
	var script, style string
	for _, f := range res.OutputFiles {
		rel, err := filepath.Rel(outRoot, f.Path)
		if err != nil {
			return nil, err
		}
		rel = filepath.ToSlash(rel)
		files[rel] = f.Contents
		switch filepath.Ext(rel) {
		case ".js":
			script = base + rel
		case ".css":
			style = base + rel
		}
	}
	if script == "" || style == "" {
		return nil, errors.New("esbuild produced no script or no style sheet (does main.tsx import its CSS?)")
	}

	page, err := os.ReadFile(filepath.Join(src, "index.html"))
	if err != nil {
		return nil, err
	}
	html := string(page)
	for _, ph := range []string{"{{SCRIPT}}", "{{STYLE}}", "{{BASE}}"} {
		if !strings.Contains(html, ph) {
			return nil, fmt.Errorf("%s/index.html lacks the placeholder %s", src, ph)
		}
	}
	html = strings.NewReplacer("{{SCRIPT}}", script, "{{STYLE}}", style, "{{BASE}}", base).Replace(html)
	files["index.html"] = []byte(html)

	public := filepath.Join(src, "public")
	err = filepath.WalkDir(public, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(public, p)
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}

	lic, err := licenses(ui, res.Metafile)
	if err != nil {
		return nil, err
	}
	files["licenses.txt"] = lic
	return files, nil
}

// licenses collects the licence text of every npm package the bundle
// holds code of, sorted by package name.
func licenses(ui, metafile string) ([]byte, error) {
	var meta struct {
		Inputs map[string]json.RawMessage `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(metafile), &meta); err != nil {
		return nil, err
	}
	var pkgs []string
	for in := range meta.Inputs {
		rest, ok := strings.CutPrefix(in, "node_modules/")
		if !ok {
			continue
		}
		parts := strings.SplitN(rest, "/", 3)
		name := parts[0]
		if strings.HasPrefix(name, "@") && len(parts) > 1 {
			name += "/" + parts[1]
		}
		if !slices.Contains(pkgs, name) {
			pkgs = append(pkgs, name)
		}
	}
	slices.Sort(pkgs)
	var b strings.Builder
	b.WriteString("Third-party code in this user interface, with its licence.\n")
	for _, p := range pkgs {
		dir := filepath.Join(ui, "node_modules", filepath.FromSlash(p))
		var text []byte
		for _, name := range []string{"LICENSE", "LICENSE.md", "LICENSE.txt", "license", "license.md"} {
			t, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil {
				text = t
				break
			}
		}
		if text == nil {
			return nil, fmt.Errorf("no licence file in %s: the bundle must ship every package's licence", dir)
		}
		var pj struct {
			Version string `json:"version"`
		}
		if raw, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
			_ = json.Unmarshal(raw, &pj)
		}
		fmt.Fprintf(&b, "\n== %s %s ==\n\n%s\n", p, pj.Version, strings.TrimSpace(string(text)))
	}
	return []byte(b.String()), nil
}

// writeOut replaces the contents of dir with files.
func writeOut(dir string, files map[string][]byte) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if filepath.Base(abs) != "dist" {
		// The directory is emptied: refuse anything but a build directory.
		return fmt.Errorf("-out must name a directory called dist, not %s", abs)
	}
	if err := os.RemoveAll(abs); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := filepath.Join(abs, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "uibuild: wrote %d files to %s\n", len(names), abs)
	return nil
}
