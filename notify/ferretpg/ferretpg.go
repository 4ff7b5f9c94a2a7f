// Package ferretpg answers the notification service's lists, counts,
// console groups and subscriber lookups on FerretDB v1 over PostgreSQL
// from PostgreSQL indexes of ours on FerretDB's tables, the way
// notify/embeddedmongo.Lookup does on the embedded store's SQLite file.
//
// FerretDB v1.24's PostgreSQL back end pushes down to PostgreSQL only
// top-level equality, written _jsonb->'field' @> '<json>', which the
// B-tree indexes createIndexes makes (on _jsonb->'field') cannot serve;
// it never pushes a sort (but $natural) and counts by fetching every
// document. So on FerretDB-on-PostgreSQL every console list, count and
// group, and every read of a document by _id, reads the whole table into
// FerretDB. [Index] reads the same tables directly, with the PostgreSQL
// URL behind FerretDB (datasource ferretdbPostgresUri):
//
//   - FerretDB's database is a PostgreSQL schema of the same name; its
//     _ferretdb_database_metadata table maps each collection to a table
//     with one jsonb column, _jsonb, holding the document in FerretDB's
//     representation (sjson): strings as JSON strings, dates as
//     milliseconds since the epoch, booleans as JSON booleans, and each
//     field's type in _jsonb->'$s'->'p'->field->>'t'.
//   - [Index.IndexFields] creates B-tree expression indexes of ours on the
//     extracted values, in MongoDB's order: strings as text with COLLATE
//     "C" (byte-wise, MongoDB's simple collation), dates as numbers,
//     booleans as the text false < true; nulls first, as MongoDB sorts
//     null and missing below everything; each ends with the _id (as text)
//     so that ties come in one fixed order and pages of one sort never
//     overlap. A partial index holds the documents whose fields hold
//     another type than declared (normally none): while one exists, the
//     collection's queries are left to FerretDB, since PostgreSQL would
//     not compare them as MongoDB does.
//   - A GIN index (jsonb_path_ops) on _jsonb->'_id' serves FerretDB's own
//     _id lookups (@>), which every page read and update by id makes; one
//     on _jsonb->'field' serves its equality lookups on userId.
//     FerretDB's statements name the field as a parameter
//     (_jsonb->$1 @> $2), which PostgreSQL matches to an expression index
//     only in a plan made with the values; its plan cache keeps making
//     those while the generic plan (a scan) costs more, which these
//     indexes see to (the tests also set plan_cache_mode to
//     force_custom_plan).
//   - For userChannelId, a B-tree on the value lower-cased (ASCII, with
//     the two letters Go's regexp folds onto ASCII) and a partial index
//     of the documents holding an array there give [Index.Candidates]
//     for a case-insensitive whole-address lookup; for userId the GIN
//     index gives them for equality.
//   - [Index.FindDocs] returns a page's documents, read with the page in
//     one statement and decoded from the stored jsonb into the bytes
//     FerretDB sends (embeddedmongo.DecodeStored, which takes the
//     fields' order from the stored "$k" lists and not from jsonb's,
//     which sorts keys; a document it cannot decode is read through
//     FerretDB by _id); [Index.Find] returns a page's _ids, for reads
//     the store makes record by record; [Index.Count], [Index.AtLeast] and
//     [Index.Groups] are one SQL count or GROUP BY each, done by
//     PostgreSQL.
//   - A query with $or groups, or naming a field without an index of its
//     own (a notification's validTill, invalidBefore, deletedBy — an
//     array of user ids, matched with @>, the way MongoDB matches an
//     array), is answered only when PostgreSQL's plan (EXPLAIN) reads
//     no whole table: such as a signed-in user's own notification list,
//     found through our indexes (the one that starts with channel, or
//     those on userChannelId, userId and isBroadcast, channel) and
//     sorted from those few.
//
// PostgreSQL counts with an index-only scan only when no column is needed
// beyond the index, which an expression index never provides for its own
// condition: a count or group with conditions reads the matching rows
// (through our indexes when they are selective, or PostgreSQL's own
// parallel scan when most rows match), inside PostgreSQL; no document
// reaches govkit or FerretDB.
//
// The primary's first start builds the indexes over the documents there:
// each build reads the table twice and lets FerretDB's writes go on
// meanwhile (CREATE INDEX CONCURRENTLY; later starts find them made).
//
// The index only reads (and, on the primary at start, creates indexes);
// documents are written through FerretDB. It needs a PostgreSQL role that
// may read FerretDB's schema and create indexes on its tables (the role
// FerretDB uses will do).
package ferretpg

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Index is the field index of one FerretDB database on PostgreSQL. It is
// safe for concurrent use.
type Index struct {
	pool   *pgxpool.Pool
	schema string // FerretDB's database

	mu     sync.Mutex
	tables map[string]string // collection -> table
	seen   sync.Map          // index names known to exist
}

// Open connects to the PostgreSQL database FerretDB keeps its data in
// (url) for FerretDB database db. Close it when done.
func Open(ctx context.Context, url, db string) (*Index, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message may quote the URL, password included
		return nil, errors.New("ferretpg: the PostgreSQL URL cannot be parsed")
	}
	// a few readers at once; each read is one short query
	if cfg.MaxConns > 4 {
		cfg.MaxConns = 4
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ferretpg: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ferretpg: %w", err)
	}
	return &Index{pool: pool, schema: db, tables: map[string]string{}}, nil
}

