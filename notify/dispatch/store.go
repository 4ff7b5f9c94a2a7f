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

// Results is the dispatch side collection of broadcasts.
type Results interface {
	AddDispatchCandidates(ctx context.Context, notificationID notify.ID, subscriptionIDs []string) (int64, error)
	RecordDispatch(ctx context.Context, notificationID notify.ID, results []notify.DispatchResult) (int64, error)
	DispatchPending(ctx context.Context, notificationID notify.ID, after string, limit int64) ([]string, error)
	DispatchCounts(ctx context.Context, notificationID notify.ID) (notify.DispatchCounts, error)
	ListDispatch(ctx context.Context, notificationID notify.ID, q mongostore.DispatchQuery) ([]notify.DispatchResult, error)
	LoadDispatch(ctx context.Context, n *notify.Notification) error
}

// Store is the storage a Dispatcher works on.
type Store struct {
	Subscriptions Subscriptions
	Notifications Notifications
	Bounces       Bounces
	Results       Results
}

// FromMongo returns the Store of a mongostore.Store.
func FromMongo(s *mongostore.Store) Store {
	return Store{
		Subscriptions: s.Subscriptions(),
		Notifications: s.Notifications(),
		Bounces:       s.Bounces(),
		Results:       s,
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
