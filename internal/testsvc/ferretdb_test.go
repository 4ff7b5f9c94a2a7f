package testsvc_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/internal/testsvc"
)

// Two clients (as two processes would) see each other's writes through
// the FerretDB a test gets, and another test's FerretDB is another store.
func TestRequireFerretDBIsAStoreOfItsOwn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	uri := testsvc.RequireFerretDB(t)
	connect := func(uri string) *mongo.Collection {
		c, err := mongo.Connect(options.Client().ApplyURI(uri))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
		return c.Database("notify").Collection("things")
	}
	a, b := connect(uri), connect(uri)
	if _, err := a.InsertOne(ctx, bson.D{{Key: "_id", Value: "x"}, {Key: "n", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	var got bson.M
	if err := b.FindOne(ctx, bson.D{{Key: "_id", Value: "x"}}).Decode(&got); err != nil || got["n"] != int32(1) {
		t.Fatalf("second client: %v, %v", got, err)
	}
	other := connect(testsvc.RequireFerretDB(t))
	if n, err := other.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Fatalf("another test's store has %d documents, %v", n, err)
	}
}
