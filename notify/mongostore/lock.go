package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
)

// CollLock holds the named locks of [Store.Lock] (ours; the original has no
// such collection).
const CollLock = "lock"

// Lock polling: the first retry comes quickly (a holder usually needs a few
// milliseconds), later ones back off so that waiters do not load the store.
const (
	lockFirstWait = 5 * time.Millisecond
	lockMaxWait   = 200 * time.Millisecond
)

// Lock takes the lock called name, shared by every process that uses this
// store, waiting until it is free or ctx ends, and returns the function that
// releases it.
//
// Read-modify-write sequences need it where the store cannot do them
// atomically: FerretDB v1 (the embedded store, and the FerretDB server the
// multi-process tests use) applies every update, $inc and $push included,
// by reading the document and writing it back whole, so two concurrent
// updates of one document can lose one of them. An insert, though, is
// atomic everywhere: the lock is a document whose _id is name, inserted to
// take it and deleted to release it. A holder that dies keeps the lock for
// ttl at most; the next taker then clears it.
func (s *Store) Lock(ctx context.Context, name string, ttl time.Duration) (unlock func(), err error) {
	c := s.db.Collection(CollLock)
	owner := bson.NewObjectID()
	wait := lockFirstWait
	for {
		now := time.Now()
		_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: name}, {Key: "owner", Value: owner}, {Key: "expires", Value: now.Add(ttl)}})
		if err == nil {
			return func() {
				// Released even when the holder's context has ended, so
				// that nobody waits for the ttl.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				if _, err := c.DeleteOne(rctx, bson.D{{Key: "_id", Value: name}, {Key: "owner", Value: owner}}); err != nil {
					s.log.Warn("lock not released; it expires by itself", "lock", name, "err", err)
				}
			}, nil
		}
		if !errors.Is(mapErr(err), notify.ErrDuplicate) {
			return nil, fmt.Errorf("mongostore: lock %s: %w", name, err)
		}
		// Someone holds it. If the holder died, its lock has expired: clear
		// it and take it at the next try.
		if _, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: name}, {Key: "expires", Value: bson.D{{Key: "$lt", Value: now}}}}); err != nil {
			return nil, fmt.Errorf("mongostore: lock %s: %w", name, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("mongostore: lock %s: %w", name, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, lockMaxWait)
	}
}
