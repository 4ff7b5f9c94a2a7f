package embeddedmongo

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Kind is the stored type every value of a field answered by [Lookup.Find]
// must have (besides null or missing): the kinds whose comparison in
// SQLite, on the value FerretDB stores, is MongoDB's.
type Kind string

// Kinds SQLite compares as MongoDB does: strings byte-wise (MongoDB's
// simple collation), dates by their milliseconds (FerretDB stores them as
// integers), booleans as 0 and 1.
const (
	KindString Kind = "string"
	KindDate   Kind = "date"
	KindBool   Kind = "bool"
	// KindStrings is a string or an array of strings (FerretDB refuses
	// nested arrays), such as a list of user ids. Only equality ($in:
	// one of Values is the string or an element) and its negation ($ne,
	// $nin: none is), or null, are answered; it is never a sort key.
	KindStrings Kind = "strings"
)

// Field is a top-level field [Lookup.Find] may filter and sort on.
type Field struct {
	Name string
	Kind Kind
	// Unindexed: no index of ours holds the field. A query naming it is
	// answered only when SQLite finds the documents through another
	// condition's index (EXPLAIN QUERY PLAN reads no whole table), so
	// that a condition on it alone is left to FerretDB and the scan
	// limit, never a read of every document here.
	Unindexed bool
}

// Operators of a [Cond].
const (
	OpEq  = "eq"  // the field equals one of Values (a lone nil: null or missing)
	OpNe  = "ne"  // the field equals none of Values (null and missing match)
	OpGt  = "gt"  // one value each
	OpGte = "gte" //
	OpLt  = "lt"  //
	OpLte = "lte" //
)

// Cond is one condition of a [Query]: Field Op Values, with values of the
// field's kind (string, bool, time.Time or bson.DateTime; string for
// KindStrings).
type Cond struct {
	Field  string
	Op     string
	Values []any
}

// Order is one sort key.
type Order struct {
	Field string
	Desc  bool
}

// Query is a query [Lookup.Find] and [Lookup.Count] answer in SQLite from
// the indexes [Lookup.IndexFields] made: the conjunction of Conds and of
// Any's disjunctions, sorted by Order and then by the collection's
// natural order (so that pages of one sort never overlap), Skip and Limit
// applied.
type Query struct {
	Coll   string
	Fields []Field // the kinds of the fields Conds, Any and Order name
	Conds  []Cond
	// Any holds disjunctions (MongoDB's $or): each group matches a
	// document when one of its conjunctions does (an empty conjunction
	// always, an empty group never).
	Any   [][][]Cond
	Order []Order
	Skip  int64
	Limit int64 // 0: none
	// Composites are the composite indexes IndexFields made for Coll.
	Composites [][]string
}

// smallSet is how many matching documents a page is sorted from at most
// when no composite index serves the sort: more are left to SQLite's own
// plan (or refused, for a query whose plan is checked).
const smallSet = 3000

// docPerEntry is what sorting a matching document costs SQLite (reading
// the document and extracting the sort key: about 45 µs at a million
// subscriptions) in walks of one index entry (about 0.1 µs): a page is
// sorted from the matches when that costs less than walking a composite
// index in sort order past the entries that do not match.
const docPerEntry = 300

// sortIndex is the composite index that starts with q's first sort
// field and holds every field q's conditions name: walked in sort order,
// it answers the conditions from its own entries, reading a document only
// for each row of the page.
func (q Query) sortIndex() []string {
	if len(q.Order) == 0 {
		return nil
	}
next:
	for _, c := range q.Composites {
		if c[0] != q.Order[0].Field {
			continue
		}
		for _, cond := range q.AllConds() {
			if !slices.Contains(c, cond.Field) {
				continue next
			}
		}
		return c
	}
	return nil
}

