package mongostore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// userNow is the "now" of the user's lists below.
var userNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// userVisible is the filter the API's user list adds (httpapi's visible):
// in-app, broadcast or addressed to me, valid now, not deleted by me (a
// broadcast) nor in state deleted.
func userVisible(me string) bson.D {
	or := func(branches ...bson.D) bson.D {
		a := bson.A{}
		for _, b := range branches {
			a = append(a, b)
		}
		return bson.D{{Key: "$or", Value: a}}
	}
	return bson.D{{Key: "$and", Value: bson.A{
		bson.D{{Key: "channel", Value: notify.ChannelInApp}, or(
			bson.D{{Key: "isBroadcast", Value: true}},
			bson.D{{Key: "userChannelId", Value: me}},
			bson.D{{Key: "userId", Value: me}})[0]},
		or(bson.D{{Key: "validTill", Value: nil}}, bson.D{{Key: "validTill", Value: bson.D{{Key: "$gte", Value: userNow}}}}),
		or(bson.D{{Key: "invalidBefore", Value: nil}}, bson.D{{Key: "invalidBefore", Value: bson.D{{Key: "$lte", Value: userNow}}}}),
		or(bson.D{{Key: "isBroadcast", Value: bson.D{{Key: "$ne", Value: true}}}}, bson.D{{Key: "deletedBy", Value: bson.D{{Key: "$ne", Value: me}}}}),
		bson.D{{Key: "state", Value: bson.D{{Key: "$ne", Value: notify.StateDeleted}}}},
	}}}
}

// userNotifications are n stored notifications with every shape of the
// fields the user's list reads: broadcast or not (or missing), addressed
// to u1 by userChannelId or userId or to others, in-app or email,
// validTill and invalidBefore missing, null, past or future, deletedBy
// missing, null, empty, holding u1 or not, or u1 alone as a string.
func userNotifications(n int, seed uint64) []any {
	r := rand.New(rand.NewPCG(seed, 1))
	pick := func(vs ...any) any { return vs[r.IntN(len(vs))] }
	const missing = "<missing>"
	past, future := userNow.Add(-48*time.Hour), userNow.Add(48*time.Hour)
	docs := make([]any, 0, n)
	for i := range n {
		d := bson.D{{Key: "_id", Value: bson.NewObjectID()},
			{Key: "serviceName", Value: fmt.Sprintf("svc%d", i%3)},
			// distinct, in another order than the natural one: FerretDB
			// leaves the order of ties unspecified
			{Key: "created", Value: userNow.Add(-time.Duration((i*7919)%n) * time.Hour)},
			{Key: "updated", Value: userNow.Add(-time.Duration((i*104729)%n) * time.Second)},
		}
		for _, f := range []struct {
			name string
			v    any
		}{
			{"channel", pick(notify.ChannelInApp, notify.ChannelInApp, notify.ChannelInApp, notify.ChannelEmail)},
			{"isBroadcast", pick(true, true, false, missing)},
			{"userChannelId", pick("u1", "u2", "u3", "u1@example.org", missing)},
			{"userId", pick("u1", "u2", "u3", missing, nil)},
			{"validTill", pick(missing, nil, past, future, future)},
			{"invalidBefore", pick(missing, nil, past, past, future)},
			{"deletedBy", pick(missing, nil, bson.A{}, bson.A{"u2"}, bson.A{"u2", "u1"}, bson.A{"u1"}, "u1", "u2")},
			{"state", pick(notify.StateNew, "read", notify.StateDeleted, missing)},
		} {
			if f.v != missing {
				d = append(d, bson.E{Key: f.name, Value: f.v})
			}
		}
		docs = append(docs, d)
	}
	return docs
}

// userQueries are the user's list with the wheres, sorts and pages a
// client sends.
func userQueries(me string) []mongostore.Query {
	and := func(where bson.D) bson.D {
		return bson.D{{Key: "$and", Value: bson.A{where, userVisible(me)}}}
	}
	return []mongostore.Query{
		{Filter: userVisible(me)},
		{Filter: userVisible(me), Sort: bson.D{{Key: "created", Value: -1}}, Limit: 10},
		{Filter: userVisible(me), Sort: bson.D{{Key: "created", Value: 1}}, Skip: 5, Limit: 7},
		{Filter: userVisible(me), Sort: bson.D{{Key: "updated", Value: -1}, {Key: "serviceName", Value: 1}}, Skip: 3, Limit: 20},
		{Filter: and(bson.D{{Key: "serviceName", Value: "svc1"}}), Sort: bson.D{{Key: "created", Value: -1}}, Limit: 10},
		{Filter: and(bson.D{{Key: "state", Value: bson.D{{Key: "$in", Value: bson.A{"new", "read"}}}}}), Skip: 2, Limit: 50},
		{Filter: and(bson.D{{Key: "isBroadcast", Value: false}})},
		{Filter: and(bson.D{{Key: "created", Value: bson.D{{Key: "$gte", Value: userNow.Add(-5 * time.Hour)}}}}), Sort: bson.D{{Key: "created", Value: 1}}},
		{Filter: and(bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "serviceName", Value: "svc0"}}, bson.D{{Key: "state", Value: "read"}}}}})},
	}
}

