package mongostore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
)

// Broadcast results live outside the notification document, one document
// per notification and subscriber:
//
//	notificationDispatch           {_id: "<notificationId hex>/<subscriptionId>",
//	                                notificationId: ObjectId, subscriptionId,
//	                                outcome: "successful"|"failed"|"skipped",
//	                                userChannelId?, error?, updated}
//	notificationDispatchCandidate  {_id: "<notificationId hex>/<subscriptionId>",
//	                                notificationId: ObjectId, subscriptionId}
//
// The _id is derived from the pair, so set semantics come from the one
// index every server enforces and answers fastest: a subscriber's result
// is written once however often a batch is retried or however many workers
// race, the first outcome wins, and recording a batch is one unordered
// insert whose duplicates are ignored — no read first, no conditional
// update. (FerretDB v1 on SQLite uses no index but _id to answer a query;
// MongoDB also gets a {notificationId, subscriptionId} index for reads.)
// A broadcast of any size never grows the notification document.

// dispatchBatch bounds one write round trip.
const dispatchBatch = 1000

func (s *Store) resultColl() *mongo.Collection {
	return s.db.Collection(notify.CollNotificationDispatch)
}

func (s *Store) candidateColl() *mongo.Collection {
	return s.db.Collection(notify.CollNotificationDispatchCandidate)
}

func dispatchKey(nid notify.ID, subscriptionID string) string {
	return nid.Hex() + "/" + subscriptionID
}

// AddDispatchCandidates records subscribers chosen for a broadcast.
// Subscribers already recorded are left as they are. It returns how many
// were added.
func (s *Store) AddDispatchCandidates(ctx context.Context, notificationID notify.ID, subscriptionIDs []string) (int64, error) {
	nid := bson.ObjectID(notificationID)
	var added int64
	for start := 0; start < len(subscriptionIDs); start += dispatchBatch {
		chunk := subscriptionIDs[start:min(start+dispatchBatch, len(subscriptionIDs))]
		docs := make([]any, len(chunk))
		for i, sid := range chunk {
			docs[i] = bson.D{
				{Key: "_id", Value: dispatchKey(notificationID, sid)},
				{Key: "notificationId", Value: nid},
				{Key: "subscriptionId", Value: sid},
			}
		}
		n, err := insertIgnoringDuplicates(ctx, s.candidateColl(), docs)
		added += n
		if err != nil {
			return added, fmt.Errorf("mongostore: dispatch candidates: %w", err)
		}
	}
	return added, nil
}

// RecordDispatch records the outcomes of a batch of a broadcast's
// subscribers with set semantics: a subscriber already recorded keeps its
// first outcome. Outcomes must be final (not candidate). It returns how
// many outcomes were newly recorded.
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
			doc := bson.D{
				{Key: "_id", Value: dispatchKey(notificationID, r.SubscriptionID)},
				{Key: "notificationId", Value: nid},
				{Key: "subscriptionId", Value: r.SubscriptionID},
				{Key: "outcome", Value: string(r.Outcome)},
			}
			if r.UserChannelID != "" {
				doc = append(doc, bson.E{Key: "userChannelId", Value: r.UserChannelID})
			}
			if r.Error != nil {
				doc = append(doc, bson.E{Key: "error", Value: toBSON(r.Error)})
			}
			docs[i] = append(doc, bson.E{Key: "updated", Value: now})
		}
		n, err := insertIgnoringDuplicates(ctx, s.resultColl(), docs)
		recorded += n
		if err != nil {
			return recorded, fmt.Errorf("mongostore: dispatch results: %w", err)
		}
	}
	return recorded, nil
}

// insertIgnoringDuplicates inserts docs unordered and returns how many were
// inserted; documents refused by a unique index are already there and are
// not an error. Any other error is returned.
func insertIgnoringDuplicates(ctx context.Context, coll *mongo.Collection, docs []any) (int64, error) {
	if len(docs) == 0 {
		return 0, nil
	}
	_, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err == nil {
		return int64(len(docs)), nil
	}
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil {
		return 0, err
	}
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 {
			return 0, err
		}
	}
	return int64(len(docs) - len(bwe.WriteErrors)), nil
}