// rangeIndex finds, for a query sorted on one field, a composite whose
// first fields are each fixed by an equality to one value, followed by
// the sort field, and which holds every other field the conditions name:
// the range the equalities select is already in sort order, so a page is
// the skip and limit of that range, with no count and no sort. It
// returns the composite.
func (q Query) rangeIndex() []string {
	if len(q.Order) != 1 {
		return nil
	}
	fixed := map[string]bool{}
	for _, c := range q.Conds {
		if c.Op == OpEq && len(c.Values) == 1 && c.Values[0] != nil {
			fixed[c.Field] = true
		}
	}
next:
	for _, c := range q.Composites {
		k := slices.Index(c, q.Order[0].Field)
		if k <= 0 {
			continue
		}
		for _, f := range c[:k] {
			if !fixed[f] {
				continue next
			}
		}
		for _, cond := range q.Conds {
			if !slices.Contains(c, cond.Field) {
				continue next
			}
		}
		return c
	}
	return nil
}

// AllConds are q's conditions, those of its disjunctions included.
func (q Query) AllConds() []Cond {
	out := slices.Clone(q.Conds)
	for _, g := range q.Any {
		for _, conj := range g {
			out = append(out, conj...)
		}
	}
	return out
}

// PlanChecked reports whether the database's plan for q must be checked
// before it is run, so that q is never answered by reading the whole
// table: q names an unindexed field, or has a disjunction, which a
// planner answers from indexes only when every branch has one.
func (q Query) PlanChecked() bool {
	if len(q.Any) > 0 {
		return true
	}
	for _, c := range q.Conds {
		if f, ok := q.field(c.Field); ok && f.Unindexed {
			return true
		}
	}
	return false
}

// ErrUnanswerable: the query names a field without our indexes, or a
// field holding a value of another kind than declared; the caller must
// ask FerretDB.
var ErrUnanswerable = errors.New("embeddedmongo: query not answerable from indexes")

func (q Query) kind(f string) (Kind, bool) {
	x, ok := q.field(f)
	return x.Kind, ok
}

func (q Query) field(f string) (Field, bool) {
	for _, x := range q.Fields {
		if x.Name == f {
			return x, true
		}
	}
	return Field{}, false
}

// schemaTypeExpr is the type FerretDB records for a field in the
// document's schema ("string", "date", "bool", "array", …; NULL when
// missing).
func schemaTypeExpr(field string) string {
	return `_ferretdb_sjson->>'$."$s".p.` + field + `.t'`
}

