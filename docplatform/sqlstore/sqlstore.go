// Package sqlstore keeps the document platform's records — users, groups
// (soft-deleted, never erased), memberships and membership requests, API
// keys, documents, OCR results, workflows and their versions, review
// sessions and the audit log — in SQLite or PostgreSQL through database/sql.
//
// Open picks the database from one URL: postgres:// or postgresql:// is
// PostgreSQL (pgx); anything else is a SQLite file path or file: URL
// (modernc.org/sqlite, pure Go). The schema migrations are embedded, one
// directory per dialect, and run on Open with goose; on PostgreSQL they run
// under an advisory lock so replicas starting together do not race.
//
// SQLite runs in WAL mode with foreign keys on and a busy timeout. Writes go
// through a pool of exactly one connection whose transactions begin
// IMMEDIATE, so concurrent requests in one process queue for the writer in
// Go instead of failing with SQLITE_BUSY; reads use a separate read-only pool
// and never wait for writers. Another process on the same file (an operator
// command next to a running server) is covered by the busy timeout.
// The two reads behind every authenticated request, Access and
// APIKeyGrant, are answered on SQLite from an in-process cache that is
// checked against PRAGMA data_version on every call and so is exact (see
// accessCache); PostgreSQL reads them every time.
//
// Rules every method follows:
//   - Errors wrap docplatform.ErrNotFound, ErrConflict or ErrInvalid.
//   - Ids of groups, memberships and API keys are random UUIDv4 strings made
//     here; a user's id is the provider's subject.
//   - Times are UTC, truncated to microseconds (PostgreSQL's precision) so
//     both databases return what was stored.
//   - A soft-deleted group grants nothing: reads that decide access
//     (UserAccess, UserGroups, APIKeyByHash, Memberships) leave it out, and
//     no membership or key can be added to it. Group still returns it, with
//     DeletedAt set, so a handler can tell "gone" from "never existed".
package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/govkit/govkit/docplatform"
)

//go:embed migrations
var migrations embed.FS

// Dialect names the database behind a Store.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// Store is the platform's database. It is safe for concurrent use.
type Store struct {
	dialect Dialect
	// w takes every write. On SQLite it holds exactly one connection; on
	// PostgreSQL it is the same pool as r.
	w *sql.DB
	// r takes reads. On SQLite its connections are query_only.
	r *sql.DB
	// rp keeps the read pool's statements prepared (SQLite only; nil on
	// PostgreSQL, where pgx does it).
	rp *prepared
	// ac answers Access and APIKeyGrant from memory while the database
	// has not changed (SQLite only; nil on PostgreSQL). See accessCache.
	ac *accessCache
	// now is the clock; tests never replace it, it exists so every time
	// the store writes goes through one truncation.
	now func() time.Time
	// PostgreSQL only: how long the server may take to answer, its
	// connection settings, and the watcher of Watch (nil until then).
	timeout  time.Duration
	pgConfig *pgx.ConnConfig
	fuse     *fuse
	watch    *watcher
}

// sqliteBusyTimeout bounds how long a SQLite writer waits for another
// process holding the write lock before giving up with SQLITE_BUSY.
const sqliteBusyTimeout = 10 * time.Second

// Option tunes Open.
type Option func(*options)

type options struct{ timeout time.Duration }

// WithTimeout bounds how long PostgreSQL may take to answer (default
// DefaultTimeout): connecting, checking a pooled connection and the
// watcher's ping (Watch) have half of it each. With Watch, a database
// that stops answering (a network that drops packets, a frozen host)
// fails the requests in flight within about a second and half the
// timeout, instead of holding them, with errors that are
// docplatform.ErrUnavailable; see outage.go.
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// DefaultTimeout is WithTimeout's default.
const DefaultTimeout = 5 * time.Second

