package mongostore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// TestKeptSubscriptionGroupsStayExact: on the embedded store the
// console's subscription groups are read from counts that triggers keep;
// after every kind of write — through the store and straight through the
// driver, concurrent ones, documents without the fields or with null —
// they must equal FerretDB's own $group over the documents, and they
// must stay right when the collection is dropped and made again (the
// triggers go with the old table) and after the next start's recount.
func TestKeptSubscriptionGroupsStayExact(t *testing.T) {
	ctx := context.Background()
	s := indexedStore(t)
	plain := plainStore(t, s.Database())
	raw := rawSubscriptions(t, s.Database())
	rng := rand.New(rand.NewPCG(7, 11))
	services := []string{"a", "b", "c"}
	states := []string{notify.StateConfirmed, notify.StateUnconfirmed, notify.StateDeleted}
	channels := []string{notify.ChannelEmail, notify.ChannelSMS}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }

	same := func(step string) {
		t.Helper()
		got, more, err := s.SubscriptionGroups(ctx, 1000)
		if err != nil || more {
			t.Fatalf("%s: kept groups: %v %v", step, more, err)
		}
		want, _, err := plain.SubscriptionGroups(ctx, 1000)
		if err != nil {
			t.Fatalf("%s: $group: %v", step, err)
		}
		// Missing and null are one group here, as the console shows
		// both as empty (and the GROUP BY over the index counts them
		// so); FerretDB's $group keeps them apart, so its are summed.
		keys := func(gs []mongostore.SubscriptionGroup) []string {
			sum := map[string]int64{}
			for _, g := range gs {
				sum[g.ServiceName+"|"+g.State+"|"+g.Channel] += g.Count
			}
			var out []string
			for k, n := range sum {
				out = append(out, fmt.Sprint(k, "|", n))
			}
			slices.Sort(out)
			return out
		}
		gk, wk := keys(got), keys(want)
		if !slices.Equal(gk, wk) {
			t.Fatalf("%s: kept groups\n%v\nwant ($group)\n%v", step, gk, wk)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Count > got[i-1].Count {
				t.Fatalf("%s: groups not largest first: %+v", step, got)
			}
		}
	}
	same("empty")

	var ids []string
	for range 60 {
		sub := notify.Subscription{ServiceName: pick(services), Channel: pick(channels), State: pick(states), UserChannelID: fmt.Sprint(rng.IntN(1e6), "@x")}
		if err := s.Subscriptions().Insert(ctx, &sub); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.ID.String())
	}
	same("inserts")
	many := make([]*notify.Subscription, 40)
	for i := range many {
		many[i] = &notify.Subscription{ServiceName: pick(services), Channel: pick(channels), State: pick(states), UserChannelID: "m@x"}
	}
	if err := s.Subscriptions().InsertMany(ctx, many); err != nil {
		t.Fatal(err)
	}
	same("insert many")
	if _, err := raw.InsertMany(ctx, []any{
		bson.D{{Key: "channel", Value: "email"}, {Key: "state", Value: "confirmed"}},
		bson.D{{Key: "serviceName", Value: nil}, {Key: "channel", Value: "email"}, {Key: "state", Value: "confirmed"}},
		bson.D{{Key: "serviceName", Value: ""}, {Key: "channel", Value: "email"}, {Key: "state", Value: "confirmed"}},
		bson.D{{Key: "serviceName", Value: "é\"'\\ x"}},
	}); err != nil {
		t.Fatal(err)
	}
	same("missing, null, empty and odd characters")
	for _, id := range ids[:20] {
		if err := s.Subscriptions().UpdateByID(ctx, id, bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: pick(states)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Subscriptions().UpdateByID(ctx, ids[20], bson.D{{Key: "$set", Value: bson.D{{Key: "data", Value: bson.D{{Key: "x", Value: 1}}}}}}); err != nil {
		t.Fatal(err)
	}
	same("updates")
	if _, err := s.Subscriptions().UpdateMany(ctx, bson.D{{Key: "serviceName", Value: "a"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "serviceName", Value: "b"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.UpdateMany(ctx, bson.D{{Key: "serviceName", Value: "c"}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "channel", Value: ""}}}}); err != nil {
		t.Fatal(err)
	}
	same("update many, unset")
	for _, id := range ids[30:40] {
		if err := s.Subscriptions().DeleteByID(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Subscriptions().DeleteMany(ctx, bson.D{{Key: "userChannelId", Value: "m@x"}, {Key: "state", Value: notify.StateDeleted}}); err != nil {
		t.Fatal(err)
	}
	same("deletes")

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for i := range 25 {
				sub := notify.Subscription{ServiceName: services[r.IntN(3)], Channel: channels[r.IntN(2)], State: states[r.IntN(3)], UserChannelID: fmt.Sprint(w, i)}
				if err := s.Subscriptions().Insert(ctx, &sub); err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					if err := s.Subscriptions().UpdateByID(ctx, sub.ID.String(), bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: states[r.IntN(3)]}}}}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	same("concurrent writers")

	if err := s.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	same("the next start's recount")

	if err := raw.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	sub := notify.Subscription{ServiceName: "z", Channel: "email", State: "confirmed", UserChannelID: "z@x"}
	if err := s.Subscriptions().Insert(ctx, &sub); err != nil {
		t.Fatal(err)
	}
	same("collection dropped and made again")
	if err := s.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Subscriptions().Insert(ctx, &notify.Subscription{ServiceName: "z", Channel: "sms", State: "confirmed", UserChannelID: "1"}); err != nil {
		t.Fatal(err)
	}
	same("kept again after the next start")
}
