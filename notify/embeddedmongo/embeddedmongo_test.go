package embeddedmongo_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify/embeddedmongo"
)

func start(t testing.TB, cfg embeddedmongo.Config) *embeddedmongo.Server {
	t.Helper()
	srv, err := embeddedmongo.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return srv
}

func connect(t testing.TB, uri string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

func TestDataSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	dir := embeddedmongo.Dir(t.TempDir()) // created by Start
	srv, err := embeddedmongo.Start(ctx, embeddedmongo.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.URI(), "mongodb://127.0.0.1:") {
		t.Errorf("URI %s is not on loopback", srv.URI())
	}
	c := connect(t, srv.URI())
	if _, err := c.Database("notifyBC").Collection("subscription").InsertOne(ctx, bson.D{{Key: "serviceName", Value: "kept"}}); err != nil {
		t.Fatal(err)
	}
	_ = c.Disconnect(ctx)
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notifyBC.sqlite")); err != nil {
		t.Errorf("database file: %v", err)
	}

	srv2 := start(t, embeddedmongo.Config{Dir: dir})
	c2 := connect(t, srv2.URI())
	n, err := c2.Database("notifyBC").Collection("subscription").CountDocuments(ctx, bson.D{{Key: "serviceName", Value: "kept"}})
	if err != nil || n != 1 {
		t.Fatalf("after restart: %d documents, %v", n, err)
	}
}

func TestInMemoryWhenNoDirectory(t *testing.T) {
	ctx := context.Background()
	srv := start(t, embeddedmongo.Config{})
	c := connect(t, srv.URI())
	coll := c.Database("db").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	var doc bson.M
	if err := coll.FindOne(ctx, bson.D{}).Decode(&doc); err != nil || doc["a"] != int32(1) {
		t.Fatalf("%v %v", doc, err)
	}
}

func TestTwoServersOnTheirOwnPorts(t *testing.T) {
	a := start(t, embeddedmongo.Config{Dir: t.TempDir()})
	b := start(t, embeddedmongo.Config{Dir: t.TempDir()})
	if a.URI() == b.URI() {
		t.Fatalf("both on %s", a.URI())
	}
}

func TestStartRefusesAnUnusableDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := embeddedmongo.Start(context.Background(), embeddedmongo.Config{Dir: file}); err == nil {
		t.Fatal("started on a file")
	}
}

func TestStartRefusesABusyAddress(t *testing.T) {
	a := start(t, embeddedmongo.Config{})
	addr := strings.TrimSuffix(strings.TrimPrefix(a.URI(), "mongodb://"), "/")
	if _, err := embeddedmongo.Start(context.Background(), embeddedmongo.Config{Addr: addr}); err == nil {
		t.Fatal("started twice on one port")
	}
}

// BenchmarkStart measures start-up: from Start to the first answered ping,
// on a fresh data directory.
func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		srv, err := embeddedmongo.Start(ctx, embeddedmongo.Config{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		c, err := mongo.Connect(options.Client().ApplyURI(srv.URI()))
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Database("notifyBC").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
			b.Fatal(err)
		}
		_ = c.Disconnect(ctx)
		if err := srv.Stop(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// After IndexIDs, SQLite answers FerretDB's _id lookups from an index
// instead of reading every row; the answers are the same.
func TestIndexIDsMakesIDLookupsIndexed(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, embeddedmongo.Config{Dir: dir})
	ctx := context.Background()
	coll := connect(t, srv.URI()).Database("idx").Collection("things")
	var docs []any
	for i := range 26 {
		docs = append(docs, bson.D{{Key: "_id", Value: "k" + string(rune('a'+i))}, {Key: "i", Value: i}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	plan := func() string {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "idx.sqlite"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var table string
		if err := db.QueryRow(`SELECT table_name FROM _ferretdb_collections WHERE name = 'things'`).Scan(&table); err != nil {
			t.Fatal(err)
		}
		var id, parent, unused int
		var detail string
		q := `EXPLAIN QUERY PLAN SELECT _ferretdb_sjson FROM "` + table + `" WHERE _ferretdb_sjson->'$._id' = ?`
		if err := db.QueryRow(q, `"ka"`).Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		return detail
	}
	if p := plan(); !strings.HasPrefix(p, "SCAN") {
		t.Fatalf("before: plan %q; FerretDB now indexes its own lookups, IndexIDs may go", p)
	}
	if err := srv.IndexIDs(ctx, "idx"); err != nil {
		t.Fatal(err)
	}
	if err := srv.IndexIDs(ctx, "idx"); err != nil {
		t.Fatalf("second call: %v", err)
	}
	if p := plan(); !strings.Contains(p, "USING INDEX") {
		t.Fatalf("after: plan %q", p)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "kb"}}).Decode(&got); err != nil || got["i"] != int32(1) {
		t.Fatalf("lookup = %v, %v", got, err)
	}
	if err := srv.IndexIDs(ctx, "no-such-db"); err != nil {
		t.Errorf("missing database: %v", err)
	}
}