// Open connects to the database named by databaseURL and brings its schema
// up to date. See the package doc for the URL forms.
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	if strings.TrimSpace(databaseURL) == "" {
		return nil, errors.New("sqlstore: empty database URL")
	}
	o := options{timeout: DefaultTimeout}
	for _, f := range opts {
		f(&o)
	}
	var s *Store
	var err error
	if isPostgresURL(databaseURL) {
		s, err = openPostgres(ctx, databaseURL, o.timeout)
	} else {
		sqliteOpenMu.Lock()
		defer sqliteOpenMu.Unlock()
		s, err = openSQLite(ctx, databaseURL)
	}
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func isPostgresURL(u string) bool {
	lower := strings.ToLower(u)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// postgresConns bounds a process's connections to PostgreSQL.
const postgresConns = 20

func openPostgres(ctx context.Context, databaseURL string, timeout time.Duration) (*Store, error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		// pgx's parse errors may quote the URL, password included.
		return nil, errors.New("sqlstore: PostgreSQL URL cannot be parsed")
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > timeout/2 {
		cfg.ConnectTimeout = timeout / 2
	}
	f := newFuse()
	cfg.DialFunc = f.dialer(timeout / 2)
	db := stdlib.OpenDB(*cfg, stdlib.OptionShouldPing(pingFirst(timeout/2)))
	// As many idle connections as open ones: with fewer, every request
	// that returns a connection while more than the idle bound are free
	// closes it, and the next busy moment opens another — a PostgreSQL
	// backend forked, authenticated and its statements prepared again, per
	// request under load (the load harness saw over a hundred new backends
	// a second at 32 clients with 10 of 20). Idle ones still go after
	// ConnMaxIdleTime.
	db.SetMaxOpenConns(postgresConns)
	db.SetMaxIdleConns(postgresConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlstore: connect to PostgreSQL: %w", err)
	}
	return &Store{dialect: Postgres, w: db, r: db, now: now, timeout: timeout, pgConfig: cfg, fuse: f}, nil
}

func openSQLite(ctx context.Context, databaseURL string) (*Store, error) {
	base, err := sqliteBase(databaseURL)
	if err != nil {
		return nil, err
	}
	common := url.Values{}
	common.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeout.Milliseconds()))
	common.Add("_pragma", "foreign_keys(1)")
	common.Add("_pragma", "synchronous(NORMAL)")

	// WAL is a property of the file: the writer sets it, readers find it.
	wq := cloneValues(common)
	wq.Add("_pragma", "journal_mode(WAL)")
	wq.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite", base+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open SQLite: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// The writer connects first: it switches the file to WAL, which the
	// read-only connections could not do.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlstore: open SQLite: %w", err)
	}

	rq := cloneValues(common)
	rq.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", base+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlstore: open SQLite: %w", err)
	}
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlstore: open SQLite: %w", err)
	}
	// The access cache's data_version connection: read-only like the
	// pool's, opened by the same driver but outside any pool, so it is
	// always the same connection and never one that writes.
	watchDSN := base + rq.Encode()
	drv := r.Driver()
	ac := newAccessCache(func() (driver.Conn, error) { return drv.Open(watchDSN) })
	if _, err := ac.check(); err != nil {
		// Say why now rather than serve every request uncached.
		ac.close()
		w.Close()
		r.Close()
		return nil, fmt.Errorf("sqlstore: open SQLite: %w", err)
	}
	return &Store{dialect: SQLite, w: w, r: r, rp: newPrepared(r), ac: ac, now: now}, nil
}

// sqliteBase turns a path or file: URL into the driver's name, ending in
// "?" or "&" so connection parameters can follow. A plain path's directory
// is created if missing, as a data directory would be.
func sqliteBase(databaseURL string) (string, error) {
	if strings.HasPrefix(databaseURL, "file:") {
		if strings.Contains(databaseURL, "mode=memory") || strings.HasPrefix(databaseURL, "file::memory:") {
			return "", errors.New("sqlstore: in-memory SQLite is not supported (each connection would see its own database); use a file")
		}
		if strings.Contains(databaseURL, "?") {
			return databaseURL + "&", nil
		}
		return databaseURL + "?", nil
	}
	if databaseURL == ":memory:" {
		return "", errors.New("sqlstore: in-memory SQLite is not supported (each connection would see its own database); use a file")
	}
	if strings.Contains(databaseURL, "://") {
		return "", fmt.Errorf("sqlstore: unsupported database URL scheme %q (use postgres://, postgresql://, a file: URL or a path)", strings.SplitN(databaseURL, "://", 2)[0])
	}
	if strings.ContainsAny(databaseURL, "?#") {
		return "", errors.New("sqlstore: a SQLite path must not contain ? or #; use a file: URL")
	}
	if dir := filepath.Dir(databaseURL); dir != "." {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", fmt.Errorf("sqlstore: create directory for SQLite file: %w", err)
		}
	}
	return databaseURL + "?", nil
}

