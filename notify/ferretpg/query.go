package ferretpg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/embeddedmongo"
)

var errUnanswerable = embeddedmongo.ErrUnanswerable

// textExpr is a string (or boolean: false < true as text) field's value,
// compared byte-wise as MongoDB compares strings. The SQL must be written
// the same way in the index and the query for PostgreSQL to match them.
func textExpr(field string) string {
	return `((_jsonb->>'` + field + `') COLLATE "C")`
}

// dateExpr is a date field's milliseconds; anything but a number (which
// the guard keeps out of the answered queries) is NULL rather than an
// error, so that no document FerretDB writes can fail the index.
func dateExpr(field string) string {
	return `(CASE WHEN jsonb_typeof(_jsonb->'` + field + `') = 'number' THEN (_jsonb->>'` + field + `')::numeric END)`
}

func valueExpr(field string, k embeddedmongo.Kind) string {
	if k == embeddedmongo.KindDate {
		return dateExpr(field)
	}
	return textExpr(field)
}

// idExpr ends every index and sort of ours: the tie-breaker.
var idExpr = textExpr("_id")

// schemaTypeExpr is the type FerretDB records for a field ("string",
// "date", "bool", "array", …; NULL when missing).
func schemaTypeExpr(field string) string {
	return `(_jsonb->'$s'->'p'->'` + field + `'->>'t')`
}

