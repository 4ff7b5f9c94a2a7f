package mongostore

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
)

// The notificationDispatch collection holds one document per notification
// and subscription:
//
//	{_id, notificationId: ObjectId, subscriptionId: string,
//	 outcome: "candidate"|"successful"|"failed"|"skipped",
//	 userChannelId?, error?, updated}
//
// unique on {notificationId, subscriptionId}. That index gives the set
// semantics a broadcast needs: a subscriber is recorded once however often
// a batch is retried or however many workers race, and the first final
// outcome wins. Writes are batched (one round trip per batch), and a
// broadcast of any size never grows the notification document.

// dispatchBatch bounds one write round trip.
const dispatchBatch = 1000

func (s *Store) dispatchColl() *mongo.Collection {
	return s.db.Collection(notify.CollNotificationDispatch)
}

// AddDispatchCandidates records subscribers chosen for a broadcast, with no
// outcome yet. Subscribers already recorded (as candidates or with an
// outcome) are left as they are. It returns how many were added.
func (s *Store) AddDispatchCandidates(ctx context.Context, notificationID notify.ID, subscriptionIDs []string) (int64, error) {
	now := bson.NewDateTimeFromTime(s.now())
	var added int64
	for start := 0; start < len(subscriptionIDs); start += dispatchBatch {
		chunk := subscriptionIDs[start:min(start+dispatchBatch, len(subscriptionIDs))]
		docs := make([]any, len(chunk))
		for i, sid := range chunk {
			docs[i] = bson.D{
				{Key: "notificationId", Value: bson.ObjectID(notificationID)},
				{Key: "subscriptionId", Value: sid},
				{Key: "outcome", Value: string(notify.DispatchCandidate)},
				{Key: "updated", Value: now},
			}
		}
		failed, err := insertIgnoringDuplicates(ctx, s.dispatchColl(), docs)
		if err != nil {
			return added, fmt.Errorf("mongostore: dispatch candidates: %w", err)
		}
		added += int64(len(chunk) - len(failed))
	}
	return added, nil
}

// RecordDispatch records the outcomes of a batch of subscribers of a
// broadcast with set semantics: a subscriber without a final outcome gets
// the one given (whether or not it was recorded as a candidate); one that
// already has a final outcome keeps it. Results with an empty or candidate
// outcome are refused. It returns how many outcomes were newly recorded.
func (s *Store) RecordDispatch(ctx context.Context, notificationID notify.ID, results []notify.DispatchResult) (int64, error) {
	for _, r := range results {
		switch r.Outcome {
		case notify.DispatchSuccessful, notify.DispatchFailed, notify.DispatchSkipped:
		default:
			return 0, fmt.Errorf("mongostore: dispatch result for %s: outcome %q is not final", r.SubscriptionID, r.Outcome)
		}
	}
	now := bson.NewDateTimeFromTime(s.now())
	nid := bson.ObjectID(notificationID)
	var recorded int64
	for start := 0; start < len(results); start += dispatchBatch {
		chunk := results[start:min(start+dispatchBatch, len(results))]
		docs := make([]any, len(chunk))
		for i, r := range chunk {
			docs[i] = bson.D{
				{Key: "notificationId", Value: nid},
				{Key: "subscriptionId", Value: r.SubscriptionID},
				{Key: "outcome", Value: string(r.Outcome)},
				{Key: "updated", Value: now},
			}
			docs[i] = append(docs[i].(bson.D), resultFields(r)...)
		}
		// Most results are for subscribers not yet recorded: one unordered
		// insert. Those already present (as candidates, or recorded by a
		// retried batch) fail on the unique index and are updated below
		// only while they are still candidates.
		dups, err := insertIgnoringDuplicates(ctx, s.dispatchColl(), docs)
		if err != nil {
			return recorded, fmt.Errorf("mongostore: dispatch results: %w", err)
		}
		recorded += int64(len(chunk) - len(dups))
		if len(dups) == 0 {
			continue
		}
		models := make([]mongo.WriteModel, 0, len(dups))
		for _, i := range dups {
			r := chunk[i]
			set := append(bson.D{{Key: "outcome", Value: string(r.Outcome)}, {Key: "updated", Value: now}}, resultFields(r)...)
			models = append(models, mongo.NewUpdateOneModel().
				SetFilter(bson.D{{Key: "notificationId", Value: nid}, {Key: "subscriptionId", Value: r.SubscriptionID}, {Key: "outcome", Value: string(notify.DispatchCandidate)}}).
				SetUpdate(bson.D{{Key: "$set", Value: set}}))
		}
		res, err := s.dispatchColl().BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		if err != nil {
			return recorded, fmt.Errorf("mongostore: dispatch results: %w", err)
		}
		recorded += res.ModifiedCount
	}
	return recorded, nil
}

