package mongostore_test

import (
	"context"
	"io"
	"log/slog"
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
	return s
}

func results(ids []string) []notify.DispatchResult {
	rs := make([]notify.DispatchResult, len(ids))
	for i, id := range ids {
		rs[i] = notify.DispatchResult{SubscriptionID: id, UserChannelID: id + "@example.org", Outcome: notify.DispatchSuccessful}
		if i%10 == 0 {
			rs[i].Outcome = notify.DispatchFailed
			rs[i].Error = "550 mailbox unavailable"
		}
	}
	return rs
}

// BenchmarkDispatch10k measures one broadcast of 10,000 subscribers on the
// embedded store: results written in batches of 1,000 as a chunk worker
// would, then read back for the API.
func BenchmarkDispatch10k(b *testing.B) {
	ctx := context.Background()
	ids := subIDs(10000)
	rs := results(ids)
	const batch = 1000

	b.Run("write results", func(b *testing.B) {
		s := benchStore(b)
		for b.Loop() {
			nid := notify.NewID()
			for i := 0; i < len(rs); i += batch {
				if _, err := s.RecordDispatch(ctx, nid, rs[i:i+batch]); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N*len(rs))*1e6, "µs/result")
	})
	b.Run("write candidates then results", func(b *testing.B) {
		s := benchStore(b)
		for b.Loop() {
			nid := notify.NewID()
			if _, err := s.AddDispatchCandidates(ctx, nid, ids); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < len(rs); i += batch {
				if _, err := s.RecordDispatch(ctx, nid, rs[i:i+batch]); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N*len(rs))*1e6, "µs/result")
	})
	b.Run("retry of recorded results", func(b *testing.B) {
		s := benchStore(b)
		nid := notify.NewID()
		for i := 0; i < len(rs); i += batch {
			if _, err := s.RecordDispatch(ctx, nid, rs[i:i+batch]); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			for i := 0; i < len(rs); i += batch {
				if n, err := s.RecordDispatch(ctx, nid, rs[i:i+batch]); err != nil || n != 0 {
					b.Fatal(n, err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N*len(rs))*1e6, "µs/result")
	})
	b.Run("read back for the API", func(b *testing.B) {
		s := benchStore(b)
		n := &notify.Notification{ServiceName: "s", IsBroadcast: true}
		if err := s.Notifications().Insert(ctx, n); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(rs); i += batch {
			if _, err := s.RecordDispatch(ctx, n.ID, rs[i:i+batch]); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			got, err := s.Notifications().FindByID(ctx, n.ID.Hex())
			if err != nil {
				b.Fatal(err)
			}
			if err := s.LoadDispatch(ctx, got); err != nil {
				b.Fatal(err)
			}
			if len(got.Dispatch.Candidates) != len(rs) {
				b.Fatal(len(got.Dispatch.Candidates))
			}
		}
	})
	b.Run("outcomes of a retried batch of 1000", func(b *testing.B) {
		s := benchStore(b)
		nid := notify.NewID()
		for i := 0; i < len(rs); i += batch {
			if _, err := s.RecordDispatch(ctx, nid, rs[i:i+batch]); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			got, err := s.DispatchOutcomes(ctx, nid, ids[5000:6000])
			if err != nil || len(got) != 1000 {
				b.Fatal(len(got), err)
			}
		}
	})
	b.Run("counts", func(b *testing.B) {
		s := benchStore(b)
		nid := notify.NewID()
		for i := 0; i < len(rs); i += batch {
			if _, err := s.RecordDispatch(ctx, nid, rs[i:i+batch]); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			if _, err := s.DispatchCounts(ctx, nid); err != nil {
				b.Fatal(err)
			}
		}
	})
}
