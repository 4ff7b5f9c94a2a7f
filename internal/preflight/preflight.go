// Package preflight describes the external parts a service uses — its
// database, queue, mail server, object store, identity provider — in one
// shape for two readers: the start-up log, where each part gets one line
// saying what it is, where it is and where that setting came from, and
// `govkit … check-config`, which connects to each part and prints what
// works and what does not before an operator starts the service.
//
// An address is written so that it can be logged: a URL loses its
// password and every query parameter but a few harmless ones (RedactURL).
// Where a setting came from is a config file, an environment variable, or
// the built-in default (FromFile, FromVariable, Default).
package preflight

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Part is one external part of a service.
type Part struct {
	// Name is the part's role: "store", "queue", "SMTP", "inbound SMTP",
	// "database", "redis", "document storage", "identity provider".
	Name string
	// Kind is what serves it: "mongodb", "embedded", "redis",
	// "postgresql", "sqlite", "s3", "directory", "test-mail", "disabled"…
	Kind string
	// Addr is where it is, never with a secret in it.
	Addr string
	// From is where the setting came from (FromFile, FromVariable,
	// Default).
	From string
	// Check connects to the part and returns what it found (a short
	// note, "" for none) or why it does not work. Nil: nothing to check.
	Check func(ctx context.Context) (note string, err error)
}

// Default is the From of a setting nobody made.
const Default = "default"

// FromFile is the From of a setting read from a config file; "" (no
// file set it) is Default.
func FromFile(path string) string {
	if path == "" {
		return Default
	}
	return "file " + path
}

// FromVariable is the From of a setting read from an environment
// variable; "" is Default.
func FromVariable(name string) string {
	if name == "" {
		return Default
	}
	return "variable " + name
}

// Log writes one line per part at info: msg "uses", then part, kind,
// addr and from.
func Log(log *slog.Logger, parts []Part) {
	for _, p := range parts {
		log.Info("uses", slog.String("part", p.Name), slog.String("kind", p.Kind), slog.String("addr", p.Addr), slog.String("from", p.From))
	}
}

// CheckTimeout bounds one part's check.
const CheckTimeout = 10 * time.Second

// Result is the outcome of one part's check.
type Result struct {
	Part Part
	Note string
	Err  error
	// Warnings are printed on lines of their own after the result; they
	// do not make it fail.
	Warnings []string
}

// Run checks every part at once, each within CheckTimeout, and returns
// the results in the parts' order.
func Run(ctx context.Context, parts []Part) []Result {
	res := make([]Result, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		res[i].Part = p
		if p.Check == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, cancel := context.WithTimeout(ctx, CheckTimeout)
			defer cancel()
			res[i].Note, res[i].Err = p.Check(c)
		}()
	}
	wg.Wait()
	return res
}

// Print writes one line per result — "ok" or "FAIL", the part, its kind
// and address, where the setting came from, then the note or the error —
// and reports whether every check passed.
func Print(w io.Writer, results []Result) bool {
	ok := true
	width := 0
	for _, r := range results {
		width = max(width, len(r.Part.Name))
	}
	for _, r := range results {
		status, detail := "ok  ", r.Note
		if r.Err != nil {
			status, detail, ok = "FAIL", r.Err.Error(), false
		}
		line := fmt.Sprintf("%s  %-*s  %s", status, width, r.Part.Name, r.Part.Kind)
		if r.Part.Addr != "" {
			line += " " + r.Part.Addr
		}
		if r.Part.From != "" {
			line += " (" + r.Part.From + ")"
		}
		if detail != "" {
			line += ": " + detail
		}
		fmt.Fprintln(w, line)
		for _, warn := range r.Warnings {
			fmt.Fprintf(w, "warn  %-*s  %s\n", width, r.Part.Name, warn)
		}
	}
	return ok
}

// keptQuery are the query parameters of a connection URL worth logging:
// they say how to connect and hold no secret.
var keptQuery = map[string]bool{
	"replicaSet": true, "authSource": true, "tls": true, "ssl": true, "directConnection": true,
	"sslmode": true, "db": true, "protocol": true,
}

// RedactURL returns a connection URL fit for a log: the password, and
// every query parameter but those that only say how to connect
// (replicaSet, authSource, tls, sslmode, …), are left out. MongoDB's
// several hosts (mongodb://a:27017,b:27017/db) are kept. A string
// without a scheme (a file path) is returned as it is.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" || strings.ContainsAny(scheme, "/?@") {
		return raw
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, _, _ := strings.Cut(authority[:at], ":")
		authority = authority[at+1:]
		if user != "" {
			authority = user + "@" + authority
		}
	}
	tail, _, _ = strings.Cut(tail, "#")
	path, query, _ := strings.Cut(tail, "?")
	out := scheme + "://" + authority + path
	if query == "" {
		return out
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return out
	}
	for k := range q {
		if !keptQuery[k] {
			q.Del(k)
		}
	}
	if len(q) > 0 {
		out += "?" + q.Encode()
	}
	return out
}

// WritableDir reports whether files can be created in dir, or, when dir
// does not exist yet, in the nearest parent that does (where a service
// would create it). It leaves nothing behind.
func WritableDir(dir string) error {
	for {
		st, err := os.Stat(dir)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a directory", dir)
			}
			f, err := os.CreateTemp(dir, ".govkit-check-*")
			if err != nil {
				return fmt.Errorf("directory %s is not writable: %w", dir, err)
			}
			f.Close()
			return os.Remove(f.Name())
		}
		parent := filepath.Dir(dir)
		if parent == dir || !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		dir = parent
	}
}