// oddExpr is true for a document that holds in one of fields a value of
// another kind than the field's (an array, a number in a string field):
// SQLite would not compare it as MongoDB does.
func oddExpr(fields []Field) string {
	var parts []string
	for _, f := range fields {
		if f.Kind == KindStrings {
			// An array is odd when an element is not a string (MongoDB
			// compares an ObjectId or null element, which json_each
			// would give as text or NULL, by its own type): its
			// schema's items ("i"), each {"t":"string"} for a string,
			// leave more than brackets and commas once those are
			// taken out.
			t := schemaTypeExpr(f.Name)
			items := `_ferretdb_sjson->'$."$s".p.` + f.Name + `.i'`
			parts = append(parts, fmt.Sprintf(`coalesce(%s, 'null') NOT IN ('string', 'array', 'null')`, t),
				fmt.Sprintf(`(%s = 'array' AND trim(replace(%s, '{"t":"string"}', ''), '[],') != '')`, t, items))
			continue
		}
		parts = append(parts, fmt.Sprintf(`coalesce(%s, 'null') NOT IN ('%s', 'null')`, schemaTypeExpr(f.Name), f.Kind))
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// oddName names the partial index of oddExpr; the name changes with the
// fields, so that a new list gets a new index.
func oddName(table string, fields []Field) string {
	h := fnv.New32a()
	h.Write([]byte(oddExpr(fields)))
	return fmt.Sprintf("%s_govkit_odd_%08x", table, h.Sum32())
}

// IndexFields creates, if missing, the indexes [Lookup.Find] and
// [Lookup.Count] use for collection coll: a partial index of the
// documents whose fields break the kinds given (while any exist, queries
// on the collection are left to FerretDB), one on the value of each of
// single (for equality on a selective field), and one per composite (a
// list of field names): a composite answers conditions on its fields
// from the index alone, without reading a document, and one that starts
// with a sort field serves pages in that order. It then refreshes
// SQLite's statistics of the collection so that its planner knows how
// selective each index is. The primary calls it at start; a collection
// without a table yet is left alone.
func (l *Lookup) IndexFields(ctx context.Context, coll string, kinds []Field, single []string, composites [][]string) error {
	db, t, err := l.writeTable(ctx, coll)
	if db == nil || err != nil {
		return err
	}
	defer db.Close()
	var qs []string
	for _, f := range single {
		if !validField(f) {
			return fmt.Errorf("embeddedmongo: cannot index field %q", f)
		}
		qs = append(qs, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s)`, t+"_govkit_eq_"+f, t, valueExpr(f, false)))
	}
	for _, c := range composites {
		exprs := make([]string, len(c))
		for i, f := range c {
			if !validField(f) {
				return fmt.Errorf("embeddedmongo: cannot index field %q", f)
			}
			exprs[i] = valueExpr(f, false)
		}
		qs = append(qs, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s)`, compositeName(t, c), t, strings.Join(exprs, ", ")))
	}
	if len(kinds) > 0 {
		// The documents whose fields break their kinds, and only those:
		// normally none, so the index is empty and costs nothing to keep.
		qs = append(qs, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %q ON %q (%s) WHERE %s`, oddName(t, kinds), t, schemaTypeExpr("_id"), oddExpr(kinds)))
	}
	// Composites and odd-document indexes of ours that an earlier
	// version made and this one does not: every write still keeps them
	// up to date, for nothing.
	want := map[string]bool{oddName(t, kinds): len(kinds) > 0}
	for _, c := range composites {
		want[compositeName(t, c)] = true
	}
	stale, err := l.staleIndexes(ctx, db, t, want)
	if err != nil {
		return err
	}
	for _, name := range stale {
		qs = append(qs, fmt.Sprintf(`DROP INDEX IF EXISTS %q`, name))
		l.seen.Delete(name)
	}
	// analysis_limit makes ANALYZE sample each index instead of reading it
	// whole: milliseconds at a million documents, and estimates are all
	// the planner needs.
	qs = append(qs, `PRAGMA analysis_limit = 1000`, fmt.Sprintf(`ANALYZE %q`, t))
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("embeddedmongo: index %s: %w", coll, err)
		}
	}
	return nil
}

// staleIndexes lists the composite and odd-document indexes of ours on
// table t that want does not name.
func (l *Lookup) staleIndexes(ctx context.Context, db *sql.DB, t string, want map[string]bool) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND (name GLOB ? OR name GLOB ?)`,
		t, t+"_govkit_c_*", t+"_govkit_odd_*")
	if err != nil {
		return nil, fmt.Errorf("embeddedmongo: indexes: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("embeddedmongo: indexes: %w", err)
		}
		if !want[name] {
			out = append(out, name)
		}
	}
	return out, rows.Err()
}

func compositeName(table string, fields []string) string {
	return table + "_govkit_c_" + strings.Join(fields, "_")
}

// writeTable opens a connection that writes to the database file and
// finds collection coll's table in it; a nil connection (and no error)
// when the collection has no table yet. The caller closes it.
func (l *Lookup) writeTable(ctx context.Context, coll string) (*sql.DB, string, error) {
	db, err := sql.Open("sqlite", l.sqlURL(false))
	if err != nil {
		return nil, "", fmt.Errorf("embeddedmongo: lookup: %w", err)
	}
	t, err := l.table(ctx, db, coll, true)
	if err != nil {
		db.Close()
		if errors.Is(err, errNoTable) {
			return nil, "", nil
		}
		return nil, "", err
	}
	return db, t, nil
}

// where builds the SQL condition and arguments of q's Conds and Any,
// after checking that every field named has its indexes and only values
// of its kind.
func (l *Lookup) where(ctx context.Context, db *sql.DB, table string, q Query) (string, []any, error) {
	for _, c := range q.AllConds() {
		if _, ok := q.kind(c.Field); !ok || !validField(c.Field) {
			return "", nil, ErrUnanswerable
		}
	}
	if len(q.Fields) == 0 || !l.hasIndex(ctx, db, table, oddName(table, q.Fields)) {
		return "", nil, ErrUnanswerable
	}
	var one int
	odd := oddName(table, q.Fields)
	err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT 1 FROM %q INDEXED BY %s WHERE %s LIMIT 1`, table, strconvQuote(odd), oddExpr(q.Fields))).Scan(&one)
	switch {
	case err == nil:
		return "", nil, ErrUnanswerable
	case err != nil && strings.Contains(err.Error(), "no such index"):
		// the collection was dropped and made again since the index
		// was seen: FerretDB answers until the next start indexes it
		l.seen.Delete(odd)
		return "", nil, ErrUnanswerable
	case !errors.Is(err, sql.ErrNoRows):
		return "", nil, fmt.Errorf("embeddedmongo: query: %w", err)
	}
	for _, o := range q.Order {
		if k, ok := q.kind(o.Field); !ok || k == KindStrings || !validField(o.Field) {
			return "", nil, ErrUnanswerable
		}
	}
	var w sqlWhere
	for _, c := range q.Conds {
		p, err := w.cond(q, c)
		if err != nil {
			return "", nil, err
		}
		if p != "" {
			w.parts = append(w.parts, p)
		}
	}
	for _, g := range q.Any {
		var alts []string
		for _, conj := range g {
			var ps []string
			for _, c := range conj {
				p, err := w.cond(q, c)
				if err != nil {
					return "", nil, err
				}
				if p != "" {
					ps = append(ps, p)
				}
			}
			if len(ps) == 0 {
				ps = []string{"1"}
			}
			alts = append(alts, "("+strings.Join(ps, " AND ")+")")
		}
		if len(alts) == 0 {
			alts = []string{"0"}
		}
		w.parts = append(w.parts, "("+strings.Join(alts, " OR ")+")")
	}
	if len(w.parts) == 0 {
		return "", nil, nil
	}
	return " WHERE " + strings.Join(w.parts, " AND "), w.args, nil
}

// sqlWhere collects a WHERE clause's arguments in the order of its text.
type sqlWhere struct {
	parts []string
	args  []any
}

// cond is c in SQL ("" for a condition every document meets), its
// arguments added to w.args.
func (w *sqlWhere) cond(q Query, c Cond) (string, error) {
	k, _ := q.kind(c.Field)
	v := valueExpr(c.Field, false)
	vals := make([]any, len(c.Values))
	for i, x := range c.Values {
		sk := k
		if k == KindStrings {
			sk = KindString
		}
		y, ok := sqlValue(sk, x)
		if !ok {
			return "", ErrUnanswerable
		}
		vals[i] = y
	}
	switch c.Op {
	case OpEq, OpNe:
		if len(vals) == 1 && vals[0] == nil {
			// An array (of strings: see oddExpr) is never NULL here.
			if c.Op == OpEq {
				return v + " IS NULL", nil
			}
			return v + " IS NOT NULL", nil
		}
		if len(vals) == 0 {
			if c.Op == OpEq {
				return "0", nil
			}
			return "", nil
		}
		for _, x := range vals {
			if x == nil {
				return "", ErrUnanswerable
			}
		}
		marks := strings.TrimSuffix(strings.Repeat("?,", len(vals)), ",")
		w.args = append(w.args, vals...)
		if k == KindStrings {
			// json_each gives a string as itself and an array's
			// elements (strings, as oddExpr makes sure) one per row;
			// a missing field gives none, null a NULL.
			has := fmt.Sprintf(`EXISTS (SELECT 1 FROM json_each(_ferretdb_sjson, '$.%s') WHERE value IN (%s))`, c.Field, marks)
			if c.Op == OpEq {
				return has, nil
			}
			return "NOT " + has, nil
		}
		in := v + " IN (" + marks + ")"
		if c.Op == OpEq {
			return in, nil
		}
		return "(" + v + " IS NULL OR NOT " + in + ")", nil
	case OpGt, OpGte, OpLt, OpLte:
		if k == KindStrings || len(vals) != 1 || vals[0] == nil {
			return "", ErrUnanswerable
		}
		op := map[string]string{OpGt: ">", OpGte: ">=", OpLt: "<", OpLte: "<="}[c.Op]
		w.args = append(w.args, vals[0])
		return v + " " + op + " ?", nil
	}
	return "", ErrUnanswerable
}

// readsTable reports whether SQLite's plan for sqlq reads every row of
// table (rather than an index, or rows an index found).
func readsTable(ctx context.Context, db *sql.DB, table, sqlq string, args ...any) (bool, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlq, args...)
	if err != nil {
		return false, fmt.Errorf("embeddedmongo: plan: %w", err)
	}
	defer rows.Close()
	scan := false
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return false, fmt.Errorf("embeddedmongo: plan: %w", err)
		}
		for _, p := range []string{"SCAN " + table, "SCAN TABLE " + table} {
			if detail == p || strings.HasPrefix(detail, p+" ") && !strings.Contains(detail, "INDEX") {
				scan = true
			}
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("embeddedmongo: plan: %w", err)
	}
	return scan, nil
}

// sqlValue is x as FerretDB stores a value of kind k, read by ->>; false
// when x is not of that kind.
func sqlValue(k Kind, x any) (any, bool) {
	if x == nil {
		return nil, true
	}
	switch k {
	case KindString:
		s, ok := x.(string)
		return s, ok
	case KindBool:
		b, ok := x.(bool)
		if !ok {
			return nil, false
		}
		if b {
			return int64(1), true
		}
		return int64(0), true
	case KindDate:
		switch t := x.(type) {
		case time.Time:
			return t.UnixMilli(), true
		case bson.DateTime:
			return int64(t), true
		}
	}
	return nil, false
}

func (l *Lookup) hasIndex(ctx context.Context, db *sql.DB, table, name string) bool {
	if _, ok := l.seen.Load(name); ok {
		return true
	}
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?`, table, name).Scan(&n)
	if err == nil && n == 1 {
		l.seen.Store(name, true)
		return true
	}
	return false
}

