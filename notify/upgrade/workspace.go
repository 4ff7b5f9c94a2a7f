package upgrade

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// role is what a file configures.
type role int

const (
	roleConfig role = iota
	roleMiddleware
	roleDatasource
)

func (r role) String() string {
	return [...]string{"config", "middleware", "datasource"}[r]
}

// depFile is a deployment file the tool may rewrite: one named for an
// environment (`local`, `production`, …). The unnamed files (config.json,
// src/config.ts, …) and the `test` files belong to the original's release
// and are never touched.
type depFile struct {
	rel  string // slash-separated path relative to the deployment directory
	role role
	env  string
	ext  string // "json", "js" or "ts"
}

// parseName recognises a deployment file of the v1 layout (server/) or of
// the v2+ layout (src/, src/datasources/).
func parseName(rel string) (depFile, bool) {
	dir, base := path.Split(rel)
	ext := strings.TrimPrefix(path.Ext(base), ".")
	if ext != "json" && ext != "js" && ext != "ts" {
		return depFile{}, false
	}
	stem := strings.TrimSuffix(base, "."+ext)
	var prefix string
	var r role
	switch dir {
	case "server/":
		if ext == "ts" {
			return depFile{}, false
		}
		for _, c := range []struct {
			p string
			r role
		}{{"config.", roleConfig}, {"middleware.", roleMiddleware}, {"datasources.", roleDatasource}} {
			if strings.HasPrefix(stem, c.p) {
				prefix, r = c.p, c.r
			}
		}
	case "src/":
		for _, c := range []struct {
			p string
			r role
		}{{"config.", roleConfig}, {"middleware.", roleMiddleware}} {
			if strings.HasPrefix(stem, c.p) {
				prefix, r = c.p, c.r
			}
		}
	case "src/datasources/":
		if strings.HasPrefix(stem, "db.datasource.") {
			prefix, r = "db.datasource.", roleDatasource
		}
	}
	if prefix == "" {
		return depFile{}, false
	}
	env := strings.TrimPrefix(stem, prefix)
	if env == "" || env == "test" || strings.Contains(env, ".") {
		return depFile{}, false
	}
	return depFile{rel: rel, role: r, env: env, ext: ext}, true
}

// isV1Default reports whether a file is one of the v1 release's own
// default files (server/config.json, …). v2 builds its defaults in, and the
// service refuses to start while they are still there.
func isV1Default(rel string) bool {
	switch rel {
	case "server/config.json", "server/config.js", "server/datasources.json", "server/datasources.js", "server/middleware.json", "server/middleware.js":
		return true
	}
	return false
}

// srcName is the v2+ file name for a role and environment.
func srcName(r role, env, ext string) string {
	switch r {
	case roleMiddleware:
		return "src/middleware." + env + "." + ext
	case roleDatasource:
		return "src/datasources/db.datasource." + env + "." + ext
	}
	return "src/config." + env + "." + ext
}

// workspace holds a deployment's files in memory while a step rewrites
// them; nothing touches the disk until the step's plan is applied.
type workspace struct {
	dir     string
	orig    map[string][]byte // as read
	files   map[string][]byte // current content; a missing key is a removed file
	docs    map[string]configDoc
	actions []string // what the step did, one line each
	notes   []string // what the operator should know (dropped keys, lost comments)
	merged  string   // v3 → v4: the environment whose files were merged
	ev      evidence // what the files say about their version
}

func loadWorkspace(dir string) (*workspace, error) {
	w := &workspace{dir: dir, orig: map[string][]byte{}, files: map[string][]byte{}, docs: map[string]configDoc{}}
	for _, sub := range []string{"server", "src", "src/datasources"} {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(sub)))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		for _, e := range entries {
			rel := sub + "/" + e.Name()
			if _, ok := parseName(rel); !ok && !isV1Default(rel) {
				continue
			}
			if e.Type()&os.ModeSymlink != 0 {
				return nil, fmt.Errorf("%s is a symbolic link: the tool replaces files by renaming and would turn the link into a copy; put the file itself in place (or run on a copy of the deployment), then run again", rel)
			}
			if !e.Type().IsRegular() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				return nil, err
			}
			w.orig[rel] = data
			w.files[rel] = data
		}
	}
	return w, nil
}

// list returns the deployment files under a directory prefix, sorted so
// that for one name .json comes before .js before .ts — the order the
// original loads them in.
func (w *workspace) list(prefix string, r role) []depFile {
	var out []depFile
	for rel := range w.files {
		f, ok := parseName(rel)
		if ok && strings.HasPrefix(rel, prefix) && f.role == r && !strings.Contains(strings.TrimPrefix(rel, prefix), "/") {
			out = append(out, f)
		}
	}
	extRank := map[string]int{"json": 0, "js": 1, "ts": 2}
	sort.Slice(out, func(i, j int) bool {
		if out[i].env != out[j].env {
			return out[i].env < out[j].env
		}
		return extRank[out[i].ext] < extRank[out[j].ext]
	})
	return out
}

func srcDir(r role) string {
	if r == roleDatasource {
		return "src/datasources/"
	}
	return "src/"
}

func (w *workspace) doc(rel string) (configDoc, error) {
	if d, ok := w.docs[rel]; ok {
		return d, nil
	}
	data, ok := w.files[rel]
	if !ok {
		return nil, fmt.Errorf("%s: no such file", rel)
	}
	d, err := parseDoc(rel, data)
	if err != nil {
		return nil, err
	}
	w.docs[rel] = d
	return d, nil
}

// sync writes edited documents back into files.
func (w *workspace) sync() {
	for rel, d := range w.docs {
		if d.changed() {
			w.files[rel] = d.bytes()
		}
	}
}

func (w *workspace) write(rel string, data []byte) {
	w.sync()
	delete(w.docs, rel)
	w.files[rel] = data
}

func (w *workspace) remove(rel string) {
	w.sync()
	if d, ok := w.docs[rel]; ok {
		w.notes = append(w.notes, d.notes()...)
	}
	delete(w.docs, rel)
	delete(w.files, rel)
}

func (w *workspace) act(format string, a ...any) {
	w.actions = append(w.actions, fmt.Sprintf(format, a...))
}
func (w *workspace) note(format string, a ...any) {
	w.notes = append(w.notes, fmt.Sprintf(format, a...))
}

// change is one file of a step's plan. old is nil for a new file, new is
// nil for a removed one.
type change struct {
	rel      string
	old, new []byte
}

func (w *workspace) changes() []change {
	w.sync()
	for _, d := range w.docs {
		w.notes = append(w.notes, d.notes()...)
	}
	w.docs = map[string]configDoc{}
	var out []change
	seen := map[string]bool{}
	for rel, data := range w.files {
		seen[rel] = true
		old, existed := w.orig[rel]
		if existed && bytes.Equal(old, data) {
			continue
		}
		c := change{rel: rel, new: data}
		if existed {
			c.old = old
		}
		out = append(out, c)
	}
	for rel, old := range w.orig {
		if !seen[rel] {
			out = append(out, change{rel: rel, old: old})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out
}

// exists reports whether a file is present in the deployment directory,
// whether or not the tool edits it.
func exists(dir, rel string) bool {
	_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil
}
