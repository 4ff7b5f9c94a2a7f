package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"

	"github.com/govkit/govkit/notify/jsrt"
)

// maxBaseDiffs bounds the warnings about one edited defaults file.
const maxBaseDiffs = 20

// checkBaseFiles looks at the original's own defaults files that an existing
// deployment directory still holds (src/config.ts, src/middleware.ts,
// src/datasources/db.datasource.ts). govkit never reads them — its built-in
// defaults take their place — so a deployment that edited them in place,
// against the original's advice, would silently lose those edits. Each key
// whose value differs from the built-in default is reported as a warning
// pointing at config.local.js.
func (l *loader) checkBaseFiles() {
	for _, b := range []struct {
		path     string
		defaults map[string]any
		ignore   map[string]bool
	}{
		// tls is computed from server/certs, dbPath is the original's
		// in-memory database directory: neither is an edit.
		{filepath.Join(l.opts.Dir, "config.ts"), Defaults(), map[string]bool{"tls": true}},
		{filepath.Join(l.opts.Dir, "middleware.ts"), DefaultMiddleware(), nil},
		{filepath.Join(l.opts.Dir, "datasources", "db.datasource.ts"), DefaultDatasource(), map[string]bool{"dbPath": true}},
	} {
		src, err := os.ReadFile(b.path)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				l.warn(Problem{File: b.path, Message: "cannot read the original's defaults file to compare it: " + err.Error()})
			}
			continue
		}
		code, err := jsrt.TranspileTS(b.path, string(src))
		var vals []any
		if err == nil {
			_, vals, err = jsrt.New([]jsrt.Source{{Name: b.path, Code: code}}, jsrt.Options{Env: l.opts.Env, Size: 1})
		}
		if err != nil {
			l.warn(Problem{File: b.path, Message: "the original's defaults file is not read (built-in defaults of 6.4.1 apply) and could not be compared with them: " + err.Error()})
			continue
		}
		tree, ok := vals[0].(map[string]any)
		if !ok {
			continue
		}
		var diffs []string
		diffTrees(tree, b.defaults, "", b.ignore, &diffs)
		sort.Strings(diffs)
		loc := jsrt.NewLocator(b.path, code)
		for i, p := range diffs {
			if i == maxBaseDiffs {
				l.warn(Problem{File: b.path, Message: fmt.Sprintf("and %d more keys differ from the built-in defaults", len(diffs)-maxBaseDiffs)})
				break
			}
			l.warn(Problem{File: b.path, Line: loc.Line(p), Path: p, Message: "differs from the 6.4.1 default (changed, added or removed), but this file is not read: govkit has the defaults built in; put the setting in " + localName(b.path)})
		}
	}
}

func localName(base string) string {
	ext := filepath.Ext(base)
	return filepath.Base(base[:len(base)-len(ext)]) + ".local.js"
}

// diffTrees lists the paths where tree a (the file) and b (the built-in
// defaults) differ: values changed or added in a, and keys of b that a
// removed.
func diffTrees(a, b map[string]any, prefix string, ignore map[string]bool, out *[]string) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	for k, av := range a {
		p := join(k)
		if ignore[p] {
			continue
		}
		bv, ok := b[k]
		am, aIsMap := av.(map[string]any)
		bm, bIsMap := bv.(map[string]any)
		switch {
		case !ok:
			*out = append(*out, p)
		case aIsMap && bIsMap:
			diffTrees(am, bm, p, ignore, out)
		case !reflect.DeepEqual(av, bv):
			*out = append(*out, p)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && !ignore[join(k)] {
			*out = append(*out, join(k))
		}
	}
}
