package ferretpg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// foldExpr is a string field's value lower-cased (ASCII, which is what
// lower() changes under COLLATE "C") with the KELVIN SIGN and the LONG S
// mapped to k and s: every string a case-insensitive whole-value pattern
// of an ASCII key matches has the key's value here.
func foldExpr(field string) string {
	return `replace(replace(lower(` + textExpr(field) + `), chr(8490), 'k'), chr(383), 's')`
}

// lookupNames are the indexes Candidates reads for field: exact, a GIN
// index on the value (which also serves FerretDB's own equality lookups,
// _jsonb->'field' @> value); folded, a B-tree on foldExpr and a partial
// index of the documents whose field holds an array (an array matches
// when an element does).
func lookupDefs(field string, fold bool) (defs [][2]string) {
	if !fold {
		return [][2]string{{"eq_" + field, `USING gin ((_jsonb->'` + field + `') jsonb_path_ops)`}}
	}
	return [][2]string{
		{"fold_" + field, "(" + foldExpr(field) + ")"},
		{"array_" + field, "(" + idExpr + ") WHERE " + schemaTypeExpr(field) + " = 'array'"},
	}
}

// Index creates the indexes that Candidates uses for field of collection
// coll (exact or case-folded), if missing, and the GIN index FerretDB's
// _id lookups use. The primary calls it at start; a collection without a
// table yet is left alone.
func (x *Index) Index(ctx context.Context, coll, field string, fold bool) error {
	if !validField(field) || field == "_id" {
		return fmt.Errorf("ferretpg: cannot index field %q", field)
	}
	err := x.withTable(ctx, coll, func(t string) error {
		if err := x.indexIDs(ctx, t); err != nil {
			return err
		}
		for _, d := range lookupDefs(field, fold) {
			if err := x.createIndex(ctx, t, indexName(t, d[1], d[0]), d[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errUnanswerable) {
		return nil
	}
	return err
}

// Candidates returns the _id of every document of collection coll whose
// top-level field may equal value (ignoring case when fold: value must
// then be a key from FoldKey), in the table's physical order (the order
// FerretDB reads it in); a superset, which the caller checks through
// FerretDB. ok is false when it cannot answer: no table or index, more
// than limit candidates (0: no limit), or an _id neither an ObjectId nor
// a string.
func (x *Index) Candidates(ctx context.Context, coll, field string, fold bool, value string, limit int) (ids []any, ok bool, err error) {
	if x == nil || !validField(field) || field == "_id" {
		return nil, false, nil
	}
	err = x.withTable(ctx, coll, func(t string) error {
		// Without our indexes PostgreSQL would still answer, by reading
		// the table: correct, but the cost this exists to avoid.
		for _, d := range lookupDefs(field, fold) {
			if !x.hasIndex(ctx, indexName(t, d[1], d[0])) {
				return errUnanswerable
			}
		}
		sqlq, arg := candidatesSQL(x.qualified(t), field, fold, value)
		if limit > 0 {
			sqlq += fmt.Sprintf(` LIMIT %d`, limit+1)
		}
		ids, err = x.ids(ctx, sqlq, arg)
		return err
	})
	if errors.Is(err, errUnanswerable) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if limit > 0 && len(ids) > limit {
		return nil, false, nil
	}
	return ids, true, nil
}

func candidatesSQL(table, field string, fold bool, value string) (string, any) {
	sel := `SELECT _jsonb->>'_id', ` + schemaTypeExpr("_id") + ` FROM ` + table
	if !fold {
		// A JSON string: containment matches the string itself and an
		// array holding it, as FerretDB's own pushdown does.
		b, _ := json.Marshal(value)
		return sel + ` WHERE _jsonb->'` + field + `' @> $1::jsonb ORDER BY ctid`, string(b)
	}
	return sel + ` WHERE ` + foldExpr(field) + ` = $1 OR ` + schemaTypeExpr(field) + ` = 'array' ORDER BY ctid`, value
}