// DispatchQuery pages through a broadcast's results in subscription id
// order.
type DispatchQuery struct {
	// Outcome selects one outcome; empty means all.
	Outcome notify.DispatchOutcome
	// After is the last subscription id of the previous page.
	After string
	// Limit bounds the page; 0 means no bound.
	Limit int64
}

// ListDispatch returns a page of a broadcast's recorded results.
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
	cur, err := s.resultColl().Find(ctx, filter, opts)
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

// listCandidates returns a page of a broadcast's candidates in id order.
func (s *Store) listCandidates(ctx context.Context, nid notify.ID, after string, limit int64) ([]string, error) {
	filter := bson.D{{Key: "notificationId", Value: bson.ObjectID(nid)}}
	if after != "" {
		filter = append(filter, bson.E{Key: "subscriptionId", Value: bson.D{{Key: "$gt", Value: after}}})
	}
	opts := options.Find().SetSort(bson.D{{Key: "subscriptionId", Value: 1}}).SetProjection(bson.D{{Key: "subscriptionId", Value: 1}})
	if limit > 0 {
		opts.SetLimit(limit)
	}
	cur, err := s.candidateColl().Find(ctx, filter, opts)
	if err != nil {
		return nil, fmt.Errorf("mongostore: dispatch candidates: %w", err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	ids := []string{}
	for cur.Next(ctx) {
		sid, _ := cur.Current.Lookup("subscriptionId").StringValueOK()
		ids = append(ids, sid)
	}
	return ids, cur.Err()
}

// DispatchPending returns up to limit candidates (limit > 0) without a
// result, after the id after, in id order: the work left of a broadcast.
func (s *Store) DispatchPending(ctx context.Context, notificationID notify.ID, after string, limit int64) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("mongostore: dispatch pending: limit must be positive")
	}
	var pending []string
	for int64(len(pending)) < limit {
		page, err := s.listCandidates(ctx, notificationID, after, limit)
		if err != nil || len(page) == 0 {
			return pending, err
		}
		done, err := s.DispatchOutcomes(ctx, notificationID, page)
		if err != nil {
			return pending, err
		}
		for _, id := range page {
			if done[id] == "" && int64(len(pending)) < limit {
				pending = append(pending, id)
			}
		}
		after = page[len(page)-1]
	}
	return pending, nil
}

// DispatchOutcomes returns the recorded outcome of each of subscriptionIDs
// that has one, so a retried batch can skip subscribers a previous attempt
// already handled. A first attempt need not ask: RecordDispatch keeps set
// semantics by itself.
func (s *Store) DispatchOutcomes(ctx context.Context, notificationID notify.ID, subscriptionIDs []string) (map[string]notify.DispatchOutcome, error) {
	out := make(map[string]notify.DispatchOutcome, len(subscriptionIDs))
	if s.idOnlyQueries {
		// The embedded store answers one _id from its index but scans for
		// anything else, $in included: a few ids are point reads, more are
		// one scan of the broadcast's results.
		if len(subscriptionIDs) <= 32 {
			return out, s.pointOutcomes(ctx, notificationID, subscriptionIDs, out)
		}
		want := make(map[string]bool, len(subscriptionIDs))
		for _, id := range subscriptionIDs {
			want[id] = true
		}
		err := s.each(ctx, s.resultColl(), bson.D{{Key: "notificationId", Value: bson.ObjectID(notificationID)}},
			options.Find().SetProjection(bson.D{{Key: "subscriptionId", Value: 1}, {Key: "outcome", Value: 1}}),
			func(f notify.Fields) {
				sid, _ := f.String("subscriptionId")
				if want[sid] {
					o, _ := f.String("outcome")
					out[sid] = notify.DispatchOutcome(o)
				}
			})
		return out, err
	}
	for start := 0; start < len(subscriptionIDs); start += dispatchBatch {
		chunk := subscriptionIDs[start:min(start+dispatchBatch, len(subscriptionIDs))]
		keys := make(bson.A, len(chunk))
		for i, sid := range chunk {
			keys[i] = dispatchKey(notificationID, sid)
		}
		cur, err := s.resultColl().Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: keys}}}},
			options.Find().SetProjection(bson.D{{Key: "subscriptionId", Value: 1}, {Key: "outcome", Value: 1}}))
		if err != nil {
			return nil, fmt.Errorf("mongostore: dispatch: %w", err)
		}
		for cur.Next(ctx) {
			sid, _ := cur.Current.Lookup("subscriptionId").StringValueOK()
			o, _ := cur.Current.Lookup("outcome").StringValueOK()
			out[sid] = notify.DispatchOutcome(o)
		}
		err = cur.Err()
		_ = cur.Close(context.WithoutCancel(ctx))
		if err != nil {
			return nil, fmt.Errorf("mongostore: dispatch: %w", err)
		}
	}
	return out, nil
}

