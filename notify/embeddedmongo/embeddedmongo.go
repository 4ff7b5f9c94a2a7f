// Package embeddedmongo runs FerretDB v1 in-process on SQLite: the
// notification service's document store when no MongoDB uri is configured
// (govkit dev, tests). It speaks the MongoDB wire protocol on a loopback
// port, so notify/mongostore talks to it through the official driver
// exactly as it talks to MongoDB.
//
// What FerretDB v1 on SQLite lacks, and mongostore therefore never relies
// on: transactions and replica sets (hello has no setName), text, TTL,
// partial and collation indexes, $expr, $lookup, change streams, pipeline
// updates. How it differs where it does answer (read from its source):
// only a query on _id equality is answered from an index, everything else
// scans the collection and filters in Go — and even _id equality is a scan
// of the table unless [Server.IndexIDs] has run (FerretDB's query and its
// _id index spell the JSON path differently, so SQLite never matches
// them), and the equality lookups on other fields that the notification
// service needs are answered from SQLite indexes of ours through
// [Lookup]; a unique index does not see a
// missing field as null (an explicit null it does); an insert batch that
// hits a unique index is retried one document at a time; a refused update
// reports SQLite's "UNIQUE constraint failed" as an InternalError rather
// than code 11000. In memory (Config.Dir empty) it allows one SQLite
// connection. Start-up takes a few milliseconds (BENCHMARKS.md). Each
// database is one SQLite file (<name>.sqlite) in the directory given to
// [Start]; SQLite runs in WAL mode with a busy timeout, as FerretDB sets
// it up, and with synchronous=NORMAL (see [Start]).
//
// # Reading the file directly
//
// Where FerretDB would scan, a [Lookup] reads the database file itself,
// from SQLite expression indexes of ours on FerretDB's tables: the
// equality lookups above ([Lookup.Candidates]); lists and counts
// ([Lookup.IndexFields] makes the indexes, [Lookup.Find],
// [Lookup.FindDocs] and [Lookup.Count] answer a [Query]), where FindDocs
// reads a page's stored documents in bulk and decodes FerretDB's stored
// JSON into the BSON FerretDB would send (sjson.go, checked byte for
// byte against FerretDB); and the console's groups ([Lookup.Groups]),
// from counts that triggers of ours keep exact ([Lookup.KeepGroupCounts]).
// Anything it cannot answer exactly as FerretDB would is
// [ErrUnanswerable], and the caller asks FerretDB.
package embeddedmongo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/FerretDB/FerretDB/ferretdb"
	_ "modernc.org/sqlite" // the driver FerretDB registers; IndexIDs opens the files with it
)

// Dir is where the notification service keeps the embedded store's files
// inside a data directory (--data-dir): <dataDir>/notify/db.
func Dir(dataDir string) string { return filepath.Join(dataDir, "notify", "db") }

// Config configures [Start].
type Config struct {
	// Dir is the directory of the SQLite files; it is created if missing.
	// Empty means in memory: every database vanishes at Stop, and SQLite
	// serialises all access through one connection (tests only).
	Dir string
	// Addr is the loopback address to listen on; empty means
	// 127.0.0.1 on a free port.
	Addr string
	// Logger receives FerretDB's own log; nil logs only its errors (it
	// logs every refused command as a warning).
	Logger *slog.Logger
}

// Server is a running embedded store.
type Server struct {
	uri    string
	dir    string // "" in memory
	cancel context.CancelFunc
	done   chan struct{} // closed when FerretDB has stopped
	err    error         // FerretDB's result; read after done
}