// TestUserListFromTheIndex: over a notification collection larger than
// the scan limit, a signed-in user's own notification list and count (an
// $and of $ors, deletedBy an array) are answered from the field index
// exactly as FerretDB answers them (the same records in the same order,
// the same counts); a document with a value of another type in one of
// the fields (a deletedBy holding an ObjectId, a validTill string) sends
// them back to FerretDB; a condition on a field without an index of its
// own (validTill) alone is refused under the scan limit as before.
func TestUserListFromTheIndex(t *testing.T) {
	ctx := context.Background()
	s := indexedStore(t)
	raw := rawSubscriptions(t, s.Database()).Database().Collection(notify.CollNotification)
	// Many email notifications to others, as a deployment holds them, and
	// the user's.
	var docs []any
	for i := range 1500 {
		docs = append(docs, bson.D{{Key: "channel", Value: notify.ChannelEmail}, {Key: "serviceName", Value: "svc"},
			{Key: "userChannelId", Value: fmt.Sprintf("p%d@example.org", i)}, {Key: "state", Value: "sent"},
			{Key: "isBroadcast", Value: false}, {Key: "created", Value: userNow.Add(-time.Duration(i) * time.Minute)}})
	}
	docs = append(docs, userNotifications(400, 1)...)
	if _, err := raw.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	limited := mongostore.WithScanLimit(ctx, 1000)
	scan := plainStore(t, s.Database())
	type answer struct {
		ids []string
		n   int64
	}
	read := func(t *testing.T, s *mongostore.Store, ctx context.Context, q mongostore.Query) answer {
		t.Helper()
		got, err := s.Notifications().Find(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.Notifications().Count(ctx, q.Filter)
		if err != nil {
			t.Fatal(err)
		}
		return answer{notificationIDs(got), n}
	}
	users := []string{"u1", "u2", "nobody"}
	want := map[string][]answer{}
	for _, me := range users {
		for i, q := range userQueries(me) {
			w := read(t, scan, ctx, q)
			if me == "u1" && len(w.ids) == 0 {
				t.Fatalf("query %d selects nothing for u1: the test shows nothing", i)
			}
			want[me] = append(want[me], w)
		}
	}
	check := func(t *testing.T, ctx context.Context, users []string, queries int) (answered int64) {
		before := mongostore.IndexAnswered()
		for _, me := range users {
			for i, q := range userQueries(me)[:queries] {
				if got := read(t, s, ctx, q); !slices.Equal(got.ids, want[me][i].ids) || got.n != want[me][i].n {
					t.Errorf("%s query %d:\n got %v (%d)\nwant %v (%d)", me, i, got.ids, got.n, want[me][i].ids, want[me][i].n)
				}
			}
		}
		return mongostore.IndexAnswered() - before
	}
	if got, want := check(t, limited, users, len(userQueries(""))), int64(2*len(users)*len(userQueries(""))); got != want {
		t.Errorf("the field index answered %d of %d reads", got, want)
	}
	_, err := s.Notifications().Count(limited, bson.D{{Key: "validTill", Value: bson.D{{Key: "$gte", Value: userNow}}}})
	var unindexed *mongostore.UnindexedError
	if !errors.As(err, &unindexed) {
		t.Errorf("a count on validTill alone: %v, want an UnindexedError", err)
	} else if slices.Contains(unindexed.Fast, "validTill") || !slices.Contains(unindexed.Fast, "userId") {
		t.Errorf("fast fields: %v", unindexed.Fast)
	}

	// Odd documents (in no one's list, so the answers stay the same): the
	// index must not answer while one is there, as SQLite would not
	// compare their values as MongoDB does.
	for _, odd := range []bson.D{
		{{Key: "channel", Value: notify.ChannelEmail}, {Key: "deletedBy", Value: bson.A{"u2", bson.NewObjectID()}}},
		{{Key: "channel", Value: notify.ChannelEmail}, {Key: "deletedBy", Value: bson.A{"u1", nil}}},
		{{Key: "channel", Value: notify.ChannelEmail}, {Key: "deletedBy", Value: int32(3)}},
		{{Key: "channel", Value: notify.ChannelEmail}, {Key: "validTill", Value: "2030-01-01"}},
		{{Key: "channel", Value: notify.ChannelEmail}, {Key: "userId", Value: bson.A{"u1"}}},
	} {
		res, err := raw.InsertOne(ctx, odd)
		if err != nil {
			t.Fatal(err)
		}
		// (over the scan limit, FerretDB's scan would be refused)
		if n := check(t, ctx, users[:1], 3); n != 0 {
			t.Errorf("with %v the field index answered %d reads", odd, n)
		}
		if _, err := raw.DeleteOne(ctx, bson.D{{Key: "_id", Value: res.InsertedID}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := check(t, limited, users[:1], 3); n == 0 {
		t.Error("the field index answers no more once the odd documents are gone")
	}
}

func notificationIDs(ns []*notify.Notification) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID.Hex()
	}
	return out
}
