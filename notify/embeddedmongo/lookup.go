package embeddedmongo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Lookup answers "which documents of a collection may have this value in
// this top-level field" from SQLite expression indexes of ours, for the
// lookups FerretDB v1 answers only by reading the whole collection (it
// pushes nothing but _id equality down to SQLite).
//
// It reads the database file directly, on connections of its own that
// only read: SQLite in WAL mode shows them every committed write, so
// there is nothing to keep in step with the documents and nothing a
// concurrent writer can lose. What it returns is a superset, never a
// verdict: the caller fetches each candidate by _id through FerretDB
// (which its _id index answers, see [Server.IndexIDs]) and applies the
// query there, so the answer is FerretDB's own.
//
// Two kinds of key are indexed per field:
//
//   - the field's value as SQLite's ->> gives it: a string's text (an
//     ObjectId's hex, which only adds candidates), for equality to a
//     string;
//   - the same text lower-cased (ASCII) with the KELVIN SIGN and the
//     LONG S mapped to k and s, for a case-insensitive whole-value match
//     of an ASCII string: Go's regexp, which FerretDB uses, folds exactly
//     those two non-ASCII characters onto ASCII letters, so every string
//     such a pattern matches has this key;
//
// and, with either, every document whose field holds an array (an array
// matches if one of its elements does), found by an index on the field's
// JSON type.
type Lookup struct {
	path string
	once sync.Once
	db   *sql.DB
	err  error

	mu     sync.Mutex
	tables map[string]string // collection name -> SQLite table
	seen   sync.Map          // names of indexes known to exist
	sizes  sync.Map          // table -> tableSize, for choosing how to find a page
}

// Lookup returns the lookup of database db; nil in memory (there is no
// file to read), which callers treat as "cannot answer". Close it when
// done.
func (s *Server) Lookup(db string) *Lookup {
	if s.dir == "" {
		return nil
	}
	return &Lookup{path: filepath.Join(s.dir, db+".sqlite"), tables: map[string]string{}}
}

func (l *Lookup) sqlURL(readOnly bool) string {
	if readOnly {
		return fileURL(l.path, "query_only(1)")
	}
	return fileURL(l.path)
}

func (l *Lookup) conn() (*sql.DB, error) {
	l.once.Do(func() {
		l.db, l.err = sql.Open("sqlite", l.sqlURL(true))
		if l.err == nil {
			// a few readers at once; each lookup is one short query
			l.db.SetMaxOpenConns(4)
			l.db.SetMaxIdleConns(4)
		}
	})
	return l.db, l.err
}

// Close closes the lookup's connections.
func (l *Lookup) Close() error {
	if l == nil || l.db == nil {
		return nil
	}
	return l.db.Close()
}

// errNoTable: the collection has no table (yet).
var errNoTable = errors.New("embeddedmongo: collection has no table")

func (l *Lookup) table(ctx context.Context, db *sql.DB, coll string, refresh bool) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.tables[coll]; ok && !refresh {
		return t, nil
	}
	var t string
	err := db.QueryRowContext(ctx, `SELECT table_name FROM _ferretdb_collections WHERE name = ?`, coll).Scan(&t)
	if errors.Is(err, sql.ErrNoRows) || (err != nil && strings.Contains(err.Error(), "no such table")) {
		return "", errNoTable
	}
	if err != nil {
		return "", fmt.Errorf("embeddedmongo: lookup: %w", err)
	}
	l.tables[coll] = t
	return t, nil
}