// withTable runs f on the collection's table, once more if the
// collection was dropped and made again meanwhile.
func (l *Lookup) withTable(ctx context.Context, coll string, f func(db *sql.DB, table string) error) error {
	if l == nil {
		return ErrUnanswerable
	}
	db, err := l.conn()
	if err != nil {
		return fmt.Errorf("embeddedmongo: lookup: %w", err)
	}
	for attempt := 0; ; attempt++ {
		t, err := l.table(ctx, db, coll, attempt > 0)
		if errors.Is(err, errNoTable) {
			return ErrUnanswerable
		}
		if err != nil {
			return err
		}
		err = f(db, t)
		if err != nil && attempt == 0 && strings.Contains(err.Error(), "no such table") {
			continue
		}
		return err
	}
}

// Find returns the _id of the documents q selects, in q's order, after
// q.Skip, at most q.Limit of them (which must be set). ErrUnanswerable:
// ask FerretDB.
func (l *Lookup) Find(ctx context.Context, q Query) ([]any, error) {
	if q.Limit <= 0 {
		return nil, ErrUnanswerable
	}
	var ids []any
	err := l.withTable(ctx, q.Coll, func(db *sql.DB, t string) error {
		rowids, err := l.pageRowids(ctx, db, t, q)
		if err != nil {
			return err
		}
		ids = make([]any, 0, len(rowids))
		for _, r := range rowids {
			got, err := l.idOf(ctx, db, t, r)
			if err != nil {
				return err
			}
			ids = append(ids, got...) // none when deleted meanwhile
		}
		return nil
	})
	return ids, err
}

