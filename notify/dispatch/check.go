package dispatch

import (
	"context"
	"fmt"
	"regexp"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// FilterField is the notification field holding the filter on subscribers'
// data.
const FilterField = "broadcastPushNotificationSubscriptionFilter"

// Check validates a notification before it is created or replaced, and
// returns the subscription a unicast push goes to (nil for in-app
// notifications, broadcasts, and unicasts that skip the subscription
// check). It fills in n.UserChannelID from that subscription when the
// request named only a userId.
//
// Errors: ErrInvalidUser (403), a *jmesfilter.SyntaxError for a filter that
// cannot be used (400), or a store error.
func (d *Dispatcher) Check(ctx context.Context, n *notify.Notification) (*notify.Subscription, error) {
	if !n.IsBroadcast && n.SkipSubscriptionConfirmationCheck && n.UserChannelID == "" {
		return nil, ErrInvalidUser
	}
	// The original checks the filter only on broadcast push notifications;
	// a filter that cannot run is refused wherever it is written, so that a
	// notification re-sent as a broadcast later cannot carry one.
	if err := d.CheckFilter(n.BroadcastPushNotificationSubscriptionFilter); err != nil {
		return nil, err
	}
	if n.Channel == notify.ChannelInApp || n.SkipSubscriptionConfirmationCheck || n.IsBroadcast {
		return nil, nil
	}
	if n.UserChannelID == "" && n.UserID == "" {
		return nil, ErrInvalidUser
	}
	where := doc("serviceName", n.ServiceName, "state", notify.StateConfirmed, "channel", n.Channel)
	if n.UserChannelID != "" {
		// The whole value, ignoring case: email addresses differ in case
		// only by accident.
		where.Set("userChannelId", doc("$regex", "^"+regexp.QuoteMeta(n.UserChannelID)+"$", "$options", "i"))
	}
	if n.UserID != "" {
		where.Set("userId", n.UserID)
	}
	subs, err := d.o.Store.Subscriptions.Find(ctx, mongostore.Query{Filter: where, Sort: doc("id", 1), Limit: 1})
	if err != nil {
		return nil, fmt.Errorf("dispatch: find subscription: %w", err)
	}
	if len(subs) == 0 {
		return nil, ErrInvalidUser
	}
	n.UserChannelID = subs[0].UserChannelID
	return subs[0], nil
}

// CheckFilter validates a notification's
// broadcastPushNotificationSubscriptionFilter, with the custom functions
// of the config: a *jmesfilter.SyntaxError (400) when it cannot be used.
// An empty filter is none.
func (d *Dispatcher) CheckFilter(expr string) error {
	if expr == "" {
		return nil
	}
	return d.o.Filters.Validate(FilterField, expr)
}
