package embeddedmongo

import (
	"context"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestGroupsReadKeptCounts: once KeepGroupCounts has run, Groups answers
// from the kept counts (not a GROUP BY), largest first, ties by value,
// null and missing as "", and follows later writes.
func TestGroupsReadKeptCounts(t *testing.T) {
	ctx := context.Background()
	srv, err := Start(ctx, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Stop(c)
	}()
	client, err := mongo.Connect(options.Client().ApplyURI(srv.URI()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	coll := client.Database("db").Collection("subs")
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
