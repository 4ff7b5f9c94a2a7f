package mongostore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

func subIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("sub%05d", i)
	}
	return ids
}

func TestConcurrentDispatchBatchesRecordEachSubscriberOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		if _, err := s.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
		nid := notify.NewID()
		ids := subIDs(600)
		// Eight workers write overlapping batches, as retried chunks of a
		// broadcast do, each claiming another outcome for the same
		// subscribers. Every subscriber must end up recorded exactly once.
		outcomes := []notify.DispatchOutcome{notify.DispatchSuccessful, notify.DispatchFailed, notify.DispatchSkipped}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var recorded int64
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				start := (w % 4) * 100
				batch := make([]notify.DispatchResult, 0, 300)
				for _, id := range ids[start : start+300] {
					batch = append(batch, notify.DispatchResult{SubscriptionID: id, UserChannelID: id + "@x", Outcome: outcomes[w%3], Error: "e"})
				}
				n, err := s.RecordDispatch(ctx, nid, batch)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				recorded += n
				mu.Unlock()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if recorded != 600 {
			t.Errorf("writers recorded %d outcomes in all, want 600 (one per subscriber)", recorded)
		}
		rows, err := s.ListDispatch(ctx, nid, mongostore.DispatchQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 600 {
			t.Fatalf("%d rows, want 600", len(rows))
		}
		for i, r := range rows {
			if r.SubscriptionID != ids[i] {
				t.Fatalf("row %d is %s, want %s (in order, once each)", i, r.SubscriptionID, ids[i])
			}
		}
		counts, err := s.DispatchCounts(ctx, nid)
		if err != nil {
			t.Fatal(err)
		}
		if counts.Successful+counts.Failed+counts.Skipped != 600 {
			t.Errorf("counts %+v", counts)
		}
		// A retry changes nothing.
		again := []notify.DispatchResult{{SubscriptionID: ids[0], Outcome: notify.DispatchFailed}}
		if n, err := s.RecordDispatch(ctx, nid, again); err != nil || n != 0 {
			t.Errorf("retry recorded %d, %v", n, err)
		}
	})
}

func TestDispatchCandidatesThenResults(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		if _, err := s.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
		nid := notify.NewID()
		ids := subIDs(2500) // more than one write batch
		added, err := s.AddDispatchCandidates(ctx, nid, ids)
		if err != nil || added != 2500 {
			t.Fatalf("added %d, %v", added, err)
		}
		if added, err := s.AddDispatchCandidates(ctx, nid, ids[:10]); err != nil || added != 0 {
			t.Fatalf("re-adding candidates added %d, %v", added, err)
		}
		results := []notify.DispatchResult{
			{SubscriptionID: ids[0], Outcome: notify.DispatchSuccessful},
			{SubscriptionID: ids[1], UserChannelID: "b@x", Outcome: notify.DispatchFailed, Error: notify.NewFields("responseCode", int32(550), "message", "no such user")},
			{SubscriptionID: ids[2], Outcome: notify.DispatchSkipped},
			{SubscriptionID: ids[3], Outcome: notify.DispatchSuccessful},
		}
		n, err := s.RecordDispatch(ctx, nid, results)
		if err != nil || n != 4 {
			t.Fatalf("recorded %d, %v", n, err)
		}
		t.Run("outcomes of a batch, for a retrying worker", func(t *testing.T) {
			got, err := s.DispatchOutcomes(ctx, nid, []string{ids[0], ids[1], ids[2], ids[3], ids[4], "unknown"})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]notify.DispatchOutcome{ids[0]: notify.DispatchSuccessful, ids[1]: notify.DispatchFailed, ids[2]: notify.DispatchSkipped, ids[3]: notify.DispatchSuccessful}
			if len(got) != len(want) {
				t.Errorf("got %v", got)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: %s, want %s", k, got[k], v)
				}
			}
		})
		t.Run("pending pages through the rest in order", func(t *testing.T) {
			var all []string
			after := ""
			for {
				page, err := s.DispatchPending(ctx, nid, after, 1000)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				all = append(all, page...)
				after = page[len(page)-1]
			}
			if !slices.Equal(all, ids[4:]) {
				t.Errorf("%d pending, first %v", len(all), all[:min(3, len(all))])
			}
		})
		t.Run("counts", func(t *testing.T) {
			c, err := s.DispatchCounts(ctx, nid)
			if err != nil {
				t.Fatal(err)
			}
			want := notify.DispatchCounts{Candidates: 2500, Pending: 2496, Successful: 2, Failed: 1, Skipped: 1}
			if c != want {
				t.Errorf("got %+v, want %+v", c, want)
			}
		})
		t.Run("a candidate outcome is not a result", func(t *testing.T) {
			if _, err := s.RecordDispatch(ctx, nid, []notify.DispatchResult{{SubscriptionID: "x", Outcome: "candidate"}}); err == nil {
				t.Error("accepted")
			}
		})
		t.Run("the failure keeps its error document", func(t *testing.T) {
			rows, err := s.ListDispatch(ctx, nid, mongostore.DispatchQuery{Outcome: notify.DispatchFailed})
			if err != nil || len(rows) != 1 {
				t.Fatal(rows, err)
			}
			if toJSON(t, rows[0].Error) != `{"responseCode":550,"message":"no such user"}` || rows[0].UserChannelID != "b@x" {
				t.Errorf("%+v", rows[0])
			}
		})
		t.Run("deleted with the notification", func(t *testing.T) {
			n, err := s.DeleteDispatch(ctx, nid)
			if err != nil || n != 2504 {
				t.Errorf("deleted %d, %v", n, err)
			}
		})
	})
}

