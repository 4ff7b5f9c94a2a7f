package embeddedmongo_test

import (
	"context"
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
