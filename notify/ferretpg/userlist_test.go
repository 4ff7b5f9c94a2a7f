package ferretpg

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// TestUserListOnFerretDBAnswersAsFerretDB: a signed-in user's own
// notification list and count (the API's rule: in-app; broadcast or
// addressed to them; valid now; not deleted, nor a broadcast they
// deleted — $ors, deletedBy an array) with their where, order and page
// are answered from our PostgreSQL indexes, without a sequential scan,
// exactly as FerretDB answers them; a deletedBy holding an ObjectId
// sends them back to FerretDB.
func TestUserListOnFerretDBAnswersAsFerretDB(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 3,000 notifications")
	}
	mongoURI, pgURL := testsvc.RequireFerretDBOnPostgres(t)
	ctx := context.Background()
	open := func() *mongostore.Store { return openStore(t, mongoURI) }
	plain, st := open(), open()
	if _, err := st.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	client, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	raw := client.Database("notify").Collection(notify.CollNotification)

	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-48*time.Hour), now.Add(48*time.Hour)
	r := rand.New(rand.NewPCG(3, 1))
	pick := func(vs ...any) any { return vs[r.IntN(len(vs))] }
	const missing = "<missing>"
	var docs []any
	// other channels' notifications to others, as a deployment holds
	// them, then the shapes the rule tells apart
	for i := range 2500 {
		docs = append(docs, bson.D{{Key: "channel", Value: notify.ChannelEmail}, {Key: "serviceName", Value: "svc"},
			{Key: "userChannelId", Value: fmt.Sprintf("p%d@example.org", i)}, {Key: "state", Value: "sent"},
			{Key: "isBroadcast", Value: false}, {Key: "created", Value: now.Add(-time.Duration(i) * time.Minute)}})
	}
	const n = 500
	for i := range n {
		d := bson.D{{Key: "serviceName", Value: fmt.Sprintf("svc%d", i%3)},
			{Key: "created", Value: now.Add(-time.Duration((i*7919)%n) * time.Hour)}}
		for _, f := range []struct {
			name string
			v    any
		}{
			{"channel", pick(notify.ChannelInApp, notify.ChannelInApp, notify.ChannelEmail)},
			{"isBroadcast", pick(true, false, missing)},
			{"userChannelId", pick("u1", "u2", missing)},
			{"userId", pick("u1", "u2", missing, nil)},
			{"validTill", pick(missing, nil, past, future)},
			{"invalidBefore", pick(missing, nil, past, future)},
			{"deletedBy", pick(missing, nil, bson.A{}, bson.A{"u2"}, bson.A{"u2", "u1"}, "u1", "u2")},
			{"state", pick(notify.StateNew, "read", notify.StateDeleted, missing)},
		} {
			if f.v != missing {
				d = append(d, bson.E{Key: f.name, Value: f.v})
			}
		}
		docs = append(docs, d)
	}
	if _, err := raw.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	x, err := Open(ctx, pgURL, "notify")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Close() })
	rec := &recorder{ix: x}
	st.SetFieldIndex(rec)
	if err := st.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}

	visible := func(me string, where ...bson.E) bson.D {
		or := func(a, b bson.D) bson.D { return bson.D{{Key: "$or", Value: bson.A{a, b}}} }
		and := bson.A{
			bson.D{{Key: "channel", Value: notify.ChannelInApp}, {Key: "$or", Value: bson.A{
				bson.D{{Key: "isBroadcast", Value: true}}, bson.D{{Key: "userChannelId", Value: me}}, bson.D{{Key: "userId", Value: me}}}}},
			or(bson.D{{Key: "validTill", Value: nil}}, bson.D{{Key: "validTill", Value: bson.D{{Key: "$gte", Value: now}}}}),
			or(bson.D{{Key: "invalidBefore", Value: nil}}, bson.D{{Key: "invalidBefore", Value: bson.D{{Key: "$lte", Value: now}}}}),
			or(bson.D{{Key: "isBroadcast", Value: bson.D{{Key: "$ne", Value: true}}}}, bson.D{{Key: "deletedBy", Value: bson.D{{Key: "$ne", Value: me}}}}),
			bson.D{{Key: "state", Value: bson.D{{Key: "$ne", Value: notify.StateDeleted}}}},
		}
		if len(where) > 0 {
			and = append(and, bson.D(where))
		}
		return bson.D{{Key: "$and", Value: and}}
	}
	queries := func(me string) []mongostore.Query {
		return []mongostore.Query{
			{Filter: visible(me), Sort: bson.D{{Key: "created", Value: -1}}, Limit: 25},
			{Filter: visible(me), Sort: bson.D{{Key: "created", Value: 1}}, Skip: 10, Limit: 25},
			{Filter: visible(me, bson.E{Key: "serviceName", Value: "svc1"}), Sort: bson.D{{Key: "created", Value: -1}}, Limit: 25},
		}
	}
	ids := func(st *mongostore.Store, q mongostore.Query) ([]string, int64) {
		t.Helper()
		recs, err := st.Notifications().Find(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		n, err := st.Notifications().Count(ctx, q.Filter)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(recs))
		for i, rc := range recs {
			out[i] = rc.ID.Hex()
		}
		return out, n
	}
	check := func(t *testing.T) {
		for _, me := range []string{"u1", "u2", "nobody"} {
			for i, q := range queries(me) {
				got, gotN := ids(st, q)
				want, wantN := ids(plain, q)
				if !slices.Equal(got, want) || gotN != wantN {
					t.Errorf("%s query %d:\n got %v (%d)\nwant %v (%d)", me, i, got, gotN, want, wantN)
				}
				if me == "u1" && len(want) == 0 {
					t.Errorf("query %d selects nothing for u1: the test shows nothing", i)
				}
			}
		}
	}
	check(t)
	if len(rec.missed) > 0 {
		t.Errorf("left to FerretDB: %v", rec.missed)
	}
	rec.missed = nil
	if _, err := raw.InsertOne(ctx, bson.D{{Key: "channel", Value: notify.ChannelEmail}, {Key: "deletedBy", Value: bson.A{"u1", bson.NewObjectID()}}}); err != nil {
		t.Fatal(err)
	}
	check(t)
	if len(rec.missed) == 0 {
		t.Error("answered from the index with a deletedBy holding an ObjectId")
	}
}
