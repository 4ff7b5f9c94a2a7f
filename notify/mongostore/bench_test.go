package mongostore_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// benchStore opens a fresh database on the embedded store with its indexes.
func benchStore(b *testing.B) *mongostore.Store {
	b.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := mongostore.Open(ctx, embeddedURI, mongostore.Options{Database: "bench_" + notify.NewID().Hex(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = s.DropDatabase(context.Background())
		_ = s.Close(context.Background())
	})
	if _, err := s.EnsureIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	if err := embedded.IndexIDs(ctx, s.Database()); err != nil {
		b.Fatal(err)
	}
	return s
}

// loadSubscriptions bulk-inserts n confirmed email subscriptions of svc,
// shaped as the API stores them (templates included).
func loadSubscriptions(b *testing.B, s *mongostore.Store, svc string, n int) []string {
	b.Helper()
	subs := make([]*notify.Subscription, n)
	for i := range subs {
		subs[i] = &notify.Subscription{
			ServiceName: svc, Channel: notify.ChannelEmail, State: notify.StateConfirmed,
			UserChannelID: fmt.Sprintf("user%d@example.org", i), UnsubscriptionCode: "12345",
			ConfirmationRequest: notify.Fields{{Key: "confirmationCode", Value: "54321"}, {Key: "from", Value: "no_reply@invalid.local"},
				{Key: "subject", Value: "Subscription confirmation"}, {Key: "textBody", Value: "Enter {subscription_confirmation_code} on screen"}},
			Data: notify.Fields{{Key: "name", Value: fmt.Sprint("user ", i)}},
		}
	}
	if err := s.Subscriptions().InsertMany(context.Background(), subs); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	for i, sub := range subs {
		ids[i] = sub.ID.Hex()
	}
	return ids
}

// BenchmarkBroadcast10k measures the store's part of one broadcast of
// 10,000 subscribers on the embedded store: planning (one pass over the
// subscriptions, chunks of 1,000 written), the chunk worker's reads and its
// result writes (5 partial documents of 200 per chunk, then folded into
// the chunk's result document), and reading dispatch back for
// the API.
func BenchmarkBroadcast10k(b *testing.B) {
	ctx := context.Background()
	const subscribers, chunk, batch = 10000, 1000, 200
	s := benchStore(b)
	ids := loadSubscriptions(b, s, "bench", subscribers)
	results := make([]notify.DispatchResult, len(ids))
	for i, id := range ids {
		results[i] = notify.DispatchResult{SubscriptionID: id, Outcome: notify.DispatchSuccessful}
		if i%10 == 0 {
			results[i] = notify.DispatchResult{SubscriptionID: id, UserChannelID: "x@y", Outcome: notify.DispatchFailed, Error: notify.Fields{{Key: "message", Value: "550 mailbox unavailable"}}}
		}
	}
	plan := mongostore.Plan{ServiceName: "bench", Channel: notify.ChannelEmail, Size: chunk}
	perSub := func(b *testing.B) {
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*subscribers)*1e6, "µs/subscriber")
	}
	b.Run("plan", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := s.PlanChunks(ctx, notify.NewID(), plan); err != nil {
				b.Fatal(err)
			}
		}
		perSub(b)
	})
	nid := notify.NewID()
	chunks, _, err := s.PlanChunks(ctx, nid, plan)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("read chunks", func(b *testing.B) {
		for b.Loop() {
			for i := range chunks {
				if _, err := s.BroadcastResults(ctx, nid, i); err != nil {
					b.Fatal(err)
				}
				if _, err := s.BroadcastChunk(ctx, nid, i); err != nil {
					b.Fatal(err)
				}
			}
		}
		perSub(b)
	})
	b.Run("record results", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			n := notify.NewID()
			if _, _, err := s.PlanChunks(ctx, n, plan); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			for c := range chunks {
				part := 0
				for i := c * chunk; i < (c+1)*chunk; i += batch {
					if part, err = s.RecordChunk(ctx, n, c, part, results[i:i+batch]); err != nil {
						b.Fatal(err)
					}
				}
				r, err := s.BroadcastResults(ctx, n, c)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.CompleteChunk(ctx, n, c, r); err != nil {
					b.Fatal(err)
				}
			}
		}
		perSub(b)
	})
	for c := range chunks {
		if _, err := s.RecordChunk(ctx, nid, c, 0, results[c*chunk:(c+1)*chunk]); err != nil {
			b.Fatal(err)
		}
		r, err := s.BroadcastResults(ctx, nid, c)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.CompleteChunk(ctx, nid, c, r); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("read back for the API", func(b *testing.B) {
		for b.Loop() {
			n := &notify.Notification{Meta: notify.Meta{ID: nid}, IsBroadcast: true}
			if err := s.LoadDispatch(ctx, n); err != nil {
				b.Fatal(err)
			}
			if n.Dispatch.Counts.Candidates != subscribers {
				b.Fatal(n.Dispatch.Counts)
			}
		}
	})
}

// BenchmarkFirstStartIndexes measures what the first start on an existing
// embedded store costs the primary (EnsureFieldIndexes: the SQLite
// indexes of ours, their statistics and the kept group counts, built
// over the documents): the start after an upgrade from NotifyBC or from a
// govkit without them. GOVKIT_BENCH_SIZE subscriptions (default 100,000;
// ten services, three states, two channels), seeded before the timer
// starts; run it with -benchtime 1x at large sizes.
func BenchmarkFirstStartIndexes(b *testing.B) {
	n := 100000
	if v := os.Getenv("GOVKIT_BENCH_SIZE"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1 {
			b.Fatalf("GOVKIT_BENCH_SIZE: %q is not a size", v)
		}
	}
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := benchStore(b)
		for start := 0; start < n; start += 5000 {
			subs := make([]*notify.Subscription, 0, 5000)
			for j := start; j < min(n, start+5000); j++ {
				subs = append(subs, &notify.Subscription{
					ServiceName: fmt.Sprint("service", j%10), Channel: []string{notify.ChannelEmail, notify.ChannelSMS}[j%2],
					State:         []string{notify.StateConfirmed, notify.StateUnconfirmed, notify.StateDeleted}[j%3],
					UserChannelID: fmt.Sprintf("user%d@example.org", j), UnsubscriptionCode: "12345",
					ConfirmationRequest: notify.Fields{{Key: "confirmationCode", Value: "54321"}, {Key: "from", Value: "no_reply@invalid.local"},
						{Key: "subject", Value: "Subscription confirmation"}, {Key: "textBody", Value: "Enter {subscription_confirmation_code} on screen"}},
					Data: notify.Fields{{Key: "name", Value: fmt.Sprint("user ", j)}},
				})
			}
			if err := s.Subscriptions().InsertMany(ctx, subs); err != nil {
				b.Fatal(err)
			}
		}
		l := embedded.Lookup(s.Database())
		s.SetFieldIndex(l)
		b.StartTimer()
		if err := s.EnsureFieldIndexes(ctx); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		groups, _, err := s.SubscriptionGroups(ctx, 100)
		if err != nil || len(groups) != min(n, 30) { // a service has one channel: j%10 fixes j%2
			b.Fatalf("groups after the build: %d, %v", len(groups), err)
		}
		_ = l.Close()
		b.StartTimer()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/float64(n)*1e6, "µs/subscription")
}