// pointOutcomes reads outcomes one _id at a time, on a few connections.
func (s *Store) pointOutcomes(ctx context.Context, nid notify.ID, ids []string, out map[string]notify.DispatchOutcome) error {
	var mu sync.Mutex
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	opts := options.FindOne().SetProjection(bson.D{{Key: "outcome", Value: 1}})
	for _, sid := range ids {
		g.Go(func() error {
			raw, err := s.resultColl().FindOne(ctx, bson.D{{Key: "_id", Value: dispatchKey(nid, sid)}}, opts).Raw()
			if errors.Is(err, mongo.ErrNoDocuments) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("mongostore: dispatch: %w", err)
			}
			o, _ := raw.Lookup("outcome").StringValueOK()
			mu.Lock()
			out[sid] = notify.DispatchOutcome(o)
			mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

// DispatchCounts counts a broadcast's recorded candidates and results (side
// collections only; arrays inline in older documents are not counted).
// Pending is candidates minus results, assuming results are for
// candidates, as they are when the broadcast records its candidates first.
func (s *Store) DispatchCounts(ctx context.Context, notificationID notify.ID) (notify.DispatchCounts, error) {
	var c notify.DispatchCounts
	nid := bson.ObjectID(notificationID)
	n, err := s.candidateColl().CountDocuments(ctx, bson.D{{Key: "notificationId", Value: nid}})
	if err != nil {
		return c, fmt.Errorf("mongostore: dispatch counts: %w", err)
	}
	c.Candidates = n
	// One pass over the broadcast's results rather than a count per
	// outcome: the embedded store scans for every query but by _id.
	cur, err := s.resultColl().Find(ctx, bson.D{{Key: "notificationId", Value: nid}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "outcome", Value: 1}}))
	if err != nil {
		return c, fmt.Errorf("mongostore: dispatch counts: %w", err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	for cur.Next(ctx) {
		switch o, _ := cur.Current.Lookup("outcome").StringValueOK(); notify.DispatchOutcome(o) {
		case notify.DispatchSuccessful:
			c.Successful++
		case notify.DispatchFailed:
			c.Failed++
		case notify.DispatchSkipped:
			c.Skipped++
		}
	}
	if err := cur.Err(); err != nil {
		return c, fmt.Errorf("mongostore: dispatch counts: %w", err)
	}
	c.Pending = max(0, c.Candidates-c.Successful-c.Failed-c.Skipped)
	return c, nil
}

// LoadDispatch fills n.Dispatch for the API: the arrays an older document
// holds inline (written by the original) merged with the side collections,
// each subscriber once. candidates lists the inline candidates, then the
// recorded ones, then any subscriber with a result that was not a
// candidate; successful, failed and skipped list the results. When there
// is anything to show, all four lists are shown (empty ones as []). A
// notification with nothing keeps a nil Dispatch; only broadcasts are
// looked up. Other inline keys (such as req) are kept.
func (s *Store) LoadDispatch(ctx context.Context, n *notify.Notification) error {
	return s.LoadDispatchAll(ctx, []*notify.Notification{n})
}

// LoadDispatchAll is LoadDispatch for a page of notifications, with one
// query per side collection for all of them.
func (s *Store) LoadDispatchAll(ctx context.Context, ns []*notify.Notification) error {
	var ids bson.A
	byID := map[notify.ID]*notify.Notification{}
	for _, n := range ns {
		if n != nil && n.IsBroadcast && !n.ID.IsZero() {
			ids = append(ids, bson.ObjectID(n.ID))
			byID[n.ID] = n
		}
	}
	if len(ids) == 0 {
		return nil
	}
	filter := bson.D{{Key: "notificationId", Value: bson.D{{Key: "$in", Value: ids}}}}
	if len(ids) == 1 {
		filter = bson.D{{Key: "notificationId", Value: ids[0]}}
	}
	sort := options.Find().SetSort(bson.D{{Key: "notificationId", Value: 1}, {Key: "subscriptionId", Value: 1}})
	cands := map[notify.ID][]string{}
	err := s.each(ctx, s.candidateColl(), filter, sort, func(f notify.Fields) {
		nid, _ := f.Get("notificationId")
		sid, _ := f.String("subscriptionId")
		if id, ok := nid.(notify.ID); ok {
			cands[id] = append(cands[id], sid)
		}
	})
	if err != nil {
		return err
	}
	rows := map[notify.ID][]notify.DispatchResult{}
	err = s.each(ctx, s.resultColl(), filter, sort, func(f notify.Fields) {
		nid, _ := f.Get("notificationId")
		id, ok := nid.(notify.ID)
		if !ok {
			return
		}
		var r notify.DispatchResult
		r.SubscriptionID, _ = f.String("subscriptionId")
		r.UserChannelID, _ = f.String("userChannelId")
		o, _ := f.String("outcome")
		r.Outcome = notify.DispatchOutcome(o)
		r.Error, _ = f.Get("error")
		rows[id] = append(rows[id], r)
	})
	if err != nil {
		return err
	}
	for id, n := range byID {
		mergeDispatch(n, cands[id], rows[id])
	}
	return nil
}

func (s *Store) each(ctx context.Context, coll *mongo.Collection, filter bson.D, opts *options.FindOptionsBuilder, fn func(notify.Fields)) error {
	cur, err := coll.Find(ctx, filter, opts)
	if err != nil {
		return fmt.Errorf("mongostore: dispatch: %w", err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	for cur.Next(ctx) {
		f, err := rawDoc(cur.Current)
		if err != nil {
			return fmt.Errorf("mongostore: dispatch: %w", err)
		}
		fn(f)
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("mongostore: dispatch: %w", err)
	}
	return nil
}

func mergeDispatch(n *notify.Notification, cands []string, rows []notify.DispatchResult) {
	if len(rows) == 0 && len(cands) == 0 {
		return
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
	addCand := func(id string) {
		if !cand[id] {
			cand[id] = true
			d.Candidates = append(d.Candidates, id)
		}
	}
	for _, id := range cands {
		addCand(id)
	}
	for _, r := range rows {
		addCand(r.SubscriptionID)
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
}

// DeleteDispatch removes a notification's candidates and results (when the
// notification itself is purged) and returns how many documents went.
func (s *Store) DeleteDispatch(ctx context.Context, notificationID notify.ID) (int64, error) {
	filter := bson.D{{Key: "notificationId", Value: bson.ObjectID(notificationID)}}
	var total int64
	for _, coll := range []*mongo.Collection{s.candidateColl(), s.resultColl()} {
		res, err := coll.DeleteMany(ctx, filter)
		if err != nil {
			return total, fmt.Errorf("mongostore: dispatch: %w", err)
		}
		total += res.DeletedCount
	}
	return total, nil
}
