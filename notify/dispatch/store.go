package dispatch

import (
	"context"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// Subscriptions is what dispatch reads of the subscription collection.
type Subscriptions interface {
	Find(ctx context.Context, q mongostore.Query) ([]*notify.Subscription, error)
}

// Notifications is what dispatch reads and writes of the notification
// collection.
type Notifications interface {
	FindByID(ctx context.Context, id string) (*notify.Notification, error)
	UpdateByID(ctx context.Context, id string, update any) error
}

// Bounces is what dispatch writes of the bounce collection.
type Bounces interface {
	UpdateMany(ctx context.Context, filter, update any) (int64, error)
}

// Broadcasts is where a broadcast's plan, chunks and results live (see
// notify/mongostore).
type Broadcasts interface {
	StartBroadcast(ctx context.Context, b mongostore.Broadcast) (mongostore.Broadcast, bool, error)
	Broadcast(ctx context.Context, nid notify.ID) (mongostore.Broadcast, error)
	SetBroadcastPlanned(ctx context.Context, nid notify.ID, run string, chunks int, candidates int64) error
	PlanChunks(ctx context.Context, nid notify.ID, p mongostore.Plan) (int, int64, error)
	PlannedCandidates(ctx context.Context, nid notify.ID) (map[string]bool, int, error)
	BroadcastChunk(ctx context.Context, nid notify.ID, index int) ([]*notify.Subscription, error)
	BroadcastResults(ctx context.Context, nid notify.ID, index int) (*mongostore.ChunkResults, error)
	RecordChunk(ctx context.Context, nid notify.ID, index, part int, results []notify.DispatchResult) (int, error)
	CompleteChunk(ctx context.Context, nid notify.ID, index int, r *mongostore.ChunkResults) error
	DeleteBroadcastSnapshots(ctx context.Context, nid notify.ID, chunks int) error
	TouchBroadcast(ctx context.Context, nid notify.ID) error
	LoadDispatch(ctx context.Context, n *notify.Notification) error
	// SetBroadcastCounts keeps a finished broadcast's counts in its
	// header (nil: drops them, as a run starts); BroadcastProgress reads
	// them, or counts from the chunks' results.
	SetBroadcastCounts(ctx context.Context, nid notify.ID, c *notify.DispatchCounts) error
	BroadcastProgress(ctx context.Context, nid notify.ID) (mongostore.Progress, error)
}

// Store is the storage a Dispatcher works on.
type Store struct {
	Subscriptions Subscriptions
	Notifications Notifications
	Bounces       Bounces
	Broadcasts    Broadcasts
}

// FromMongo returns the Store of a mongostore.Store.
func FromMongo(s *mongostore.Store) Store {
	return Store{
		Subscriptions: s.Subscriptions(),
		Notifications: s.Notifications(),
		Bounces:       s.Bounces(),
		Broadcasts:    s,
	}
}

// doc builds a document from alternating keys and values.
func doc(kv ...any) notify.Fields {
	f := make(notify.Fields, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		f = append(f, notify.Field{Key: kv[i].(string), Value: kv[i+1]})
	}
	return f
}
