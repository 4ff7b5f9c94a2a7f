package mongostore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

func TestSubscriptionGroupsAndBounceCounts(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		subscribe(t, s, "a", 3)
		subscribe(t, s, "b", 2)
		for _, sub := range []notify.Subscription{
			{ServiceName: "a", Channel: notify.ChannelEmail, State: notify.StateUnconfirmed, UserChannelID: "u@x"},
			{ServiceName: "c", Channel: notify.ChannelSMS, State: notify.StateConfirmed, UserChannelID: "1"},
		} {
			if err := s.Subscriptions().Insert(ctx, &sub); err != nil {
				t.Fatal(err)
			}
		}
		groups, more, err := s.SubscriptionGroups(ctx, 10)
		if err != nil || more {
			t.Fatal(groups, more, err)
		}
		want := []mongostore.SubscriptionGroup{
			{ServiceName: "a", Channel: "email", State: "confirmed", Count: 3},
			{ServiceName: "b", Channel: "email", State: "confirmed", Count: 2},
		}
		if len(groups) != 4 || groups[0] != want[0] || groups[1] != want[1] {
			t.Errorf("groups %+v", groups)
		}
		t.Run("the largest groups are kept up to the limit", func(t *testing.T) {
			groups, more, err := s.SubscriptionGroups(ctx, 1)
			if err != nil || !more || len(groups) != 1 || groups[0] != want[0] {
				t.Errorf("groups %+v more %v err %v", groups, more, err)
			}
		})
		for _, st := range []string{notify.BounceActive, notify.BounceActive, notify.BounceDeleted} {
			b := notify.Bounce{Channel: "email", UserChannelID: "x@y", State: st}
			if err := s.Bounces().Insert(ctx, &b); err != nil {
				t.Fatal(err)
			}
		}
		c, err := s.BounceCounts(ctx, []string{notify.BounceActive, notify.BounceDeleted})
		if err != nil || c[notify.BounceActive] != 2 || c[notify.BounceDeleted] != 1 {
			t.Errorf("bounces %v %v", c, err)
		}
	})
}

func TestBroadcastProgressAgreesWithTheFullCount(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		ids := subscribe(t, s, "svc", 7)
		n := notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, State: notify.StateSending, Message: fields()}
		if err := s.Notifications().Insert(ctx, &n); err != nil {
			t.Fatal(err)
		}
		if p, err := s.BroadcastProgress(ctx, n.ID); err != nil || p.Found {
			t.Fatalf("before the broadcast: %+v %v", p, err)
		}
		if _, _, err := s.StartBroadcast(ctx, mongostore.Broadcast{NotificationID: n.ID, Run: "r1"}); err != nil {
			t.Fatal(err)
		}
		chunks, cands, err := s.PlanChunks(ctx, n.ID, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 3})
		if err != nil || chunks != 3 || cands != 7 {
			t.Fatal(chunks, cands, err)
		}
		check := func(stage string) {
			t.Helper()
			p, err := s.BroadcastProgress(ctx, n.ID)
			full, ferr := s.DispatchCounts(ctx, n.ID)
			if err != nil || ferr != nil || !p.Found || p.Counts != full {
				t.Errorf("%s: progress %+v (%v), full count %+v (%v)", stage, p, err, full, ferr)
			}
		}
		check("planned")
		// chunk 0: two batches, one repeated; then completed
		r := []notify.DispatchResult{
			{SubscriptionID: ids[0], Outcome: notify.DispatchSuccessful},
			{SubscriptionID: ids[1], UserChannelID: "x@y", Outcome: notify.DispatchFailed, Error: fields("message", "550")},
		}
		for range 2 {
			if _, err := s.RecordChunk(ctx, n.ID, 0, 0, r); err != nil {
				t.Fatal(err)
			}
		}
		check("chunk 0 under way")
		res, err := s.BroadcastResults(ctx, n.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		res.Skipped = append(res.Skipped, ids[2])
		if err := s.CompleteChunk(ctx, n.ID, 0, res); err != nil {
			t.Fatal(err)
		}
		// chunk 1 under way
		if _, err := s.RecordChunk(ctx, n.ID, 1, 0, []notify.DispatchResult{{SubscriptionID: ids[3], Outcome: notify.DispatchSuccessful}}); err != nil {
			t.Fatal(err)
		}
		check("chunk 0 complete, chunk 1 under way")
		p, _ := s.BroadcastProgress(ctx, n.ID)
		if want := (notify.DispatchCounts{Candidates: 7, Successful: 2, Failed: 1, Skipped: 1, Pending: 3}); p.Counts != want {
			t.Errorf("progress %+v, want %+v", p.Counts, want)
		}
	})
}