// Start starts FerretDB on the SQLite files in cfg.Dir and returns once it
// accepts connections. Stop it with [Server.Stop].
func Start(ctx context.Context, cfg Config) (*Server, error) {
	sqliteURL := "file:/?mode=memory"
	if cfg.Dir != "" {
		dir, err := filepath.Abs(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("embeddedmongo: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("embeddedmongo: data directory: %w", err)
		}
		// WAL with synchronous=NORMAL: a commit no longer waits for fsync,
		// which makes small writes many times faster. The database cannot
		// be corrupted by it; a power loss (not a process crash) may lose
		// the last commits.
		q := url.Values{"_pragma": {"synchronous(normal)"}}
		sqliteURL = (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(dir) + "/", RawQuery: q.Encode()}).String()
	}
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if cfg.Addr != "" {
		// FerretDB v1.24's New opens the SQLite back end before it
		// listens and does not close it when listening fails; the leaked
		// back end's finalizer then panics the process at a later
		// collection. So an address already taken is refused here,
		// before New (":0", the default, cannot be taken).
		ln, err := net.Listen("tcp", cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("embeddedmongo: listen: %w", err)
		}
		ln.Close()
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: addr},
		Logger:    logger.With("component", "ferretdb"),
		Handler:   "sqlite",
		SQLiteURL: sqliteURL,
	})
	if err != nil {
		return nil, fmt.Errorf("embeddedmongo: start: %w", err)
	}
	// The server's lifetime is Stop's business, not the start request's.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{cancel: cancel, done: make(chan struct{})}
	if cfg.Dir != "" {
		s.dir, _ = filepath.Abs(cfg.Dir)
	}
	go func() {
		s.err = f.Run(runCtx)
		close(s.done)
	}()
	// The listener is bound by New, so the URI is known at once.
	s.uri = f.MongoDBURI()
	return s, nil
}

// URI returns the MongoDB URI of the server (no database name: the caller
// chooses it).
func (s *Server) URI() string { return s.uri }

// IndexIDs gives every collection of database db the index FerretDB's
// _id lookups can use. FerretDB v1.24's SQLite back end indexes
// _ferretdb_sjson->"_id" but queries _ferretdb_sjson->'$._id', and SQLite
// matches index expressions as written, so without this every lookup by
// _id reads and parses the whole table: a cost that grows with the
// collection (3.4 ms against 0.7 ms for one lookup among 500 documents of
// 20 KB). The index is ours and invisible to FerretDB (listIndexes does
// not show it); it goes with its table. Collections created later need
// another call. In memory there is no file to reach: nothing is done.
func (s *Server) IndexIDs(ctx context.Context, db string) error {
	if s.dir == "" {
		return nil
	}
	path := filepath.Join(s.dir, db+".sqlite")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	conn, err := sql.Open("sqlite", fileURL(path))
	if err != nil {
		return fmt.Errorf("embeddedmongo: index ids: %w", err)
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT table_name FROM _ferretdb_collections`)
	if err != nil {
		return fmt.Errorf("embeddedmongo: index ids: %w", err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return fmt.Errorf("embeddedmongo: index ids: %w", err)
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("embeddedmongo: index ids: %w", err)
	}
	for _, t := range tables {
		q := fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (_ferretdb_sjson->'$._id')`, t+"_govkit_id", t)
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("embeddedmongo: index ids of %s: %w", t, err)
		}
	}
	return nil
}

// fileURL is the modernc SQLite URL of a database file of ours opened
// beside FerretDB: waiting up to 10 s for its locks, plus any pragmas.
func fileURL(path string, pragmas ...string) string {
	q := url.Values{"_pragma": append([]string{"busy_timeout(10000)"}, pragmas...)}
	return (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(path), RawQuery: q.Encode()}).String()
}

// Stop closes the listener and every connection and waits, within ctx, for
// FerretDB to close its SQLite files. Calling it again is harmless.
func (s *Server) Stop(ctx context.Context) error {
	s.cancel()
	select {
	case <-s.done:
		if s.err != nil && !errors.Is(s.err, context.Canceled) {
			return fmt.Errorf("embeddedmongo: stop: %w", s.err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("embeddedmongo: stop: %w", ctx.Err())
	}
}
