package embeddedmongo

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestLookupCandidates: the lookup finds, in natural order, the _ids
// (ObjectIds and strings) of documents whose field equals a value or
// holds an array, through our indexes only; it cannot answer for a
// collection it has not indexed, nor in memory.
func TestLookupCandidates(t *testing.T) {
	ctx := context.Background()
	srv, mdb := startStore(t)
	coll := mdb.Collection("things")
	oid := bson.NewObjectID()
	docs := []any{
		bson.D{{Key: "_id", Value: "s1"}, {Key: "owner", Value: "ann"}},
		bson.D{{Key: "_id", Value: oid}, {Key: "owner", Value: "ann"}},
		bson.D{{Key: "_id", Value: "s2"}, {Key: "owner", Value: "Ann"}},
		bson.D{{Key: "_id", Value: "s3"}, {Key: "owner", Value: bson.A{"x", "ann"}}},
		bson.D{{Key: "_id", Value: "s4"}, {Key: "owner", Value: "bob"}},
		bson.D{{Key: "_id", Value: "s5"}},
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	l := srv.Lookup("db")
	defer l.Close()
	if _, ok, err := l.Candidates(ctx, "things", "owner", false, "ann", 0); ok || err != nil {
		t.Fatalf("answered without its index: %v %v", ok, err)
	}
	for _, fold := range []bool{false, true} {
		if err := l.Index(ctx, "things", "owner", fold); err != nil {
			t.Fatal(err)
		}
	}
	ids, ok, err := l.Candidates(ctx, "things", "owner", false, "ann", 0)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got, want := fmt.Sprint(ids), fmt.Sprint([]any{"s1", oid, "s3"}); got != want {
		t.Errorf("exact: %s, want %s", got, want)
	}
	key, _ := l.FoldKey("ANN")
	ids, _, _ = l.Candidates(ctx, "things", "owner", true, key, 0)
	if got, want := fmt.Sprint(ids), fmt.Sprint([]any{"s1", oid, "s2", "s3"}); got != want {
		t.Errorf("folded: %s, want %s", got, want)
	}
	if _, ok := l.FoldKey("Jürgen"); ok {
		t.Error("a key with a non-ASCII letter SQLite cannot fold")
	}
	if k, ok := l.FoldKey("\u212aate\u017f"); !ok || k != "kates" {
		t.Errorf("FoldKey: %q %v", k, ok)
	}
	if _, ok, _ := l.Candidates(ctx, "things", "owner", false, "ann", 2); ok {
		t.Error("answered with more candidates than its limit")
	}
	if _, ok, _ := l.Candidates(ctx, "missing", "owner", false, "ann", 0); ok {
		t.Error("answered for a collection without a table")
	}
	mem, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Stop(ctx)
	if mem.Lookup("db") != nil {
		t.Error("a lookup in memory")
	}

	// The query SQLite runs reads our indexes, not the table.
	db, err := sql.Open("sqlite", l.sqlURL(true))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	table, err := l.table(ctx, db, "things", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, fold := range []bool{false, true} {
		q := fmt.Sprintf(`EXPLAIN QUERY PLAN SELECT _ferretdb_sjson->>'$._id' FROM %q WHERE %s = ? OR %s = 'array' ORDER BY rowid`, table, valueExpr("owner", fold), typeExpr("owner"))
		rows, err := db.QueryContext(ctx, q, "ann", 0)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "; ")
		if strings.Contains(p, "SCAN "+table) || strings.Count(p, "USING INDEX") != 2 {
			t.Errorf("fold %v: plan %s", fold, p)
		}
	}
}