// BenchmarkSubscriptionGroups is the costly part of GET
// /api/console/stats: one $group over every subscription (10 services,
// three states), at 1k, 10k and 100k subscriptions.
func BenchmarkSubscriptionGroups(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			s := benchStore(b)
			const batch = 5000
			for start := 0; start < n; start += batch {
				subs := make([]*notify.Subscription, 0, batch)
				for i := start; i < min(n, start+batch); i++ {
					state := []string{notify.StateConfirmed, notify.StateUnconfirmed, notify.StateDeleted}[(i/10)%3]
					subs = append(subs, &notify.Subscription{
						ServiceName: fmt.Sprintf("service%d", i%10), Channel: notify.ChannelEmail, State: state,
						UserChannelID: fmt.Sprintf("user%d@example.org", i), UnsubscriptionCode: "12345",
						ConfirmationRequest: notify.Fields{{Key: "confirmationCode", Value: "54321"}, {Key: "textBody", Value: "Enter {subscription_confirmation_code} on screen"}},
						Data:                notify.Fields{{Key: "name", Value: fmt.Sprint("user ", i)}},
					})
				}
				if err := s.Subscriptions().InsertMany(context.Background(), subs); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				groups, _, err := s.SubscriptionGroups(context.Background(), 200)
				if err != nil || len(groups) != 30 {
					b.Fatal(len(groups), err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*n)*1e6, "µs/subscription")
		})
	}
}

// BenchmarkBroadcastProgress10k compares what reading the progress of a
// 10,000 subscriber broadcast costs on the store (chunks of 1,000, nine
// complete, one under way): counted from the chunks' results
// (BroadcastProgress without final counts: what Dispatcher.Progress falls
// back to), the final counts kept in the header, and the lists and counts
// the API otherwise reads (LoadDispatch). A running broadcast's progress
// is read from the queue backend instead (one hash).
func BenchmarkBroadcastProgress10k(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	ids := loadSubscriptions(b, s, "bench", 10000)
	n := notify.Notification{ServiceName: "bench", Channel: "email", IsBroadcast: true, State: notify.StateSending, Message: notify.Fields{}}
	if err := s.Notifications().Insert(ctx, &n); err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.StartBroadcast(ctx, mongostore.Broadcast{NotificationID: n.ID, Run: "r"}); err != nil {
		b.Fatal(err)
	}
	if _, _, err := s.PlanChunks(ctx, n.ID, mongostore.Plan{ServiceName: "bench", Channel: "email", Size: 1000}); err != nil {
		b.Fatal(err)
	}
	for c := range 10 {
		results := make([]notify.DispatchResult, 0, 500)
		for _, id := range ids[c*1000 : c*1000+500] {
			results = append(results, notify.DispatchResult{SubscriptionID: id, Outcome: notify.DispatchSuccessful})
		}
		if _, err := s.RecordChunk(ctx, n.ID, c, 0, results); err != nil {
			b.Fatal(err)
		}
		if c == 9 {
			break
		}
		res, err := s.BroadcastResults(ctx, n.ID, c)
		if err != nil {
			b.Fatal(err)
		}
		for _, id := range ids[c*1000+500 : c*1000+1000] {
			res.Successful = append(res.Successful, id)
		}
		if err := s.CompleteChunk(ctx, n.ID, c, res); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("chunks", func(b *testing.B) {
		for b.Loop() {
			p, err := s.BroadcastProgress(ctx, n.ID)
			if err != nil || p.Counts.Successful != 9500 {
				b.Fatal(p, err)
			}
		}
	})
	b.Run("header", func(b *testing.B) {
		final := notify.DispatchCounts{Candidates: 10000, Successful: 9500, Pending: 500}
		if err := s.SetBroadcastCounts(ctx, n.ID, &final); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = s.SetBroadcastCounts(ctx, n.ID, nil) }()
		for b.Loop() {
			p, err := s.BroadcastProgress(ctx, n.ID)
			if err != nil || p.Counts.Successful != 9500 {
				b.Fatal(p, err)
			}
		}
	})
	b.Run("lists", func(b *testing.B) {
		for b.Loop() {
			got := n
			got.Dispatch = nil
			if err := s.LoadDispatch(ctx, &got); err != nil || got.Dispatch.Counts.Successful != 9500 {
				b.Fatal(err)
			}
		}
	})
}
