package embeddedmongo

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestGroupsReadKeptCounts: once KeepGroupCounts has run, Groups answers
// from the kept counts (not a GROUP BY), largest first, ties by value,
// null and missing as "", and follows later writes.
func TestGroupsReadKeptCounts(t *testing.T) {
	ctx := context.Background()
	srv, mdb := startStore(t)
	coll := mdb.Collection("subs")
	doc := func(svc any, state string) bson.D {
		return bson.D{{Key: "svc", Value: svc}, {Key: "state", Value: state}}
	}
	if _, err := coll.InsertMany(ctx, []any{doc("a", "on"), doc("a", "on"), doc("b", "on"), doc("a", "off"), doc(nil, "on"), bson.D{{Key: "state", Value: "on"}}}); err != nil {
		t.Fatal(err)
	}
	l := srv.Lookup("db")
	defer l.Close()
	kinds := []Field{{Name: "svc", Kind: KindString}, {Name: "state", Kind: KindString}}
	fields := []string{"svc", "state"}
	if err := l.IndexFields(ctx, "subs", kinds, nil, [][]string{fields}); err != nil {
		t.Fatal(err)
	}
	if err := l.KeepGroupCounts(ctx, "subs", fields); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, doc("b", "on")); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, doc("a", "off"), bson.D{{Key: "$set", Value: bson.D{{Key: "svc", Value: "c"}}}}); err != nil {
		t.Fatal(err)
	}
	want := []Group{{Values: []string{"", "on"}, Count: 2}, {Values: []string{"a", "on"}, Count: 2}, {Values: []string{"b", "on"}, Count: 2}, {Values: []string{"c", "off"}, Count: 1}}
	db, err := l.conn()
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.table(ctx, db, "subs", false)
	if err != nil {
		t.Fatal(err)
	}
	kept, ok, err := l.keptGroups(ctx, db, tbl, fields, 10)
	if err != nil || !ok {
		t.Fatalf("kept counts not read: %v %v", ok, err)
	}
	if !reflect.DeepEqual(kept, want) {
		t.Errorf("kept groups %+v, want %+v", kept, want)
	}
	got, err := l.Groups(ctx, "subs", kinds, fields, 3)
	if err != nil || !reflect.DeepEqual(got, want[:3]) {
		t.Errorf("Groups %+v %v, want %+v", got, err, want[:3])
	}
}

// TestIndexFieldsDropsStaleIndexes: composites and odd-document indexes
// of ours that the fields given no longer name (an earlier version's)
// are dropped at the next IndexFields; the others stay.
func TestIndexFieldsDropsStaleIndexes(t *testing.T) {
	ctx := context.Background()
	srv, mdb := startStore(t)
	if _, err := mdb.Collection("subs").InsertOne(ctx, bson.D{{Key: "svc", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	l := srv.Lookup("db")
	defer l.Close()
	db, err := l.conn()
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.table(ctx, db, "subs", false)
	if err != nil {
		t.Fatal(err)
	}
	ours := func() []string {
		rows, err := db.QueryContext(ctx, `SELECT substr(name, length(?) + 1) FROM sqlite_master WHERE type = 'index' AND name GLOB ? ORDER BY 1`, tbl, tbl+"_govkit_*")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(n, "_govkit_odd_") {
				out = append(out, n)
			} else {
				out = append(out, "_govkit_odd")
			}
		}
		return out
	}
	s, st := Field{Name: "svc", Kind: KindString}, Field{Name: "state", Kind: KindString}
	if err := l.IndexFields(ctx, "subs", []Field{s, st}, []string{"svc"}, [][]string{{"svc", "state"}, {"state", "svc"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := ours(), []string{"_govkit_c_state_svc", "_govkit_c_svc_state", "_govkit_eq_svc", "_govkit_odd"}; !slices.Equal(got, want) {
		t.Fatalf("indexes %v, want %v", got, want)
	}
	old := oddName(tbl, []Field{s, st})
	if err := l.IndexFields(ctx, "subs", []Field{s}, []string{"svc"}, [][]string{{"svc", "state"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := ours(), []string{"_govkit_c_svc_state", "_govkit_eq_svc", "_govkit_odd"}; !slices.Equal(got, want) {
		t.Errorf("indexes %v, want %v", got, want)
	}
	if l.hasIndex(ctx, db, tbl, old) {
		t.Error("the old odd-document index is still there")
	}
}