func TestDispatchArraysOfOlderDocumentsAreReadAndMerged(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		raw := rawDB(t, s)
		oid := bson.NewObjectID()
		// As the original writes a broadcast in progress.
		_, err := raw.Collection("notification").InsertOne(ctx, bson.D{
			{Key: "_id", Value: oid},
			{Key: "serviceName", Value: "s"},
			{Key: "channel", Value: "email"},
			{Key: "isBroadcast", Value: true},
			{Key: "state", Value: "sending"},
			{Key: "message", Value: bson.D{{Key: "subject", Value: "hi"}}},
			{Key: "dispatch", Value: bson.D{
				{Key: "candidates", Value: bson.A{"s1", "s2", "s3", "s4"}},
				{Key: "req", Value: bson.D{{Key: "protocol", Value: "http"}}},
				{Key: "successful", Value: bson.A{"s1"}},
				{Key: "failed", Value: bson.A{bson.D{{Key: "subscriptionId", Value: "s2"}, {Key: "userChannelId", Value: "b@x"}, {Key: "error", Value: bson.D{{Key: "responseCode", Value: int32(550)}}}}}},
			}},
			{Key: "__v", Value: int32(0)},
		})
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.Notifications().FindByID(ctx, oid.Hex())
		if err != nil {
			t.Fatal(err)
		}
		if n.Dispatch == nil || !slices.Equal(n.Dispatch.Candidates, []string{"s1", "s2", "s3", "s4"}) || len(n.Dispatch.Failed) != 1 || n.Dispatch.Failed[0].UserChannelID != "b@x" {
			t.Fatalf("dispatch read as %+v", n.Dispatch)
		}
		// The rest of the broadcast is recorded in the side collection, a
		// retry of s1 included.
		nid := notify.ID(oid)
		if _, err := s.RecordDispatch(ctx, nid, []notify.DispatchResult{
			{SubscriptionID: "s1", Outcome: notify.DispatchSuccessful},
			{SubscriptionID: "s3", Outcome: notify.DispatchSuccessful},
			{SubscriptionID: "s4", Outcome: notify.DispatchSkipped},
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.LoadDispatch(ctx, n); err != nil {
			t.Fatal(err)
		}
		out := toJSON(t, n)
		want := `"dispatch":{"candidates":["s1","s2","s3","s4"],"successful":["s1","s3"],"failed":[{"subscriptionId":"s2","userChannelId":"b@x","error":{"responseCode":550}}],"skipped":["s4"],"req":{"protocol":"http"}}`
		if !strings.Contains(out, want) {
			t.Errorf("JSON %s\nlacks %s", out, want)
		}
		t.Run("the notification document itself is not rewritten", func(t *testing.T) {
			var doc struct {
				Dispatch struct {
					Successful []string `bson:"successful"`
				} `bson:"dispatch"`
			}
			if err := raw.Collection("notification").FindOne(ctx, bson.M{"_id": oid}).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(doc.Dispatch.Successful, []string{"s1"}) {
				t.Errorf("inline arrays changed: %v", doc.Dispatch.Successful)
			}
		})
		t.Run("a notification without results keeps no dispatch", func(t *testing.T) {
			plain := &notify.Notification{ServiceName: "s"}
			if err := s.Notifications().Insert(ctx, plain); err != nil {
				t.Fatal(err)
			}
			if err := s.LoadDispatch(ctx, plain); err != nil || plain.Dispatch != nil {
				t.Errorf("%+v %v", plain.Dispatch, err)
			}
		})
		t.Run("a broadcast with side results only shows all four lists", func(t *testing.T) {
			b := &notify.Notification{ServiceName: "s", IsBroadcast: true}
			if err := s.Notifications().Insert(ctx, b); err != nil {
				t.Fatal(err)
			}
			if _, err := s.RecordDispatch(ctx, b.ID, []notify.DispatchResult{{SubscriptionID: "x", Outcome: notify.DispatchSuccessful}}); err != nil {
				t.Fatal(err)
			}
			if err := s.LoadDispatch(ctx, b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(toJSON(t, b), `"dispatch":{"candidates":["x"],"successful":["x"],"failed":[],"skipped":[]}`) {
				t.Errorf("JSON %s", toJSON(t, b))
			}
		})
	})
}

func TestRecordDispatchReportsStoreErrors(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.RecordDispatch(ctx, notify.NewID(), []notify.DispatchResult{{SubscriptionID: "a", Outcome: notify.DispatchSuccessful}})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
}

func TestLoadDispatchAllFillsEachBroadcastOfAPage(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		var page []*notify.Notification
		for i, bc := range []bool{true, false, true} {
			n := &notify.Notification{ServiceName: "s", Channel: "email", IsBroadcast: bc}
			if err := s.Notifications().Insert(ctx, n); err != nil {
				t.Fatal(err)
			}
			page = append(page, n)
			if _, err := s.AddDispatchCandidates(ctx, n.ID, []string{fmt.Sprint("c", i), fmt.Sprint("d", i)}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.RecordDispatch(ctx, n.ID, []notify.DispatchResult{{SubscriptionID: fmt.Sprint("c", i), Outcome: notify.DispatchSuccessful}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.LoadDispatchAll(ctx, page); err != nil {
			t.Fatal(err)
		}
		for i, want := range []string{
			`{"candidates":["c0","d0"],"successful":["c0"],"failed":[],"skipped":[]}`,
			``, // not a broadcast: not looked up
			`{"candidates":["c2","d2"],"successful":["c2"],"failed":[],"skipped":[]}`,
		} {
			got := ""
			if page[i].Dispatch != nil {
				got = toJSON(t, page[i].Dispatch.Fields())
			}
			if got != want {
				t.Errorf("notification %d: dispatch %s, want %s", i, got, want)
			}
		}
	})
}
