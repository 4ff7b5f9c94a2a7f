package mongostore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// TestIndexListsAnswerAsTheScan: lists the field index answers — long
// ones without a limit (more than the 1,000 records that once were its
// most), pages, sorts, and projections applied by the store — hold the
// records FerretDB's own scan returns, in its order, field for field,
// under a scan limit that would refuse the scan.
func TestIndexListsAnswerAsTheScan(t *testing.T) {
	ctx := context.Background()
	fast := indexedStore(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var docs []any
	for i := range 1500 {
		d := bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "serviceName", Value: fmt.Sprintf("svc%d", i%3)},
			{Key: "channel", Value: []string{"email", "sms"}[i%2]}, {Key: "state", Value: []string{"confirmed", "unconfirmed", "deleted"}[i%7%3]},
			{Key: "userChannelId", Value: fmt.Sprintf("u%d@example.org", i)},
			{Key: "created", Value: t0.Add(time.Duration(i*7919%1500) * time.Minute)}, {Key: "updated", Value: t0.Add(time.Duration(i*13%1500) * time.Hour)},
			{Key: "confirmationRequest", Value: bson.D{{Key: "sendRequest", Value: i%2 == 0}, {Key: "textBody", Value: "ünïcödé {confirmation_code}"}}},
			{Key: "data", Value: bson.D{{Key: "city", Value: fmt.Sprintf("c%d", i%5)}, {Key: "n", Value: int64(i) << 40}, {Key: "tags", Value: bson.A{"a", 1.5, nil}}}}}
		if i%11 == 0 {
			d = append(d, bson.E{Key: "unsubscriptionCode", Value: "12345"})
		}
		docs = append(docs, d)
	}
	if _, err := rawSubscriptions(t, fast.Database()).InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := fast.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	scan := plainStore(t, fast.Database())
	limited := mongostore.WithScanLimit(ctx, 100)
	svc := bson.D{{Key: "serviceName", Value: bson.D{{Key: "$in", Value: bson.A{"svc0", "svc1"}}}}}
	for _, q := range []mongostore.Query{
		{Filter: svc},
		{Filter: svc, Sort: bson.D{{Key: "created", Value: -1}}},
		{Filter: bson.D{{Key: "state", Value: bson.D{{Key: "$ne", Value: "deleted"}}}}, Sort: bson.D{{Key: "updated", Value: 1}}, Skip: 30},
		{Filter: svc, Sort: bson.D{{Key: "created", Value: 1}}, Skip: 10, Limit: 25},
		{Filter: svc, Limit: 5000},
		{Filter: svc, Sort: bson.D{{Key: "created", Value: -1}}, Projection: bson.D{{Key: "serviceName", Value: 1}, {Key: "state", Value: 1}}},
		{Filter: svc, Projection: bson.D{{Key: "state", Value: true}, {Key: "id", Value: false}}},
		{Filter: svc, Projection: bson.D{{Key: "userChannelId", Value: 0}, {Key: "data", Value: 0}}},
		{Filter: svc, Projection: bson.D{{Key: "id", Value: 0}}},
		{Filter: svc, Projection: bson.D{{Key: "id", Value: 1}}},
		{Filter: svc, Projection: bson.D{{Key: "missing", Value: 1}}},
		{Filter: bson.D{{Key: "serviceName", Value: "svc2"}}, Projection: bson.D{{Key: "data.city", Value: 1}}, Limit: 100},
	} {
		before := mongostore.IndexAnswered()
		got, err := fast.Subscriptions().Find(limited, q)
		if err != nil {
			t.Fatalf("%v: %v", q, err)
		}
		if mongostore.IndexAnswered() == before {
			t.Errorf("%v: not answered by the field index", q)
		}
		want, err := scan.Subscriptions().Find(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || !reflect.DeepEqual(fieldsOf(got), fieldsOf(want)) {
			t.Errorf("%v: %d records, the scan %d; first %v, the scan's %v", q, len(got), len(want), first(got), first(want))
		}
	}
	// Inclusion mixed with exclusion: the server's error, either way.
	q := mongostore.Query{Filter: svc, Projection: bson.D{{Key: "state", Value: 1}, {Key: "channel", Value: 0}}, Limit: 10}
	if _, err := fast.Subscriptions().Find(limited, q); err == nil {
		t.Error("a projection mixing inclusion and exclusion was answered")
	}
}

func first(recs []*notify.Subscription) notify.Fields {
	if len(recs) == 0 {
		return nil
	}
	return recs[0].Fields()
}

// TestIndexListOverItsBoundIsRefused: a list without a limit that would
// return more than mongostore.MaxIndexList records is refused under a
// scan limit with the 400 that says to page (the collection holding
// more than the scan limit, which FerretDB would otherwise read whole);
// a page of that size is answered.
func TestIndexListOverItsBoundIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts 10,001 documents")
	}
	ctx := context.Background()
	fast := indexedStore(t)
	var docs []any
	n := max(mongostore.MaxIndexList, mongostore.DefaultScanLimit) + 1
	for i := range n {
		docs = append(docs, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "serviceName", Value: "big"},
			{Key: "channel", Value: "email"}, {Key: "state", Value: "confirmed"}, {Key: "userChannelId", Value: fmt.Sprint(i)}})
	}
	if _, err := rawSubscriptions(t, fast.Database()).InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := fast.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	limited := mongostore.WithScanLimit(ctx, mongostore.DefaultScanLimit)
	filter := bson.D{{Key: "serviceName", Value: "big"}}
	_, err := fast.Subscriptions().Find(limited, mongostore.Query{Filter: filter})
	var ue *mongostore.UnindexedError
	if !errors.As(err, &ue) || ue.StatusCode() != 400 || ue.MaxList != mongostore.MaxIndexList {
		t.Fatalf("a list of %d records: %v", n, err)
	}
	got, err := fast.Subscriptions().Find(limited, mongostore.Query{Filter: filter, Skip: 1, Limit: mongostore.MaxIndexList})
	if err != nil || len(got) != mongostore.MaxIndexList {
		t.Fatalf("a page of %d: %d records, %v", mongostore.MaxIndexList, len(got), err)
	}
}
