package mongostore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/mongostore"
)

func TestLockSerialisesReadModifyWrite(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		counter := rawDB(t, s).Collection("counter")
		if _, err := counter.InsertOne(ctx, bson.D{{Key: "_id", Value: "c"}, {Key: "n", Value: 0}}); err != nil {
			t.Fatal(err)
		}
		// Each writer reads the counter and writes it back plus one, the
		// pattern that loses updates when two run at once.
		const writers = 12
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for range writers {
			wg.Go(func() {
				unlock, err := s.Lock(ctx, "counter", time.Minute)
				if err != nil {
					errs <- err
					return
				}
				defer unlock()
				var doc struct{ N int }
				if err := counter.FindOne(ctx, bson.D{{Key: "_id", Value: "c"}}).Decode(&doc); err != nil {
					errs <- err
					return
				}
				if _, err := counter.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: doc.N + 1}}}}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		var doc struct{ N int }
		if err := counter.FindOne(ctx, bson.D{{Key: "_id", Value: "c"}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if doc.N != writers {
			t.Fatalf("counter %d after %d locked increments", doc.N, writers)
		}
		if n, _ := rawDB(t, s).Collection(mongostore.CollLock).CountDocuments(ctx, bson.D{}); n != 0 {
			t.Errorf("%d locks left after every holder released", n)
		}
	})
}

func TestLockOfADeadHolderExpires(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		// A holder that never releases, as a killed process would.
		if _, err := s.Lock(ctx, "l", time.Millisecond); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		unlock, err := s.Lock(wctx, "l", time.Minute)
		if err != nil {
			t.Fatalf("the expired lock was not taken over: %v", err)
		}
		unlock()
	})
}

func TestLockWaitEndsWithTheContext(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		unlock, err := s.Lock(context.Background(), "l", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := s.Lock(ctx, "l", time.Minute); err == nil {
			t.Fatal("a held lock was taken twice")
		}
	})
}
