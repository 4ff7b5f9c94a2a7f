package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// CollCronClaim holds the claims of scheduled jobs (ours): one document
// per claimed change, so that of several runs only one makes it.
const CollCronClaim = "cronClaim"

// Claim records key as taken and reports whether this call took it. It
// is atomic on every server, the embedded one included, because it is
// an insert of a unique _id (a conditional update is not: FerretDB v1
// reads and writes a document in separate steps).
func (s *Store) Claim(ctx context.Context, key string) (bool, error) {
	n, err := insertIgnoringDuplicates(ctx, s.db.Collection(CollCronClaim),
		[]any{bson.D{{Key: "_id", Value: key}, {Key: "created", Value: bson.NewDateTimeFromTime(s.now())}}})
	if err != nil {
		return false, fmt.Errorf("mongostore: claim: %w", err)
	}
	return n == 1, nil
}

// Unclaim forgets a claim whose change could not be made, so that a later
// run can try again.
func (s *Store) Unclaim(ctx context.Context, key string) error {
	_, err := s.db.Collection(CollCronClaim).DeleteOne(ctx, bson.D{{Key: "_id", Value: key}})
	return err
}

// PurgeClaims deletes claims made before t and returns how many.
func (s *Store) PurgeClaims(ctx context.Context, t time.Time) (int64, error) {
	res, err := s.db.Collection(CollCronClaim).DeleteMany(ctx, bson.D{{Key: "created", Value: bson.D{{Key: "$lt", Value: bson.NewDateTimeFromTime(t)}}}})
	if err != nil {
		return 0, fmt.Errorf("mongostore: claims: %w", err)
	}
	return res.DeletedCount, nil
}
