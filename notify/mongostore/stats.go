package mongostore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/embeddedmongo"
)

// SubscriptionGroup counts the subscriptions of one service, channel and
// state.
type SubscriptionGroup struct {
	ServiceName string `json:"serviceName"`
	Channel     string `json:"channel"`
	State       string `json:"state"`
	Count       int64  `json:"count"`
}

// subscriptionGroupFields are the fields the console's subscription
// groups are counted by, in the order of the composite index that serves
// them.
var subscriptionGroupFields = []string{"serviceName", "state", "channel"}

// SubscriptionGroups counts the subscriptions by service, channel and
// state, largest groups first, and returns at most limit groups and
// whether more exist; only the groups come back, so this process holds at
// most limit+1 of them, never the subscriptions. On the embedded store
// it reads counts kept by triggers of ours (see
// embeddedmongo.Lookup.KeepGroupCounts), or failing those one GROUP BY
// over a composite SQLite index of ours, which reads index entries, not
// documents (FerretDB's own $group would decode every
// subscription); elsewhere one aggregation ($group) on the server.
func (s *Store) SubscriptionGroups(ctx context.Context, limit int) ([]SubscriptionGroup, bool, error) {
	if s.fieldIndex != nil {
		gs, err := s.fieldIndex.Groups(ctx, notify.CollSubscription, subscriptionSchema.indexed, subscriptionGroupFields, limit+1)
		if err == nil {
			out := make([]SubscriptionGroup, 0, len(gs))
			for _, g := range gs {
				out = append(out, SubscriptionGroup{ServiceName: shortString(g.Values[0]), State: g.Values[1], Channel: g.Values[2], Count: g.Count})
			}
			more := len(out) > limit
			if more {
				out = out[:limit]
			}
			return out, more, nil
		}
		if !errors.Is(err, embeddedmongo.ErrUnanswerable) {
			return nil, false, fmt.Errorf("mongostore: subscription groups: %w", err)
		}
	}
	pipeline := mongo.Pipeline{
		{{Key: "$group", Value: bson.D{
			{Key: "_id", Value: bson.D{
				{Key: "serviceName", Value: "$serviceName"},
				{Key: "channel", Value: "$channel"},
				{Key: "state", Value: "$state"},
			}},
			{Key: "count", Value: bson.D{{Key: "$sum", Value: 1}}},
		}}},
		{{Key: "$sort", Value: bson.D{{Key: "count", Value: -1}, {Key: "_id", Value: 1}}}},
		{{Key: "$limit", Value: limit + 1}},
	}
	cur, err := s.db.Collection(notify.CollSubscription).Aggregate(ctx, pipeline)
	if err != nil {
		return nil, false, fmt.Errorf("mongostore: subscription groups: %w", mapErr(err))
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var out []SubscriptionGroup
	for cur.Next(ctx) {
		var g SubscriptionGroup
		id := cur.Current.Lookup("_id")
		g.ServiceName = shortString(stringAt(id, "serviceName"))
		g.Channel = stringAt(id, "channel")
		g.State = stringAt(id, "state")
		g.Count = numberValue(cur.Current.Lookup("count"))
		out = append(out, g)
	}
	if err := cur.Err(); err != nil {
		return nil, false, fmt.Errorf("mongostore: subscription groups: %w", mapErr(err))
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// stringAt reads a string field of an embedded document value ("" when
// absent or not a string: a subscription without a state).
func stringAt(v bson.RawValue, key string) string {
	d, ok := v.DocumentOK()
	if !ok {
		return ""
	}
	s, _ := d.Lookup(key).StringValueOK()
	return s
}

func numberValue(v bson.RawValue) int64 {
	if n, ok := v.Int64OK(); ok {
		return n
	}
	if n, ok := v.Int32OK(); ok {
		return int64(n)
	}
	if f, ok := v.DoubleOK(); ok {
		return int64(f)
	}
	return 0
}

// BounceCounts counts the bounce records in each of states: one count
// query per state.
func (s *Store) BounceCounts(ctx context.Context, states []string) (map[string]int64, error) {
	out := make(map[string]int64, len(states))
	for _, st := range states {
		n, err := s.Bounces().Count(ctx, bson.D{{Key: "state", Value: st}})
		if err != nil {
			return nil, fmt.Errorf("mongostore: bounce counts: %w", err)
		}
		out[st] = n
	}
	return out, nil
}

// BroadcastProgress counts a broadcast's candidates and recorded outcomes
// as DispatchCounts does, reading less: a finished broadcast's counts are
// in its header (SetBroadcastCounts); otherwise a complete chunk's counts, stored
// in its result document when it completed, are read without its lists;
// only the chunks still being sent (a few per worker) are read in full,
// with their partial documents. So a poll costs one small read per chunk,
// not the whole broadcast's lists. A notification never broadcast has a
// zero Progress.
func (s *Store) BroadcastProgress(ctx context.Context, nid notify.ID) (Progress, error) {
	var p Progress
	hdr, err := s.Broadcast(ctx, nid)
	if errors.Is(err, notify.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	p.Found, p.Planned, p.Started = true, hdr.Planned, hdr.Started
	if hdr.Counts != nil {
		p.Counts = *hdr.Counts
		return p, nil
	}
	c := &p.Counts
	proj := options.FindOne().SetProjection(bson.D{{Key: "complete", Value: 1}, {Key: "counts", Value: 1}})
	for i := 0; ; i++ {
		raw, err := s.resultColl().FindOne(ctx, bson.D{{Key: "_id", Value: chunkKey(nid, i)}}, proj).Raw()
		if errors.Is(err, mongo.ErrNoDocuments) {
			break
		}
		if err != nil {
			return p, fmt.Errorf("mongostore: broadcast results %d: %w", i, err)
		}
		if done, _ := raw.Lookup("complete").BooleanOK(); done {
			if cd, ok := raw.Lookup("counts").DocumentOK(); ok {
				c.Candidates += numberValue(cd.Lookup("candidates"))
				c.Successful += numberValue(cd.Lookup("successful"))
				c.Failed += numberValue(cd.Lookup("failed"))
				c.Skipped += numberValue(cd.Lookup("skipped"))
				continue
			}
		}
		// A chunk still being sent, or completed before counts were
		// stored: its lists are counted.
		r, err := s.BroadcastResults(ctx, nid, i)
		if err != nil {
			return p, err
		}
		n := CountChunk(r)
		c.Candidates += n.Candidates
		c.Successful += n.Successful
		c.Failed += n.Failed
		c.Skipped += n.Skipped
	}
	c.Pending = max(0, c.Candidates-c.Successful-c.Failed-c.Skipped)
	return p, nil
}

// Progress is how far a broadcast is.
type Progress struct {
	// Found is false for a notification that was never broadcast.
	Found bool
	// Planned reports whether the candidates are all known: while the
	// plan is written, Candidates grows chunk by chunk.
	Planned bool
	Started time.Time
	Counts  notify.DispatchCounts
}

// CountChunk counts one chunk's distinct candidates and each subscriber's
// first outcome, as the API's dispatch view does.
func CountChunk(r *ChunkResults) notify.DispatchCounts {
	seen := make(map[string]bool, len(r.Candidates))
	var c notify.DispatchCounts
	for _, id := range r.Candidates {
		if !seen[id] {
			seen[id] = true
			c.Candidates++
		}
	}
	n := newOutcomeSet(r)
	c.Successful, c.Failed, c.Skipped = n.succ, n.fail, n.skip
	return c
}

func countsDoc(c notify.DispatchCounts) bson.D {
	return bson.D{
		{Key: "candidates", Value: c.Candidates},
		{Key: "successful", Value: c.Successful},
		{Key: "failed", Value: c.Failed},
		{Key: "skipped", Value: c.Skipped},
	}
}

// shortString cuts a stored string for a summary: serviceName is written
// by anonymous callers, up to a request body's size.
func shortString(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

// RecentBroadcasts returns the headers of the limit most recently started
// broadcasts, newest first. It reads the broadcast headers (one per
// notification ever broadcast, purged with it), not the notification
// collection, which in-app notifications can make large.
func (s *Store) RecentBroadcasts(ctx context.Context, limit int) ([]Broadcast, error) {
	cur, err := s.broadcastColl().Find(ctx, bson.D{}, options.Find().
		SetSort(bson.D{{Key: "started", Value: -1}}).
		SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("mongostore: recent broadcasts: %w", mapErr(err))
	}
	defer cur.Close(context.WithoutCancel(ctx))
	var out []Broadcast
	for cur.Next(ctx) {
		oid, ok := cur.Current.Lookup("_id").ObjectIDOK()
		if !ok {
			continue
		}
		b, err := broadcastFrom(notify.ID(oid), cur.Current)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if err := cur.Err(); err != nil {
		return nil, fmt.Errorf("mongostore: recent broadcasts: %w", mapErr(err))
	}
	return out, nil
}

// SetBroadcastCounts keeps a finished broadcast's counts in its header, or
// drops them (c nil) when a run starts.
func (s *Store) SetBroadcastCounts(ctx context.Context, nid notify.ID, c *notify.DispatchCounts) error {
	update := bson.D{{Key: "$unset", Value: bson.D{{Key: "counts", Value: ""}}}}
	if c != nil {
		update = bson.D{{Key: "$set", Value: bson.D{{Key: "counts", Value: countsDoc(*c)}}}}
	}
	if _, err := s.broadcastColl().UpdateOne(ctx, bson.D{{Key: "_id", Value: bson.ObjectID(nid)}}, update); err != nil {
		return fmt.Errorf("mongostore: broadcast counts: %w", err)
	}
	return nil
}