// idOf is the _id of the document of rowid r (none when it was deleted
// meanwhile); ErrUnanswerable when it is neither an ObjectId nor a
// string.
func (l *Lookup) idOf(ctx context.Context, db *sql.DB, t string, r int64) ([]any, error) {
	byRow := fmt.Sprintf(`SELECT _ferretdb_sjson->>'$._id', %s FROM %q WHERE rowid = ?`, schemaTypeExpr("_id"), t)
	got, ok, err := l.query(ctx, db, byRow, r)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrUnanswerable
	}
	return got, nil
}

// docsChunk is how many documents [Lookup.FindDocs] reads from SQLite in
// one query: a few hundred kilobytes of stored text at a time.
const docsChunk = 256

// FindDocs is [Lookup.Find] returning the documents themselves, read in
// bulk from the collection's table (one SQLite query per 256 documents
// instead of a FerretDB round trip for each) and decoded from FerretDB's
// stored format into the bytes FerretDB would send. It calls each with
// every document of the page in q's order; a document deleted since the
// page was found is left out. When a document's stored text cannot be
// decoded, raw is nil and id its _id: the caller reads it through
// FerretDB. q.Limit 0 means every document q selects after q.Skip: the
// caller bounds how many (by [Lookup.Count]); memory held here is one
// chunk and the page's rowids.
//
// On an error (ErrUnanswerable: ask FerretDB) the documents each was
// given are not the answer and must be dropped.
func (l *Lookup) FindDocs(ctx context.Context, q Query, each func(id any, raw bson.Raw) error) error {
	if q.Limit < 0 {
		return ErrUnanswerable
	}
	emitted := false
	err := l.withTable(ctx, q.Coll, func(db *sql.DB, t string) error {
		rowids, err := l.pageRowids(ctx, db, t, q)
		if err != nil {
			return err
		}
		for len(rowids) > 0 {
			chunk := rowids[:min(docsChunk, len(rowids))]
			rowids = rowids[len(chunk):]
			texts, err := readStored(ctx, db, t, chunk)
			if err != nil {
				if emitted {
					// not to be retried by withTable: each has had some
					return errChanged
				}
				return err
			}
			for _, r := range chunk {
				text, ok := texts[r]
				if !ok {
					continue // deleted meanwhile
				}
				raw, derr := decodeSJSON(nil, text)
				var id any
				if derr != nil {
					ids, err := l.idOf(ctx, db, t, r)
					if err != nil {
						return err
					}
					if len(ids) == 0 {
						continue
					}
					id, raw = ids[0], nil
				}
				emitted = true
				if err := each(id, raw); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return err
}

// errChanged: the collection's table went away in the middle of a read.
var errChanged = errors.New("embeddedmongo: find: the collection was dropped during the read")

// readStored reads the stored text of the documents of rowids.
func readStored(ctx context.Context, db *sql.DB, t string, rowids []int64) (map[int64][]byte, error) {
	var in strings.Builder
	for i, r := range rowids {
		if i > 0 {
			in.WriteByte(',')
		}
		in.WriteString(strconv.FormatInt(r, 10))
	}
	rows, err := db.QueryContext(ctx, fmt.Sprintf(`SELECT rowid, _ferretdb_sjson FROM %q WHERE rowid IN (%s)`, t, in.String()))
	if err != nil {
		return nil, fmt.Errorf("embeddedmongo: find: %w", err)
	}
	defer rows.Close()
	out := make(map[int64][]byte, len(rowids))
	for rows.Next() {
		var r int64
		var text []byte
		if err := rows.Scan(&r, &text); err != nil {
			return nil, fmt.Errorf("embeddedmongo: find: %w", err)
		}
		out[r] = text
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("embeddedmongo: find: %w", err)
	}
	return out, nil
}

// tableSize is how many documents a table held when counted.
type tableSize struct {
	n  int64
	at time.Time
}

// rows is about how many documents table t holds: counted at most once a
// minute (17 ms at a million), for weighing a walk against a sort, which
// an estimate serves as well.
func (l *Lookup) rows(ctx context.Context, db *sql.DB, t string) (int64, error) {
	if v, ok := l.sizes.Load(t); ok && time.Since(v.(tableSize).at) < time.Minute {
		return v.(tableSize).n, nil
	}
	var n int64
	if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %q`, t)).Scan(&n); err != nil {
		return 0, fmt.Errorf("embeddedmongo: count: %w", err)
	}
	l.sizes.Store(t, tableSize{n, time.Now()})
	return n, nil
}

// pageRowids finds the rowids of q's page in table t, in q's order
// (q.Limit 0: all after q.Skip).
func (l *Lookup) pageRowids(ctx context.Context, db *sql.DB, t string, q Query) ([]int64, error) {
	sqlq, args, err := l.pageSQL(ctx, db, t, q)
	if err != nil {
		return nil, err
	}
	return rowidsOf(ctx, db, sqlq, args...)
}

// pageSQL is the query of pageRowids and its arguments.
func (l *Lookup) pageSQL(ctx context.Context, db *sql.DB, t string, q Query) (string, []any, error) {
	w, args, err := l.where(ctx, db, t, q)
	if err != nil {
		return "", nil, err
	}
	// How to find the page. With conditions, SQLite's planner would take
	// the index of a condition and sort every match, which at a million
	// documents reads a hundred thousand of them. So: a composite whose
	// leading fields the equalities fix and whose next is the sort field
	// gives the page as a range; otherwise the matches are counted (from
	// an index), and either sorted, when they are few, or found by
	// walking a composite index in sort order, whichever reads less.
	// A query whose plan is checked is counted too, in natural order as
	// well: SQLite would otherwise walk the table in rowid order rather
	// than find and sort the few matches.
	//
	// index is the composite that serves the order (nil: SQLite sorts,
	// or picks the index itself when there are no conditions); from is
	// where the sort field is in it.
	var index []string
	from, sortFew, checked := 0, false, q.PlanChecked()
	if c := q.rangeIndex(); c != nil && !checked && l.hasIndex(ctx, db, t, compositeName(t, c)) {
		index, from = c, slices.Index(c, q.Order[0].Field)
	} else if (len(q.Order) > 0 || checked) && w != "" {
		n, err := countWhere(ctx, db, t, w, args, checked)
		if err != nil {
			return "", nil, err
		}
		sortFew = n <= smallSet
		if c := q.sortIndex(); c != nil && l.hasIndex(ctx, db, t, compositeName(t, c)) {
			sortFew = true
			total, err := l.rows(ctx, db, t)
			if err != nil {
				return "", nil, err
			}
			// a walk passes about total/n entries per match it finds
			walk := total
			if n > 0 && q.Limit > 0 {
				walk = min(total, (q.Skip+q.Limit)*total/n)
			}
			if walk < n*docPerEntry {
				index, sortFew = c, false
			}
		}
	} else if len(q.Order) == 1 {
		index = q.leading()
	}
	hint := ""
	if index != nil && w != "" {
		hint = " INDEXED BY " + strconvQuote(compositeName(t, index))
	}
	var order []string
	for _, o := range q.Order {
		e := valueExpr(o.Field, false)
		if sortFew {
			// not the indexed expression: SQLite sorts the matches
			e = "+" + e
		}
		order = append(order, e+dirOf(o.Desc))
	}
	// Ties in the order of the index that serves the sort: the rest of
	// its fields, then the natural order (all in the first key's
	// direction, so that the index walked one way serves the whole sort
	// and SQLite never sorts a group of ties, such as the 900,000
	// confirmed ones under a sort by state). Pages of one sort never
	// overlap.
	desc := len(q.Order) > 0 && q.Order[0].Desc
	if index != nil && len(q.Order) == 1 {
		for _, f := range index[from+1:] {
			order = append(order, valueExpr(f, false)+dirOf(desc))
		}
	}
	if sortFew {
		order = append(order, "+rowid"+dirOf(desc))
	} else {
		order = append(order, "rowid"+dirOf(desc))
	}
	// Only rowids first: the sort and the skip read index entries, not
	// documents; then the page's documents.
	limit := q.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	sqlq := fmt.Sprintf(`SELECT rowid FROM %q%s%s ORDER BY %s LIMIT ? OFFSET ?`, t, hint, w, strings.Join(order, ", "))
	args = append(args, limit, q.Skip)
	if checked && !sortFew {
		if scan, err := readsTable(ctx, db, t, sqlq, args...); err != nil || scan {
			return "", nil, cmp.Or(err, ErrUnanswerable)
		}
	}
	return sqlq, args, nil
}

// Count counts the documents q selects. ErrUnanswerable: ask
// FerretDB.
func (l *Lookup) Count(ctx context.Context, q Query) (int64, error) {
	q.Order = nil
	var n int64
	err := l.withTable(ctx, q.Coll, func(db *sql.DB, t string) error {
		w, args, err := l.where(ctx, db, t, q)
		if err != nil {
			return err
		}
		n, err = countWhere(ctx, db, t, w, args, q.PlanChecked())
		return err
	})
	return n, err
}

// countWhere counts the documents of table that where w selects; with
// checked, ErrUnanswerable when SQLite would read every row to count.
func countWhere(ctx context.Context, db *sql.DB, table, w string, args []any, checked bool) (int64, error) {
	sqlq := fmt.Sprintf(`SELECT count(*) FROM %q%s`, table, w)
	if checked {
		if scan, err := readsTable(ctx, db, table, sqlq, args...); err != nil || scan {
			return 0, cmp.Or(err, ErrUnanswerable)
		}
	}
	var n int64
	if err := db.QueryRowContext(ctx, sqlq, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("embeddedmongo: count: %w", err)
	}
	return n, nil
}

// AtLeast reports whether collection coll holds at least n documents,
// reading no more than n index entries.
func (l *Lookup) AtLeast(ctx context.Context, coll string, n int) (bool, error) {
	var got int
	err := l.withTable(ctx, coll, func(db *sql.DB, t string) error {
		return db.QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %q LIMIT ?)`, t), n).Scan(&got)
	})
	if errors.Is(err, ErrUnanswerable) {
		return false, nil
	}
	return got >= n, err
}

