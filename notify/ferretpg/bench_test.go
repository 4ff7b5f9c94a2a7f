package ferretpg

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/mongostore"
)

// BenchmarkReads measures the console's main reads on a real FerretDB over
// PostgreSQL seeded with 100,000 subscriptions (GOVKIT_BENCH_SIZE: another
// size) and what a year of daily broadcasts leaves, through the store:
// ferretdb-alone is FerretDB answering them itself (every one reads the
// whole collection into FerretDB), ferretpg is the store with this
// package's index, after a VACUUM ANALYZE (what autovacuum does after the
// bulk insert). Above 100,000 only ferretpg runs (FerretDB alone takes
// minutes a read there).
//
//	go test ./notify/ferretpg -run '^$' -bench BenchmarkReads -benchtime 5x -timeout 1h
func BenchmarkReads(b *testing.B) {
	n := 100000
	if v := os.Getenv("GOVKIT_BENCH_SIZE"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n < 1000 {
			b.Fatalf("GOVKIT_BENCH_SIZE: %q is not a size of at least 1000", v)
		}
	}
	mongoURI, pgURL := testsvc.RequireFerretDBOnPostgres(b)
	ctx := context.Background()
	open := func() *mongostore.Store { return openStore(b, mongoURI) }
	plain, st := open(), open()
	if _, err := st.EnsureIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	seed(b, st, n)
	x, err := Open(ctx, pgURL, "notify")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = x.Close() })
	st.SetFieldIndex(x)
	if err := st.EnsureFieldIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := x.pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	created := bson.D{{Key: "created", Value: -1}}
	list := func(filter bson.D, skip int64) func(*testing.B, *mongostore.Store) {
		return func(b *testing.B, s *mongostore.Store) {
			recs, err := s.Subscriptions().Find(ctx, mongostore.Query{Filter: filter, Sort: created, Skip: skip, Limit: 25})
			if err != nil || len(recs) != 25 {
				b.Fatalf("%d records, %v", len(recs), err)
			}
		}
	}
	count := func(filter bson.D) func(*testing.B, *mongostore.Store) {
		return func(b *testing.B, s *mongostore.Store) {
			if c, err := s.Subscriptions().Count(ctx, filter); err != nil || c == 0 {
				b.Fatalf("count %d, %v", c, err)
			}
		}
	}
	svc := bson.D{{Key: "serviceName", Value: "svc3"}}
	reads := []struct {
		name string
		run  func(*testing.B, *mongostore.Store)
	}{
		{"newest-25", list(bson.D{}, 0)},
		{"newest-25-skip-n/2", list(bson.D{}, int64(n/2))},
		{"where-service-newest-25", list(svc, 0)},
		{"count", count(bson.D{})},
		{"count-where-service", count(svc)},
		{"count-where-service-state", count(bson.D{{Key: "serviceName", Value: "svc3"}, {Key: "state", Value: "unconfirmed"}})},
		{"count-where-channel", count(bson.D{{Key: "channel", Value: "sms"}})},
		{"groups", func(b *testing.B, s *mongostore.Store) {
			if gs, _, err := s.SubscriptionGroups(ctx, 200); err != nil || len(gs) != 60 {
				b.Fatalf("%d groups, %v", len(gs), err)
			}
		}},
	}
	for _, store := range []struct {
		name string
		st   *mongostore.Store
	}{{"ferretdb-alone", plain}, {"ferretpg", st}} {
		if store.st == plain && n > 100000 {
			continue
		}
		for _, r := range reads {
			b.Run(store.name+"/"+r.name, func(b *testing.B) {
				for b.Loop() {
					r.run(b, store.st)
				}
			})
		}
	}
}

// byID is the index without FindDocs: the store reads each record of a
// page by _id through FerretDB, as it did before lists were read in bulk.
type byID struct{ mongostore.FieldIndex }

// BenchmarkListInBulk measures a list of a thousand subscriptions read
// with the page (FindDocs, "bulk") and read record by record by _id
// through FerretDB ("by-id"), and the longest list without a limit
// (mongostore.MaxIndexList, 5,000) read in bulk, on a real FerretDB over
// PostgreSQL seeded with 25,000 subscriptions (two services of ten match).
//
//	go test ./notify/ferretpg -run '^$' -bench BenchmarkListInBulk -benchtime 5x
func BenchmarkListInBulk(b *testing.B) {
	n := 25000
	mongoURI, pgURL := testsvc.RequireFerretDBOnPostgres(b)
	ctx := context.Background()
	open := func() *mongostore.Store { return openStore(b, mongoURI) }
	bulk, slow := open(), open()
	if _, err := bulk.EnsureIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	seed(b, bulk, n)
	x, err := Open(ctx, pgURL, "notify")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = x.Close() })
	bulk.SetFieldIndex(x)
	slow.SetFieldIndex(byID{x})
	if err := bulk.EnsureFieldIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := x.pool.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	filter := bson.D{{Key: "serviceName", Value: bson.D{{Key: "$in", Value: bson.A{"svc1", "svc2"}}}}}
	created := bson.D{{Key: "created", Value: -1}}
	for _, r := range []struct {
		name  string
		st    *mongostore.Store
		limit int64
		want  int
	}{
		{"bulk/1000", bulk, 1000, 1000},
		{"by-id/1000", slow, 1000, 1000},
		{"bulk/5000-without-a-limit", bulk, 0, n / 5},
	} {
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				recs, err := r.st.Subscriptions().Find(mongostore.WithScanLimit(ctx, mongostore.DefaultScanLimit), mongostore.Query{Filter: filter, Sort: created, Limit: r.limit})
				if err != nil || len(recs) != r.want {
					b.Fatalf("%d records, %v", len(recs), err)
				}
			}
		})
	}
}