// oddExpr is true for a document that holds in one of fields a value of
// another kind than the field's.
func oddExpr(fields []embeddedmongo.Field) string {
	parts := make([]string, 0, len(fields))
	for _, f := range fields {
		if f.Kind == embeddedmongo.KindStrings {
			// a string, or an array whose elements (their schemas, "i")
			// are all strings: an ObjectId or null element would match
			// as a string or not at all under @>
			t := schemaTypeExpr(f.Name)
			parts = append(parts, fmt.Sprintf(`coalesce(%s, 'null') NOT IN ('string', 'array', 'null')`, t),
				fmt.Sprintf(`(%s = 'array' AND jsonb_path_exists(_jsonb->'$s'->'p'->'%s'->'i', '$[*] ? (@.t != "string")'))`, t, f.Name))
			continue
		}
		parts = append(parts, fmt.Sprintf(`coalesce(%s, 'null') NOT IN ('%s', 'null')`, schemaTypeExpr(f.Name), f.Kind))
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

func fieldOf(fields []embeddedmongo.Field, f string) (embeddedmongo.Field, bool) {
	for _, x := range fields {
		if x.Name == f {
			return x, true
		}
	}
	return embeddedmongo.Field{}, false
}

func kindOf(fields []embeddedmongo.Field, f string) (embeddedmongo.Kind, bool) {
	for _, x := range fields {
		if x.Name == f {
			return x.Kind, true
		}
	}
	return "", false
}

// btree is an index definition over fields (each nulls first, as MongoDB
// sorts) and the _id.
func btree(kinds []embeddedmongo.Field, fields []string) (string, error) {
	cols := make([]string, 0, len(fields)+1)
	for _, f := range fields {
		k, ok := kindOf(kinds, f)
		if !ok || !validField(f) {
			return "", fmt.Errorf("ferretpg: cannot index field %q", f)
		}
		cols = append(cols, valueExpr(f, k)+" NULLS FIRST")
	}
	return "(" + strings.Join(append(cols, idExpr), ", ") + ")", nil
}

// singleName and compositeName name the indexes IndexFields makes, which
// the queries check for.
func compositeName(table string, kinds []embeddedmongo.Field, fields []string) (string, string, error) {
	def, err := btree(kinds, fields)
	if err != nil {
		return "", "", err
	}
	return indexName(table, def, strings.Join(fields, "_")), def, nil
}

func oddName(table string, kinds []embeddedmongo.Field) (string, string) {
	def := "(" + idExpr + ") WHERE " + oddExpr(kinds)
	return indexName(table, def, "odd"), def
}

// IndexFields creates, if missing, the indexes Find, Count and Groups use
// for collection coll: the partial index of the documents whose fields
// break the kinds given (while any exist, queries on the collection are
// left to FerretDB), one on each of single, one per composite, and the
// GIN index FerretDB's _id lookups use; then it refreshes PostgreSQL's
// statistics of the table (ANALYZE), which hold the distribution of each
// indexed expression. The primary calls it at start; a collection without
// a table yet is left alone.
func (x *Index) IndexFields(ctx context.Context, coll string, kinds []embeddedmongo.Field, single []string, composites [][]string) error {
	return x.withTable(ctx, coll, func(t string) error {
		if err := x.indexIDs(ctx, t); err != nil {
			return err
		}
		lists := make([][]string, 0, len(single)+len(composites))
		for _, f := range single {
			lists = append(lists, []string{f})
		}
		lists = append(lists, composites...)
		for _, fields := range lists {
			name, def, err := compositeName(t, kinds, fields)
			if err != nil {
				return err
			}
			if err := x.createIndex(ctx, t, name, def); err != nil {
				return err
			}
		}
		if len(kinds) > 0 {
			for _, f := range kinds {
				if !validField(f.Name) {
					return fmt.Errorf("ferretpg: cannot index field %q", f.Name)
				}
			}
			name, def := oddName(t, kinds)
			if err := x.createIndex(ctx, t, name, def); err != nil {
				return err
			}
		}
		if _, err := x.pool.Exec(ctx, `ANALYZE `+x.qualified(t)); err != nil {
			return fmt.Errorf("ferretpg: analyze %s: %w", coll, err)
		}
		return nil
	})
}

// indexIDs makes FerretDB's own reads by _id (_jsonb->'_id' @> value)
// use an index, unless one already serves them.
func (x *Index) indexIDs(ctx context.Context, t string) error {
	def := `USING gin ((_jsonb->'_id') jsonb_path_ops)`
	name := indexName(t, def, "id")
	if x.hasIndex(ctx, name) {
		return nil
	}
	var exists bool
	err := x.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND tablename = $2
		AND indexdef LIKE '%USING gin (((_jsonb -> ''\_id''::text)) jsonb_path_ops)%')`, x.schema, t).Scan(&exists)
	if err != nil {
		return fmt.Errorf("ferretpg: indexes of %s: %w", t, err)
	}
	if exists {
		x.seen.Store(name, true)
		return nil
	}
	return x.createIndex(ctx, t, name, def)
}

// where builds the SQL condition and arguments of q's Conds, after
// checking that every field named has its kind and the collection no
// document of another kind in them.
func (x *Index) where(ctx context.Context, table string, q embeddedmongo.Query) (string, []any, error) {
	for _, o := range q.Order {
		if k, _ := kindOf(q.Fields, o.Field); k == embeddedmongo.KindStrings {
			return "", nil, errUnanswerable
		}
	}
	for _, c := range q.AllConds() {
		if _, ok := kindOf(q.Fields, c.Field); !ok || !validField(c.Field) {
			return "", nil, errUnanswerable
		}
	}
	for _, o := range q.Order {
		if _, ok := kindOf(q.Fields, o.Field); !ok || !validField(o.Field) {
			return "", nil, errUnanswerable
		}
	}
	if len(q.Fields) == 0 {
		return "", nil, errUnanswerable
	}
	for _, f := range q.Fields {
		if !validField(f.Name) {
			return "", nil, errUnanswerable
		}
	}
	odd, _ := oddName(table, q.Fields)
	if !x.hasIndex(ctx, odd) {
		return "", nil, errUnanswerable
	}
	var one int
	err := x.pool.QueryRow(ctx, fmt.Sprintf(`SELECT 1 FROM %s WHERE %s LIMIT 1`, x.qualified(table), oddExpr(q.Fields))).Scan(&one)
	switch {
	case err == nil:
		return "", nil, errUnanswerable
	case !errors.Is(err, pgx.ErrNoRows):
		return "", nil, fmt.Errorf("ferretpg: query: %w", err)
	}
	var parts []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	// cond is c in SQL ("" for a condition every document meets).
	cond := func(c embeddedmongo.Cond) (string, error) {
		k, _ := kindOf(q.Fields, c.Field)
		v := valueExpr(c.Field, k)
		vals := make([]any, len(c.Values))
		for i, y := range c.Values {
			sk := k
			if k == embeddedmongo.KindStrings {
				sk = embeddedmongo.KindString
			}
			z, ok := sqlValue(sk, y)
			if !ok {
				return "", errUnanswerable
			}
			vals[i] = z
		}
		switch c.Op {
		case embeddedmongo.OpEq, embeddedmongo.OpNe:
			if len(vals) == 1 && vals[0] == nil {
				// (an array of strings is not NULL: see oddExpr)
				if c.Op == embeddedmongo.OpEq {
					return v + " IS NULL", nil
				}
				return v + " IS NOT NULL", nil
			}
			if len(vals) == 0 {
				if c.Op == embeddedmongo.OpEq {
					return "false", nil
				}
				return "", nil
			}
			ph := make([]string, len(vals))
			for i, y := range vals {
				if y == nil {
					return "", errUnanswerable
				}
				ph[i] = arg(y)
			}
			if k == embeddedmongo.KindStrings {
				// @> finds a string in an array of strings, or the
				// string itself; null and missing contain nothing.
				has := make([]string, len(ph))
				for i, p := range ph {
					has[i] = fmt.Sprintf(`_jsonb->'%s' @> to_jsonb(%s::text)`, c.Field, p)
				}
				in := "coalesce(" + strings.Join(has, " OR ") + ", false)"
				if c.Op == embeddedmongo.OpEq {
					return in, nil
				}
				return "NOT " + in, nil
			}
			in := v + " IN (" + strings.Join(ph, ", ") + ")"
			if c.Op == embeddedmongo.OpEq {
				return in, nil
			}
			// MongoDB's $ne and $nin select null and missing too
			return "(" + v + " IS NULL OR NOT " + in + ")", nil
		case embeddedmongo.OpGt, embeddedmongo.OpGte, embeddedmongo.OpLt, embeddedmongo.OpLte:
			if k == embeddedmongo.KindStrings || len(vals) != 1 || vals[0] == nil {
				return "", errUnanswerable
			}
			op := map[string]string{embeddedmongo.OpGt: ">", embeddedmongo.OpGte: ">=", embeddedmongo.OpLt: "<", embeddedmongo.OpLte: "<="}[c.Op]
			return v + " " + op + " " + arg(vals[0]), nil
		}
		return "", errUnanswerable
	}
	for _, c := range q.Conds {
		p, err := cond(c)
		if err != nil {
			return "", nil, err
		}
		if p != "" {
			parts = append(parts, p)
		}
	}
	for _, g := range q.Any {
		var alts []string
		for _, conj := range g {
			var ps []string
			for _, c := range conj {
				p, err := cond(c)
				if err != nil {
					return "", nil, err
				}
				if p != "" {
					ps = append(ps, p)
				}
			}
			if len(ps) == 0 {
				ps = []string{"true"}
			}
			alts = append(alts, "("+strings.Join(ps, " AND ")+")")
		}
		if len(alts) == 0 {
			alts = []string{"false"}
		}
		parts = append(parts, "("+strings.Join(alts, " OR ")+")")
	}
	if len(parts) == 0 {
		return "", args, nil
	}
	return " WHERE " + strings.Join(parts, " AND "), args, nil
}

// sqlValue is x as the index expression of kind k gives it; false when x
// is not of that kind.
func sqlValue(k embeddedmongo.Kind, x any) (any, bool) {
	if x == nil {
		return nil, true
	}
	switch k {
	case embeddedmongo.KindString:
		s, ok := x.(string)
		return s, ok
	case embeddedmongo.KindBool:
		b, ok := x.(bool)
		if !ok {
			return nil, false
		}
		if b {
			return "true", true
		}
		return "false", true
	case embeddedmongo.KindDate:
		switch t := x.(type) {
		case time.Time:
			return t.UnixMilli(), true
		case bson.DateTime:
			return int64(t), true
		}
	}
	return nil, false
}

// Find returns the _id of the documents q selects, in q's order, after
// q.Skip, at most q.Limit of them (which must be set): ObjectIds as
// bson.ObjectID, strings as string. Ties come in the order of the rest of
// the composite index that serves the sort, then by _id, all in the first
// key's direction, so that an index walked one way serves the whole sort.
// ErrUnanswerable: ask FerretDB.
func (x *Index) Find(ctx context.Context, q embeddedmongo.Query) ([]any, error) {
	if q.Limit <= 0 {
		return nil, errUnanswerable
	}
	var ids []any
	err := x.withTable(ctx, q.Coll, func(t string) error {
		sqlq, args, err := x.findSQL(ctx, t, q)
		if err != nil {
			return err
		}
		if err := x.checkPlan(ctx, t, q, sqlq, args); err != nil {
			return err
		}
		ids, err = x.ids(ctx, sqlq, args...)
		return err
	})
	return ids, err
}

// findSQL is the query Find runs (tests explain it).
func (x *Index) findSQL(ctx context.Context, t string, q embeddedmongo.Query) (string, []any, error) {
	return x.pageSQL(ctx, t, q, `_jsonb->>'_id', `+schemaTypeExpr("_id"))
}

// pageSQL selects cols of the rows of q's page, in q's order (q.Limit
// 0: all after q.Skip).
func (x *Index) pageSQL(ctx context.Context, t string, q embeddedmongo.Query, cols string) (string, []any, error) {
	w, args, err := x.where(ctx, t, q)
	if err != nil {
		return "", nil, err
	}
	var order []string
	for _, o := range q.Order {
		k, _ := kindOf(q.Fields, o.Field)
		order = append(order, valueExpr(o.Field, k)+nullsDir(o.Desc))
	}
	desc := len(q.Order) > 0 && q.Order[0].Desc
	if c := leading(q); len(q.Order) == 1 && c != nil {
		for _, f := range c[1:] {
			k, ok := kindOf(q.Fields, f)
			if !ok {
				return "", nil, errUnanswerable
			}
			order = append(order, valueExpr(f, k)+nullsDir(desc))
		}
	}
	order = append(order, idExpr+dir(desc))
	n := len(args)
	sqlq := fmt.Sprintf(`SELECT %s FROM %s%s ORDER BY %s LIMIT $%d OFFSET $%d`,
		cols, x.qualified(t), w, strings.Join(order, ", "), n+1, n+2)
	var limit any = q.Limit
	if q.Limit == 0 {
		limit = nil // LIMIT NULL: no limit
	}
	return sqlq, append(args, limit, q.Skip), nil
}

// leading is the composite that starts with q's first sort field.
func leading(q embeddedmongo.Query) []string {
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

// nullsDir orders null and missing below every value, as MongoDB does.
func nullsDir(desc bool) string {
	if desc {
		return " DESC NULLS LAST"
	}
	return " ASC NULLS FIRST"
}

func dir(desc bool) string {
	if desc {
		return " DESC"
	}
	return " ASC"
}

// checkPlan refuses (ErrUnanswerable) a query whose plan must be checked
// (q.PlanChecked: a disjunction, a field without an index of its own)
// when PostgreSQL would read every row of table t for it.
func (x *Index) checkPlan(ctx context.Context, t string, q embeddedmongo.Query, sqlq string, args []any) error {
	if !q.PlanChecked() {
		return nil
	}
	var out []byte
	if err := x.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sqlq, args...).Scan(&out); err != nil {
		return fmt.Errorf("ferretpg: plan: %w", err)
	}
	type node struct {
		Type     string `json:"Node Type"`
		Relation string `json:"Relation Name"`
		Plans    []node `json:"Plans"`
	}
	var plans []struct{ Plan node }
	if err := json.Unmarshal(out, &plans); err != nil {
		return fmt.Errorf("ferretpg: plan: %w", err)
	}
	var seq func(n node) bool
	seq = func(n node) bool {
		if n.Type == "Seq Scan" && n.Relation == t {
			return true
		}
		return slices.ContainsFunc(n.Plans, seq)
	}
	for _, p := range plans {
		if seq(p.Plan) {
			return errUnanswerable
		}
	}
	return nil
}

// Count counts the documents q selects. ErrUnanswerable: ask
// FerretDB.
func (x *Index) Count(ctx context.Context, q embeddedmongo.Query) (int64, error) {
	var n int64
	err := x.withTable(ctx, q.Coll, func(t string) error {
		sqlq, args, err := x.countSQL(ctx, t, q)
		if err != nil {
			return err
		}
		if err := x.checkPlan(ctx, t, q, sqlq, args); err != nil {
			return err
		}
		if err := x.pool.QueryRow(ctx, sqlq, args...).Scan(&n); err != nil {
			return fmt.Errorf("ferretpg: count: %w", err)
		}
		return nil
	})
	return n, err
}

func (x *Index) countSQL(ctx context.Context, t string, q embeddedmongo.Query) (string, []any, error) {
	q.Order = nil
	w, args, err := x.where(ctx, t, q)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf(`SELECT count(*) FROM %s%s`, x.qualified(t), w), args, nil
}

// AtLeast reports whether collection coll holds at least n documents,
// reading no more than n index entries.
func (x *Index) AtLeast(ctx context.Context, coll string, n int) (bool, error) {
	var got int
	err := x.withTable(ctx, coll, func(t string) error {
		return x.pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %s LIMIT $1) s`, x.qualified(t)), n).Scan(&got)
	})
	if errors.Is(err, errUnanswerable) {
		return false, nil
	}
	return got >= n, err
}