func resultFields(r notify.DispatchResult) bson.D {
	var d bson.D
	if r.UserChannelID != "" {
		d = append(d, bson.E{Key: "userChannelId", Value: r.UserChannelID})
	}
	if r.Error != nil {
		d = append(d, bson.E{Key: "error", Value: toBSON(r.Error)})
	}
	return d
}

// insertIgnoringDuplicates inserts docs unordered and returns the indexes
// of those refused by a unique index; any other error is returned.
func insertIgnoringDuplicates(ctx context.Context, coll *mongo.Collection, docs []any) ([]int, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	_, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil {
		return nil, nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return nil, err
	}
	dups := make([]int, 0, len(bwe.WriteErrors))
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 {
			return nil, err
		}
		dups = append(dups, we.Index)
	}
	return dups, nil
}

// DispatchQuery pages through a broadcast's recorded subscribers in
// subscription id order.
type DispatchQuery struct {
	// Outcome selects one outcome; empty means all.
	Outcome notify.DispatchOutcome
	// After is the last subscription id of the previous page.
	After string
	// Limit bounds the page; 0 means no bound.
	Limit int64
}

// ListDispatch returns a page of a broadcast's recorded subscribers.
func (s *Store) ListDispatch(ctx context.Context, notificationID notify.ID, q DispatchQuery) ([]notify.DispatchResult, error) {
	filter := bson.D{{Key: "notificationId", Value: bson.ObjectID(notificationID)}}
	if q.Outcome != "" {
		filter = append(filter, bson.E{Key: "outcome", Value: string(q.Outcome)})
	}
	if q.After != "" {
		filter = append(filter, bson.E{Key: "subscriptionId", Value: bson.D{{Key: "$gt", Value: q.After}}})
	}
	opts := options.Find().SetSort(bson.D{{Key: "subscriptionId", Value: 1}})
	if q.Limit > 0 {
		opts.SetLimit(q.Limit)
	}
	cur, err := s.dispatchColl().Find(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("mongostore: dispatch: %w", err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	out := []notify.DispatchResult{}
	for cur.Next(ctx) {
		f, err := rawDoc(cur.Current)
		if err != nil {
			return nil, fmt.Errorf("mongostore: dispatch: %w", err)
		}
		var r notify.DispatchResult
		r.SubscriptionID, _ = f.String("subscriptionId")
		r.UserChannelID, _ = f.String("userChannelId")
		o, _ := f.String("outcome")
		r.Outcome = notify.DispatchOutcome(o)
		r.Error, _ = f.Get("error")
		out = append(out, r)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("mongostore: dispatch: %w", err)
	}
	return out, nil
}

// DispatchPending returns up to limit subscription ids recorded as
// candidates without an outcome, after the id after, in id order: the work
// left of a broadcast.
func (s *Store) DispatchPending(ctx context.Context, notificationID notify.ID, after string, limit int64) ([]string, error) {
	rs, err := s.ListDispatch(ctx, notificationID, DispatchQuery{Outcome: notify.DispatchCandidate, After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.SubscriptionID
	}
	return ids, nil
}

// DispatchOutcomes returns the recorded outcome of each of subscriptionIDs
// that has one (candidates included), so a worker can skip subscribers a
// previous attempt already handled.
func (s *Store) DispatchOutcomes(ctx context.Context, notificationID notify.ID, subscriptionIDs []string) (map[string]notify.DispatchOutcome, error) {
	out := make(map[string]notify.DispatchOutcome, len(subscriptionIDs))
	for start := 0; start < len(subscriptionIDs); start += dispatchBatch {
		chunk := subscriptionIDs[start:min(start+dispatchBatch, len(subscriptionIDs))]
		cur, err := s.dispatchColl().Find(ctx,
			bson.D{{Key: "notificationId", Value: bson.ObjectID(notificationID)}, {Key: "subscriptionId", Value: bson.D{{Key: "$in", Value: chunk}}}},
			options.Find().SetProjection(bson.D{{Key: "subscriptionId", Value: 1}, {Key: "outcome", Value: 1}}))
		if err != nil {
			return nil, fmt.Errorf("mongostore: dispatch: %w", err)
		}
		for cur.Next(ctx) {
			var row struct {
				SubscriptionID string `bson:"subscriptionId"`
				Outcome        string `bson:"outcome"`
			}
			if err := cur.Decode(&row); err != nil {
				cur.Close(context.WithoutCancel(ctx))
				return nil, err
			}
			out[row.SubscriptionID] = notify.DispatchOutcome(row.Outcome)
		}
		err = cur.Err()
		cur.Close(context.WithoutCancel(ctx))
		if err != nil {
			return nil, fmt.Errorf("mongostore: dispatch: %w", err)
		}
	}
	return out, nil
}

// DispatchCounts counts a broadcast's recorded subscribers by outcome, from
// the side collection only.
func (s *Store) DispatchCounts(ctx context.Context, notificationID notify.ID) (notify.DispatchCounts, error) {
	var c notify.DispatchCounts
	nid := bson.ObjectID(notificationID)
	for _, x := range []struct {
		outcome notify.DispatchOutcome
		dst     *int64
	}{
		{notify.DispatchCandidate, &c.Pending},
		{notify.DispatchSuccessful, &c.Successful},
		{notify.DispatchFailed, &c.Failed},
		{notify.DispatchSkipped, &c.Skipped},
	} {
		n, err := s.dispatchColl().CountDocuments(ctx, bson.D{{Key: "notificationId", Value: nid}, {Key: "outcome", Value: string(x.outcome)}})
		if err != nil {
			return c, fmt.Errorf("mongostore: dispatch counts: %w", err)
		}
		*x.dst = n
	}
	c.Candidates = c.Pending + c.Successful + c.Failed + c.Skipped
	return c, nil
}

// LoadDispatch fills n.Dispatch for the API: the arrays an older document
// holds inline (written by the original) merged with the side collection,
// each subscriber once. candidates lists every recorded subscriber;
// successful, failed and skipped their final outcomes. A notification with
// neither keeps a nil Dispatch. Other keys inline (such as req) are kept.
func (s *Store) LoadDispatch(ctx context.Context, n *notify.Notification) error {
	rows, err := s.ListDispatch(ctx, n.ID, DispatchQuery{})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return nil
	}
	d := n.Dispatch
	if d == nil {
		d = &notify.Dispatch{}
	}
	seen := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, id := range list {
			m[id] = true
		}
		return m
	}
	cand, succ, skip := seen(d.Candidates), seen(d.Successful), seen(d.Skipped)
	fail := make(map[string]bool, len(d.Failed))
	for _, f := range d.Failed {
		fail[f.SubscriptionID] = true
	}
	for _, r := range rows {
		if !cand[r.SubscriptionID] {
			cand[r.SubscriptionID] = true
			d.Candidates = append(d.Candidates, r.SubscriptionID)
		}
		switch r.Outcome {
		case notify.DispatchSuccessful:
			if !succ[r.SubscriptionID] {
				succ[r.SubscriptionID] = true
				d.Successful = append(d.Successful, r.SubscriptionID)
			}
		case notify.DispatchSkipped:
			if !skip[r.SubscriptionID] {
				skip[r.SubscriptionID] = true
				d.Skipped = append(d.Skipped, r.SubscriptionID)
			}
		case notify.DispatchFailed:
			if !fail[r.SubscriptionID] {
				fail[r.SubscriptionID] = true
				d.Failed = append(d.Failed, notify.DispatchFailure{SubscriptionID: r.SubscriptionID, UserChannelID: r.UserChannelID, Error: r.Error})
			}
		}
	}
	// Every list is shown once a broadcast has results, empty or not.
	if d.Candidates == nil {
		d.Candidates = []string{}
	}
	if d.Successful == nil {
		d.Successful = []string{}
	}
	if d.Failed == nil {
		d.Failed = []notify.DispatchFailure{}
	}
	if d.Skipped == nil {
		d.Skipped = []string{}
	}
	n.Dispatch = d
	return nil
}

// DeleteDispatch removes a notification's dispatch results (when the
// notification itself is purged) and returns how many.
func (s *Store) DeleteDispatch(ctx context.Context, notificationID notify.ID) (int64, error) {
	res, err := s.dispatchColl().DeleteMany(ctx, bson.D{{Key: "notificationId", Value: bson.ObjectID(notificationID)}})
	if err != nil {
		return 0, fmt.Errorf("mongostore: dispatch: %w", err)
	}
	return res.DeletedCount, nil
}