func cloneValues(v url.Values) url.Values {
	c := make(url.Values, len(v))
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

func (s *Store) migrate(ctx context.Context) error {
	dir := "migrations/sqlite"
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if s.dialect == Postgres {
		dir = "migrations/postgres"
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return fmt.Errorf("sqlstore: migrations: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	fsys, err := fs.Sub(migrations, dir)
	if err != nil {
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	p, err := goose.NewProvider(dialect, s.w, fsys, opts...)
	if err != nil {
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		// goose has no lock for SQLite, so another process opening the same
		// new file may have applied a version first; then nothing is left.
		if s.dialect == SQLite {
			if pending, perr := p.HasPending(ctx); perr == nil && !pending {
				return nil
			}
		}
		return fmt.Errorf("sqlstore: migrations: %w", err)
	}
	return nil
}

// sqliteOpenMu serialises opening SQLite stores in this process: on a new
// file, two stores switching it to WAL or applying the first migration at
// the same moment would fail with SQLITE_BUSY or "table already exists".
var sqliteOpenMu sync.Mutex

// Dialect reports which database the store talks to.
func (s *Store) Dialect() Dialect { return s.dialect }

// Pools names the store's connection pools, for their metrics:
// "docplatform" on PostgreSQL; on SQLite "docplatform_write" (one
// connection: writes take turns) and "docplatform_read".
func (s *Store) Pools() map[string]*sql.DB {
	if s.w == s.r {
		return map[string]*sql.DB{"docplatform": s.w}
	}
	return map[string]*sql.DB{"docplatform_write": s.w, "docplatform_read": s.r}
}

// Close releases every connection.
func (s *Store) Close() error {
	var err error
	if s.watch != nil {
		s.watch.close()
	}
	if s.ac != nil {
		err = s.ac.close()
	}
	if s.rp != nil {
		s.rp.close()
	}
	err = errors.Join(err, s.w.Close())
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// Ping reports whether the database answers (for the health endpoint).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.r.PingContext(ctx); err != nil {
		return dbErr("ping", err)
	}
	if s.r != s.w {
		if err := s.w.PingContext(ctx); err != nil {
			return dbErr("ping", err)
		}
	}
	return nil
}

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func newID() string { return uuid.NewString() }

// timeLayout is how SQLite columns hold times: fixed width, so text order
// is time order.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// at converts a time into the value the dialect stores.
func (s *Store) at(t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if s.dialect == SQLite {
		return t.Format(timeLayout)
	}
	return t
}

// timeCol scans a NOT NULL time column of either dialect.
type timeCol struct{ t *time.Time }

func (c timeCol) Scan(v any) error {
	t, ok, err := parseTime(v)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("sqlstore: NULL in a NOT NULL time column")
	}
	*c.t = t
	return nil
}

// nullTimeCol scans a nullable time column of either dialect.
type nullTimeCol struct{ t **time.Time }

func (c nullTimeCol) Scan(v any) error {
	t, ok, err := parseTime(v)
	if err != nil {
		return err
	}
	if !ok {
		*c.t = nil
		return nil
	}
	*c.t = &t
	return nil
}

func parseTime(v any) (time.Time, bool, error) {
	switch v := v.(type) {
	case nil:
		return time.Time{}, false, nil
	case time.Time:
		return v.UTC(), true, nil
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		return t.UTC(), err == nil, err
	case []byte:
		t, err := time.Parse(time.RFC3339Nano, string(v))
		return t.UTC(), err == nil, err
	}
	return time.Time{}, false, fmt.Errorf("sqlstore: cannot scan %T as a time", v)
}

// dbErr maps driver errors to the domain's sentinels: a unique-constraint
// violation is ErrConflict, a foreign-key violation is ErrNotFound (the row
// referred to does not exist), a database that does not answer is
// ErrUnavailable. what names the operation for the message.
func dbErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, docplatform.ErrNotFound)
	}
	if unreachable(err) {
		return fmt.Errorf("%s: %w", what, unavailable(err))
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return fmt.Errorf("%s: %w (%s)", what, docplatform.ErrConflict, pgErr.ConstraintName)
		case "23503":
			return fmt.Errorf("%s: %w (%s)", what, docplatform.ErrNotFound, pgErr.ConstraintName)
		case "23514":
			return fmt.Errorf("%s: %w (%s)", what, docplatform.ErrInvalid, pgErr.ConstraintName)
		}
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		switch liteErr.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%s: %w", what, docplatform.ErrConflict)
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return fmt.Errorf("%s: %w", what, docplatform.ErrNotFound)
		case sqlite3.SQLITE_CONSTRAINT_CHECK:
			return fmt.Errorf("%s: %w", what, docplatform.ErrInvalid)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func invalid(what, why string) error {
	return fmt.Errorf("%s: %w: %s", what, docplatform.ErrInvalid, why)
}

func notFound(what string) error {
	return fmt.Errorf("%s: %w", what, docplatform.ErrNotFound)
}

// affected turns "no row changed" into ErrNotFound.
func affected(what string, res sql.Result, err error) error {
	if err != nil {
		return dbErr(what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return dbErr(what, err)
	}
	if n == 0 {
		return notFound(what)
	}
	return nil
}

// inTx runs fn in a write transaction, committing when it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return dbErr("begin", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return dbErr("commit", tx.Commit())
}

// queryer is what reads need; both *sql.DB and *sql.Tx have it.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}