// Close closes the connections.
func (x *Index) Close() error {
	if x != nil && x.pool != nil {
		x.pool.Close()
	}
	return nil
}

// errNoTable: the collection has no table (yet).
var errNoTable = errors.New("ferretpg: collection has no table")

const metadataTable = "_ferretdb_database_metadata"

func (x *Index) table(ctx context.Context, coll string, refresh bool) (string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if t, ok := x.tables[coll]; ok && !refresh {
		return t, nil
	}
	var t string
	q := fmt.Sprintf(`SELECT _jsonb->>'table' FROM %s WHERE _jsonb->>'_id' = $1`, pgx.Identifier{x.schema, metadataTable}.Sanitize())
	err := x.pool.QueryRow(ctx, q, coll).Scan(&t)
	if errors.Is(err, pgx.ErrNoRows) || isUndefinedTable(err) {
		return "", errNoTable
	}
	if err != nil {
		return "", fmt.Errorf("ferretpg: collection %s: %w", coll, err)
	}
	x.tables[coll] = t
	return t, nil
}

func isUndefinedTable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000")
}

// qualified is the table's name for SQL.
func (x *Index) qualified(table string) string {
	return pgx.Identifier{x.schema, table}.Sanitize()
}

// withTable runs f on the collection's table, once more if the collection
// was dropped and made again meanwhile; ErrUnanswerable when it has none.
func (x *Index) withTable(ctx context.Context, coll string, f func(table string) error) error {
	if x == nil {
		return errUnanswerable
	}
	for attempt := 0; ; attempt++ {
		t, err := x.table(ctx, coll, attempt > 0)
		if errors.Is(err, errNoTable) {
			return errUnanswerable
		}
		if err != nil {
			return err
		}
		err = f(t)
		if err != nil && attempt == 0 && isUndefinedTable(err) {
			continue
		}
		return err
	}
}

// hasIndex: the index exists and is valid (our names are unique in the
// schema).
func (x *Index) hasIndex(ctx context.Context, name string) bool {
	if _, ok := x.seen.Load(name); ok {
		// A collection dropped and made again loses them; its reads are
		// then slower (PostgreSQL scans) but still right, until the next
		// start indexes it.
		return true
	}
	exists, valid, err := x.indexState(ctx, name)
	if err == nil && exists && valid {
		x.seen.Store(name, true)
		return true
	}
	return false
}

// indexState: whether the index exists, and is valid (not left by a
// build that failed).
func (x *Index) indexState(ctx context.Context, name string) (exists, valid bool, err error) {
	err = x.pool.QueryRow(ctx, `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2`, x.schema, name).Scan(&valid)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("ferretpg: index %s: %w", name, err)
	}
	return true, valid, nil
}

// indexName names one of our indexes: PostgreSQL cuts names at 63 bytes
// and they must be unique in the schema, so the name is a hash of the
// table and the definition, with a readable tail.
func indexName(table, def, tail string) string {
	h := fnv.New64a()
	h.Write([]byte(table + "\x00" + def))
	name := fmt.Sprintf("govkit_%016x_%s", h.Sum64(), tail)
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// createIndex creates an index of ours if missing; an invalid one (a
// build that failed) is made again.
func (x *Index) createIndex(ctx context.Context, table, name, def string) error {
	exists, valid, err := x.indexState(ctx, name)
	if err != nil {
		return err
	}
	if exists && valid {
		x.seen.Store(name, true)
		return nil
	}
	if exists {
		if _, err := x.pool.Exec(ctx, `DROP INDEX `+pgx.Identifier{x.schema, name}.Sanitize()); err != nil {
			return fmt.Errorf("ferretpg: index %s: %w", name, err)
		}
	}
	// CONCURRENTLY: FerretDB keeps writing to the table while the index
	// is built (a plain build would hold every write back until it ends:
	// seconds at a million documents on a live deployment). A build that
	// fails leaves an invalid index, which the next start makes again.
	q := fmt.Sprintf(`CREATE INDEX CONCURRENTLY IF NOT EXISTS %s ON %s %s`, pgx.Identifier{name}.Sanitize(), x.qualified(table), def)
	if _, err := x.pool.Exec(ctx, q); err != nil {
		return fmt.Errorf("ferretpg: index %s: %w", name, err)
	}
	x.seen.Store(name, true)
	return nil
}

// validField: a plain top-level field name, safe inside a SQL literal.
func validField(f string) bool {
	if f == "" {
		return false
	}
	for _, r := range f {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// FoldKey is the key a case-insensitive lookup of s compares, and false
// when s has a character outside ASCII other than the KELVIN SIGN and the
// LONG S (which Go's regexp, FerretDB's, folds onto k and s): lower()
// under COLLATE "C" changes only ASCII letters, so such a value could
// miss documents.
func (x *Index) FoldKey(s string) (string, bool) {
	s = strings.NewReplacer("\u212a", "k", "\u017f", "s").Replace(s)
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return "", false
		}
	}
	return strings.ToLower(s), true
}
