package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
)

// DeleteDispatchOf removes the candidates and results of several
// notifications (purged ones) with one query per side collection and
// batch, and returns how many documents went.
func (s *Store) DeleteDispatchOf(ctx context.Context, notificationIDs []notify.ID) (int64, error) {
	var total int64
	for start := 0; start < len(notificationIDs); start += dispatchBatch {
		chunk := notificationIDs[start:min(start+dispatchBatch, len(notificationIDs))]
		ids := make(bson.A, len(chunk))
		for i, id := range chunk {
			ids[i] = bson.ObjectID(id)
		}
		filter := bson.D{{Key: "notificationId", Value: bson.D{{Key: "$in", Value: ids}}}}
		for _, coll := range []*mongo.Collection{s.candidateColl(), s.resultColl()} {
			res, err := coll.DeleteMany(ctx, filter)
			if err != nil {
				return total, fmt.Errorf("mongostore: dispatch: %w", err)
			}
			total += res.DeletedCount
		}
	}
	return total, nil
}

// LastDispatchActivity returns when a broadcast last recorded a result
// (zero when it has none): a broadcast that records results is alive even
// when its notification document has not changed for a while.
func (s *Store) LastDispatchActivity(ctx context.Context, notificationID notify.ID) (time.Time, error) {
	opts := options.FindOne().
		SetSort(bson.D{{Key: "updated", Value: -1}}).
		SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "updated", Value: 1}})
	raw, err := s.resultColl().FindOne(ctx, bson.D{{Key: "notificationId", Value: bson.ObjectID(notificationID)}}, opts).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("mongostore: dispatch: %w", err)
	}
	dt, ok := raw.Lookup("updated").DateTimeOK()
	if !ok {
		return time.Time{}, nil
	}
	return time.UnixMilli(dt).UTC(), nil
}

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
