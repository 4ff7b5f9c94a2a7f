package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/govkit/govkit/internal/preflight"
)

// SchemaVersion is the highest migration this binary carries: Open brings
// a database up to it.
func SchemaVersion() int64 {
	entries, _ := fs.ReadDir(migrations, "migrations/postgres")
	var v int64
	for _, e := range entries {
		n, _, _ := strings.Cut(e.Name(), "_")
		if i, err := strconv.ParseInt(n, 10, 64); err == nil {
			v = max(v, i)
		}
	}
	return v
}

// Check connects to the database named by databaseURL as Open would, but
// changes nothing (no migration, no file created), and says what it found:
// the schema version against SchemaVersion — behind (Open migrates it),
// current, or ahead (written by a newer govkit: this binary is a rollback
// that needs the database from before the upgrade). `govkit docplatform
// check-config` uses it.
func Check(ctx context.Context, databaseURL string) (string, error) {
	if isPostgresURL(databaseURL) {
		db, err := sql.Open("pgx", databaseURL)
		if err != nil {
			return "", errors.New("PostgreSQL URL cannot be parsed")
		}
		defer db.Close()
		if err := db.PingContext(ctx); err != nil {
			return "", fmt.Errorf("connect to PostgreSQL: %w", err)
		}
		var server string
		if err := db.QueryRowContext(ctx, "SHOW server_version").Scan(&server); err != nil {
			return "", err
		}
		var exists bool
		if err := db.QueryRowContext(ctx, "SELECT to_regclass('goose_db_version') IS NOT NULL").Scan(&exists); err != nil {
			return "", err
		}
		return versionNote(ctx, db, exists, "PostgreSQL "+server)
	}
	base, err := sqliteBasePath(databaseURL)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(base); errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(base)
		if err := preflight.WritableDir(dir); err != nil {
			return "", err
		}
		return fmt.Sprintf("no database file yet: serve creates %s (schema version %d)", base, SchemaVersion()), nil
	} else if err != nil {
		return "", err
	}
	db, err := sql.Open("sqlite", "file:"+base+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'").Scan(&exists); err != nil {
		return "", fmt.Errorf("read SQLite file %s: %w", base, err)
	}
	if err := preflight.WritableDir(filepath.Dir(base)); err != nil {
		return "", err
	}
	return versionNote(ctx, db, exists, "SQLite file "+base)
}

// versionNote compares the database's applied migrations with the
// binary's.
func versionNote(ctx context.Context, db *sql.DB, hasTable bool, what string) (string, error) {
	var v int64
	if hasTable {
		if err := db.QueryRowContext(ctx, "SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied").Scan(&v); err != nil {
			return "", fmt.Errorf("read the schema version: %w", err)
		}
	}
	want := SchemaVersion()
	switch {
	case v > want:
		return "", fmt.Errorf("%s: schema version %d is newer than this binary's %d: a newer govkit migrated it; run that version, or restore the backup taken before the upgrade", what, v, want)
	case v < want:
		return fmt.Sprintf("%s, schema version %d; serve migrates it to %d at start", what, v, want), nil
	}
	return fmt.Sprintf("%s, schema version %d (current)", what, v), nil
}

// sqliteBasePath is the file a SQLite database URL names.
func sqliteBasePath(databaseURL string) (string, error) {
	if rest, ok := strings.CutPrefix(databaseURL, "file:"); ok {
		p, _, _ := strings.Cut(rest, "?")
		if p == "" || strings.Contains(databaseURL, "mode=memory") || strings.HasPrefix(p, ":memory:") {
			return "", errors.New("in-memory SQLite is not supported; use a file")
		}
		return p, nil
	}
	if strings.Contains(databaseURL, "://") {
		return "", fmt.Errorf("unsupported database URL scheme %q (use postgres://, postgresql://, a file: URL or a path)", strings.SplitN(databaseURL, "://", 2)[0])
	}
	return databaseURL, nil
}