// Groups counts the documents of coll by the values of fields (all of
// kind string), largest groups first (ties by the values, null first),
// at most limit groups; a value is "" for null or missing. kinds are the
// collection's fields and kinds as given to IndexFields.
func (x *Index) Groups(ctx context.Context, coll string, kinds []embeddedmongo.Field, fields []string, limit int) ([]embeddedmongo.Group, error) {
	var out []embeddedmongo.Group
	err := x.withTable(ctx, coll, func(t string) error {
		sqlq, err := x.groupsSQL(ctx, t, kinds, fields)
		if err != nil {
			return err
		}
		rows, err := x.pool.Query(ctx, sqlq, limit)
		if err != nil {
			return fmt.Errorf("ferretpg: groups: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			vals := make([]*string, len(fields))
			dest := make([]any, len(fields)+1)
			for i := range vals {
				dest[i] = &vals[i]
			}
			var g embeddedmongo.Group
			dest[len(fields)] = &g.Count
			if err := rows.Scan(dest...); err != nil {
				return fmt.Errorf("ferretpg: groups: %w", err)
			}
			for _, v := range vals {
				s := ""
				if v != nil {
					s = *v
				}
				g.Values = append(g.Values, s)
			}
			out = append(out, g)
		}
		return rows.Err()
	})
	return out, err
}

func (x *Index) groupsSQL(ctx context.Context, t string, kinds []embeddedmongo.Field, fields []string) (string, error) {
	q := embeddedmongo.Query{Coll: t, Fields: kinds}
	for _, f := range fields {
		if k, ok := kindOf(kinds, f); !ok || k != embeddedmongo.KindString {
			return "", errUnanswerable
		}
		q.Order = append(q.Order, embeddedmongo.Order{Field: f})
	}
	if _, _, err := x.where(ctx, t, q); err != nil {
		return "", err
	}
	exprs := make([]string, len(fields))
	cols := make([]string, len(fields))
	for i, f := range fields {
		exprs[i] = textExpr(f)
		cols[i] = fmt.Sprint(i+1) + " NULLS FIRST"
	}
	return fmt.Sprintf(`SELECT %s, count(*) AS n FROM %s GROUP BY %s ORDER BY n DESC, %s LIMIT $1`,
		strings.Join(exprs, ", "), x.qualified(t), strings.Join(exprs, ", "), strings.Join(cols, ", ")), nil
}

// ids reads rows of (_id as text, _id's type) into _ids; ErrUnanswerable
// for an _id neither an ObjectId nor a string.
func (x *Index) ids(ctx context.Context, sqlq string, args ...any) ([]any, error) {
	rows, err := x.pool.Query(ctx, sqlq, args...)
	if err != nil {
		return nil, fmt.Errorf("ferretpg: find: %w", err)
	}
	defer rows.Close()
	out := []any{}
	for rows.Next() {
		var id, typ *string
		if err := rows.Scan(&id, &typ); err != nil {
			return nil, fmt.Errorf("ferretpg: find: %w", err)
		}
		if id == nil || typ == nil {
			return nil, errUnanswerable
		}
		switch *typ {
		case "objectId":
			oid, err := bson.ObjectIDFromHex(*id)
			if err != nil {
				return nil, errUnanswerable
			}
			out = append(out, oid)
		case "string":
			out = append(out, *id)
		default:
			return nil, errUnanswerable
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ferretpg: find: %w", err)
	}
	return out, nil
}
