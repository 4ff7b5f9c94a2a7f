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