// Group is one group of [Lookup.Groups]: the fields' values ("" for
// null or missing) and how many documents have them.
type Group struct {
	Values []string
	Count  int64
}

// Groups counts the documents of coll by the values of fields (all of
// kind string), largest groups first (ties by the values), at most limit
// groups. It reads the counts [Lookup.KeepGroupCounts] keeps when they
// are kept for these fields; otherwise, with an index on exactly these
// fields (a composite of IndexFields), SQLite reads that index alone,
// never a document.
//
// kinds are the collection's fields and kinds as given to IndexFields.
func (l *Lookup) Groups(ctx context.Context, coll string, kinds []Field, fields []string, limit int) ([]Group, error) {
	q := Query{Coll: coll, Fields: kinds}
	for _, f := range fields {
		if k, ok := q.kind(f); !ok || k != KindString {
			return nil, ErrUnanswerable
		}
		q.Order = append(q.Order, Order{Field: f})
	}
	var out []Group
	err := l.withTable(ctx, coll, func(db *sql.DB, t string) error {
		if _, _, err := l.where(ctx, db, t, q); err != nil {
			return err
		}
		if kept, ok, err := l.keptGroups(ctx, db, t, fields, limit); err != nil || ok {
			out = kept
			return err
		}
		exprs := make([]string, len(fields))
		cols := make([]string, len(fields))
		for i, f := range fields {
			exprs[i] = valueExpr(f, false)
			cols[i] = fmt.Sprint(i + 1)
		}
		sqlq := fmt.Sprintf(`SELECT %s, count(*) AS n FROM %q GROUP BY %s ORDER BY n DESC, %s LIMIT ?`,
			strings.Join(exprs, ", "), t, strings.Join(exprs, ", "), strings.Join(cols, ", "))
		rows, err := db.QueryContext(ctx, sqlq, limit)
		if err != nil {
			return fmt.Errorf("embeddedmongo: groups: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			vals := make([]sql.NullString, len(fields))
			dest := make([]any, len(fields)+1)
			for i := range vals {
				dest[i] = &vals[i]
			}
			var g Group
			dest[len(fields)] = &g.Count
			if err := rows.Scan(dest...); err != nil {
				return fmt.Errorf("embeddedmongo: groups: %w", err)
			}
			for _, v := range vals {
				g.Values = append(g.Values, v.String)
			}
			out = append(out, g)
		}
		return rows.Err()
	})
	return out, err
}

func dirOf(desc bool) string {
	if desc {
		return " DESC"
	}
	return " ASC"
}

// leading is the composite index that starts with q's first sort field.
func (q Query) leading() []string {
	if len(q.Order) == 0 {
		return nil
	}
	for _, c := range q.Composites {
		if c[0] == q.Order[0].Field {
			return c
		}
	}
	return nil
}

func rowidsOf(ctx context.Context, db *sql.DB, q string, args ...any) ([]int64, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("embeddedmongo: find: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var r int64
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("embeddedmongo: find: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("embeddedmongo: find: %w", err)
	}
	return out, nil
}

func strconvQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
