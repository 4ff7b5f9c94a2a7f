package mongostore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ErrNotEmpty is CopyTo's refusal of a target that holds documents.
var ErrNotEmpty = errors.New("the target database is not empty")

// copyBatch is how many documents CopyTo inserts at once.
const copyBatch = 500

// CopyTo copies every collection of s into dst's database, each document
// as stored (nothing is decoded, so fields govkit does not know survive),
// and returns how many documents each collection holds in dst afterwards.
// It is how a one-machine install moves from the embedded store to
// MongoDB (`govkit notify copy-store`); s must not change meanwhile (stop
// serve first). A dst with any document is refused with ErrNotEmpty,
// unless drop, which first drops dst's collections that s also has.
// Indexes are not copied: the caller runs dst.EnsureIndexes, which makes
// the ones the service needs (serve's primary does it at start too).
func (s *Store) CopyTo(ctx context.Context, dst *Store, drop bool) (map[string]int64, error) {
	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("list collections: %w", err)
	}
	sort.Strings(names)
	if !drop {
		existing, err := dst.db.ListCollectionNames(ctx, bson.D{})
		if err != nil {
			return nil, fmt.Errorf("list the target's collections: %w", err)
		}
		for _, name := range existing {
			if n, err := dst.db.Collection(name).EstimatedDocumentCount(ctx); err != nil || n > 0 {
				return nil, fmt.Errorf("%w: collection %s holds documents (copy with drop to replace them)", ErrNotEmpty, name)
			}
		}
	}
	counts := map[string]int64{}
	for _, name := range names {
		if strings.HasPrefix(name, "system.") {
			continue
		}
		to := dst.db.Collection(name)
		if drop {
			if err := to.Drop(ctx); err != nil {
				return nil, fmt.Errorf("drop %s in the target: %w", name, err)
			}
		}
		cur, err := s.db.Collection(name).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		batch := make([]any, 0, copyBatch)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			if _, err := to.InsertMany(ctx, batch, options.InsertMany().SetOrdered(true)); err != nil {
				return fmt.Errorf("write %s: %w", name, err)
			}
			batch = batch[:0]
			return nil
		}
		for cur.Next(ctx) {
			batch = append(batch, bson.Raw(append([]byte(nil), cur.Current...)))
			if len(batch) == copyBatch {
				if err := flush(); err != nil {
					cur.Close(ctx)
					return nil, err
				}
			}
		}
		err = cur.Err()
		cur.Close(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		if err := flush(); err != nil {
			return nil, err
		}
		// An empty collection is made too, as it was.
		if err := dst.db.CreateCollection(ctx, name); err != nil && !isNamespaceExists(err) {
			return nil, fmt.Errorf("create %s in the target: %w", name, err)
		}
		src, err := s.db.Collection(name).CountDocuments(ctx, bson.D{})
		if err != nil {
			return nil, fmt.Errorf("count %s: %w", name, err)
		}
		got, err := to.CountDocuments(ctx, bson.D{})
		if err != nil {
			return nil, fmt.Errorf("count %s in the target: %w", name, err)
		}
		if got != src {
			return nil, fmt.Errorf("%s: %d documents copied of %d", name, got, src)
		}
		counts[name] = got
	}
	return counts, nil
}

// isNamespaceExists recognises "collection already exists" (code 48).
func isNamespaceExists(err error) bool {
	var se interface{ HasErrorCode(int) bool }
	return errors.As(err, &se) && se.HasErrorCode(48)
}
