package ferretpg

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/embeddedmongo"
	"github.com/govkit/govkit/notify/embeddedmongo/sjsontest"
)

// found is one document FindDocs gave.
type found struct {
	id  any
	raw bson.Raw
}

func findDocs(t *testing.T, x *Index, q embeddedmongo.Query) []found {
	t.Helper()
	var out []found
	err := x.FindDocs(context.Background(), q, func(id any, raw bson.Raw) error {
		out = append(out, found{id, bytes.Clone(raw)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFindDocsIsWhatFerretDBSends: documents of every type FerretDB
// stores (embeddedmongo's fixed cases and 3,000 random ones, nested
// objects and arrays included), written through FerretDB into
// PostgreSQL, where jsonb reorders their keys and rewrites their
// numbers, are read back by FindDocs as exactly the bytes FerretDB sends
// for each (FindOne by _id), in the page's order; pages of a skip and a
// limit are slices of the whole; a stored document the decoder does not
// know comes back as its _id alone, for the caller to read through
// FerretDB.
func TestFindDocsIsWhatFerretDBSends(t *testing.T) {
	mongoURI, pgURL := testsvc.RequireFerretDBOnPostgres(t)
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	coll := client.Database("sjson").Collection("docs")
	docs := sjsontest.FixedDocs()
	rng := rand.New(rand.NewPCG(17, 2026))
	for i := 0; i < 3000; i++ {
		docs = append(docs, sjsontest.RandomDoc(rng, i))
	}
	accepted := 0
	for _, d := range docs {
		if _, err := coll.InsertOne(ctx, d); err == nil {
			accepted++
		}
	}
	if accepted < len(docs)*9/10 {
		t.Fatalf("FerretDB accepted only %d of %d documents", accepted, len(docs))
	}
	x, err := Open(ctx, pgURL, "sjson")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Close() })
	// A field no document has: the query selects every document, in _id
	// order (as text).
	fields := []embeddedmongo.Field{{Name: "govkitNone", Kind: embeddedmongo.KindString}}
	if err := x.IndexFields(ctx, "docs", fields, []string{"govkitNone"}, nil); err != nil {
		t.Fatal(err)
	}
	q := embeddedmongo.Query{Coll: "docs", Fields: fields}
	all := findDocs(t, x, q)
	if len(all) != accepted {
		t.Fatalf("FindDocs gave %d documents, FerretDB accepted %d", len(all), accepted)
	}
	compared, unreadable := 0, 0
	for i, f := range all {
		if f.raw == nil {
			t.Fatalf("document %d (%v) was not decoded", i, f.id)
		}
		id := f.raw.Lookup("_id")
		want, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
		if err != nil {
			unreadable++ // FerretDB cannot read it back; the decoder did
			t.Errorf("document %v: FerretDB: %v; FindDocs: %v", id, err, f.raw)
			continue
		}
		if !bytes.Equal(f.raw, want) {
			t.Fatalf("document %v:\n got %v\nwant %v", id, f.raw, want)
		}
		compared++
	}
	t.Logf("%d documents compared byte for byte, %d that FerretDB cannot read back", compared, unreadable)
	tab, err := x.table(ctx, "docs", false)
	if err != nil {
		t.Fatal(err)
	}
	// the page's order: the _ids as text, byte-wise
	var order []string
	rows, err := x.pool.Query(ctx, `SELECT _jsonb->>'_id' FROM `+x.qualified(tab)+` ORDER BY (_jsonb->>'_id') COLLATE "C"`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		order = append(order, s)
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(order) != len(all) {
		t.Fatalf("%d rows, %d documents", len(order), len(all))
	}
	checked := 0
	for i, f := range all {
		if s, ok := idText(f.raw.Lookup("_id")); ok {
			if s != order[i] {
				t.Fatalf("document %d: _id %s, the page's order has %s", i, s, order[i])
			}
			checked++
		}
	}
	if checked < len(all)*9/10 {
		t.Fatalf("the order checked on %d documents of %d", checked, len(all))
	}
	for _, p := range []struct{ skip, limit int64 }{{0, 10}, {5, 100}, {int64(len(all)) - 3, 10}, {1000, 0}} {
		pq := q
		pq.Skip, pq.Limit = p.skip, p.limit
		page := findDocs(t, x, pq)
		end := int64(len(all))
		if p.limit > 0 {
			end = min(end, p.skip+p.limit)
		}
		want := all[p.skip:end]
		if len(page) != len(want) {
			t.Fatalf("skip %d limit %d: %d documents, want %d", p.skip, p.limit, len(page), len(want))
		}
		for i := range page {
			if !bytes.Equal(page[i].raw, want[i].raw) {
				t.Fatalf("skip %d limit %d: document %d differs from the whole list's", p.skip, p.limit, i)
			}
		}
	}
	// A stored document outside FerretDB's format (a schema member it
	// does not write) comes back as its _id alone.
	if _, err := x.pool.Exec(ctx, `UPDATE `+x.qualified(tab)+` SET _jsonb = jsonb_set(_jsonb, '{$s,x}', '1') WHERE _jsonb->>'_id' = 'misc'`); err != nil {
		t.Fatal(err)
	}
	var fallback []any
	for _, f := range findDocs(t, x, q) {
		if f.raw == nil {
			fallback = append(fallback, f.id)
		}
	}
	if len(fallback) != 1 || fallback[0] != "misc" {
		t.Fatalf("read by _id: %v, want [misc]", fallback)
	}
}

// idText is an _id as PostgreSQL's ->> gives it, for the types whose
// text this knows.
func idText(v bson.RawValue) (string, bool) {
	switch v.Type {
	case bson.TypeString:
		return v.StringValue(), true
	case bson.TypeObjectID:
		return v.ObjectID().Hex(), true
	case bson.TypeInt32:
		return strconv.Itoa(int(v.Int32())), true
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10), true
	}
	return "", false
}
