package ferretpg

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/embeddedmongo"
)

// FindDocs is [Index.Find] returning the documents themselves, with the
// contract of embeddedmongo.Lookup.FindDocs: each is called with every
// document of the page in q's order; when a document's stored text
// cannot be decoded, raw is nil and id its _id (the caller reads it
// through FerretDB). q.Limit 0 means every document q selects after
// q.Skip: the caller bounds how many (by [Index.Count]). On an error
// (ErrUnanswerable: ask FerretDB) the documents each was given are not
// the answer and must be dropped.
//
// The page and its documents come from one statement, so from one
// snapshot: a document deleted before it is not in the page, and none is
// read twice or missed by an update moving its row. The stored jsonb is
// turned into text only for the page's rows (not for the rows the
// offset skips), and decoded by embeddedmongo.DecodeStored, which orders
// fields by the stored "$k" lists and parses numbers by their schema
// type: jsonb sorts object keys and writes numbers without exponents.
// Rows are decoded as they arrive; memory held here is one row.
func (x *Index) FindDocs(ctx context.Context, q embeddedmongo.Query, each func(id any, raw bson.Raw) error) error {
	if q.Limit < 0 {
		return errUnanswerable
	}
	emitted := false
	err := x.withTable(ctx, q.Coll, func(t string) error {
		sqlq, args, err := x.docsSQL(ctx, t, q)
		if err != nil {
			return err
		}
		if err := x.checkPlan(ctx, t, q, sqlq, args); err != nil {
			return err
		}
		rows, err := x.pool.Query(ctx, sqlq, args...)
		if err != nil {
			return fmt.Errorf("ferretpg: find: %w", err)
		}
		defer rows.Close()
		var id, typ *string
		var text []byte
		for rows.Next() {
			if err := rows.Scan(&id, &typ, &text); err != nil {
				return fmt.Errorf("ferretpg: find: %w", err)
			}
			raw, derr := embeddedmongo.DecodeStored(nil, text)
			var docID any
			if derr != nil {
				var ok bool
				if docID, ok = idValue(id, typ); !ok {
					return errUnanswerable
				}
				raw = nil
			}
			emitted = true
			if err := each(docID, raw); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			if emitted && isUndefinedTable(err) {
				// not to be retried by withTable: each has had some
				// (%v: withTable retries an error that wraps it)
				return fmt.Errorf("ferretpg: find: the collection was dropped during the read: %v", err)
			}
			return fmt.Errorf("ferretpg: find: %w", err)
		}
		return nil
	})
	return err
}

// docsSQL is the statement FindDocs runs (tests explain it): the page
// query with the stored jsonb passed through, made text above its LIMIT
// (a subquery with a LIMIT keeps its order and is not merged into the
// outer query).
func (x *Index) docsSQL(ctx context.Context, t string, q embeddedmongo.Query) (string, []any, error) {
	pageq, args, err := x.pageSQL(ctx, t, q, `_jsonb->>'_id' AS id, `+schemaTypeExpr("_id")+` AS typ, _jsonb`)
	if err != nil {
		return "", nil, err
	}
	return `SELECT id, typ, _jsonb::text FROM (` + pageq + `) AS page`, args, nil
}

// idValue is an _id read as text with its type: ObjectIds as
// bson.ObjectID, strings as string; false for any other.
func idValue(id, typ *string) (any, bool) {
	if id == nil || typ == nil {
		return nil, false
	}
	switch *typ {
	case "objectId":
		oid, err := bson.ObjectIDFromHex(*id)
		if err != nil {
			return nil, false
		}
		return oid, true
	case "string":
		return *id, true
	}
	return nil, false
}