// validField: a plain top-level field name, safe inside a JSON path and
// an index name.
func validField(f string) bool {
	if f == "" || f == "_id" {
		return false
	}
	for _, r := range f {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// valueExpr is the indexed expression of a field's value; the SQL text
// must be written the same way in the index and the query for SQLite to
// use the index.
func valueExpr(field string, fold bool) string {
	v := `_ferretdb_sjson->>'$.` + field + `'`
	if !fold {
		return v
	}
	return `replace(replace(lower(` + v + `), char(8490), 'k'), char(383), 's')`
}

func typeExpr(field string) string {
	return `json_type(_ferretdb_sjson, '$.` + field + `')`
}

// FoldKey is the key a case-insensitive lookup of s compares, and false
// when s has a character outside ASCII other than the two that fold onto
// it (SQLite's lower() changes only ASCII letters, so such a value could
// miss documents).
func (l *Lookup) FoldKey(s string) (string, bool) {
	s = strings.NewReplacer("\u212a", "k", "\u017f", "s").Replace(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// Index creates the indexes that [Lookup.Candidates] uses for field of
// collection coll (exact or case-folded), if missing. It writes to the
// database file (building an index over a large collection takes a
// while): the primary calls it at start. A collection without a table yet
// is left alone.
func (l *Lookup) Index(ctx context.Context, coll, field string, fold bool) error {
	if !validField(field) {
		return fmt.Errorf("embeddedmongo: lookup: cannot index field %q", field)
	}
	db, err := sql.Open("sqlite", l.sqlURL(false))
	if err != nil {
		return fmt.Errorf("embeddedmongo: lookup: %w", err)
	}
	defer db.Close()
	t, err := l.table(ctx, db, coll, true)
	if errors.Is(err, errNoTable) {
		return nil
	}
	if err != nil {
		return err
	}
	kind := "eq"
	if fold {
		kind = "fold"
	}
	for _, q := range []string{
		fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s)`, t+"_govkit_"+kind+"_"+field, t, valueExpr(field, fold)),
		fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s)`, t+"_govkit_type_"+field, t, typeExpr(field)),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("embeddedmongo: lookup: index %s.%s: %w", coll, field, err)
		}
	}
	return nil
}

// Candidates returns the _id of every document of collection coll whose
// top-level field may equal value (ignoring case when fold: value must
// then be a key from [FoldKey]), in the collection's natural order (the
// order FerretDB reads it in); ObjectIds as bson.ObjectID, strings as
// string. ok is false when it cannot answer: no table or index to read,
// more than limit candidates (0: no limit), or a candidate whose _id is
// neither an ObjectId nor a string.
func (l *Lookup) Candidates(ctx context.Context, coll, field string, fold bool, value string, limit int) (ids []any, ok bool, err error) {
	if l == nil || !validField(field) {
		return nil, false, nil
	}
	db, err := l.conn()
	if err != nil {
		return nil, false, fmt.Errorf("embeddedmongo: lookup: %w", err)
	}
	for attempt := 0; ; attempt++ {
		t, err := l.table(ctx, db, coll, attempt > 0)
		if errors.Is(err, errNoTable) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		// Without our indexes SQLite would still answer, by reading the
		// table: correct, but the cost this exists to avoid.
		if !l.indexed(ctx, db, t, field, fold) {
			return nil, false, nil
		}
		q := fmt.Sprintf(`SELECT _ferretdb_sjson->>'$._id', _ferretdb_sjson->>'$."$s".p._id.t' FROM %q WHERE %s = ? OR %s = 'array' ORDER BY rowid`,
			t, valueExpr(field, fold), typeExpr(field))
		if limit > 0 {
			q += fmt.Sprintf(` LIMIT %d`, limit+1)
		}
		ids, ok, err = l.query(ctx, db, q, value)
		if ok && limit > 0 && len(ids) > limit {
			return nil, false, nil
		}
		if err != nil && attempt == 0 && strings.Contains(err.Error(), "no such table") {
			continue // the collection was dropped and made again
		}
		return ids, ok, err
	}
}

func (l *Lookup) indexed(ctx context.Context, db *sql.DB, table, field string, fold bool) bool {
	kind := "eq"
	if fold {
		kind = "fold"
	}
	name := table + "_govkit_" + kind + "_" + field
	if _, ok := l.seen.Load(name); ok {
		// A collection dropped and made again loses them; the query is
		// still right then, only slower, until the next start indexes it.
		return true
	}
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name IN (?, ?)`,
		table, name, table+"_govkit_type_"+field).Scan(&n)
	if err == nil && n == 2 {
		l.seen.Store(name, true)
		return true
	}
	return false
}

func (l *Lookup) query(ctx context.Context, db *sql.DB, q string, args ...any) ([]any, bool, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("embeddedmongo: lookup: %w", err)
	}
	defer rows.Close()
	ids := []any{}
	for rows.Next() {
		var id, typ sql.NullString
		if err := rows.Scan(&id, &typ); err != nil {
			return nil, false, fmt.Errorf("embeddedmongo: lookup: %w", err)
		}
		switch typ.String {
		case "objectId":
			oid, err := bson.ObjectIDFromHex(id.String)
			if err != nil {
				return nil, false, nil
			}
			ids = append(ids, oid)
		case "string":
			ids = append(ids, id.String)
		default:
			return nil, false, nil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("embeddedmongo: lookup: %w", err)
	}
	return ids, true, nil
}
