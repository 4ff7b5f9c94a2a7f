package dispatch

import (
	"context"
	"time"

	"github.com/govkit/govkit/notify"
)

// unicast sends a notification to its one recipient and records the
// outcome as its state. Only a store failure is an error.
func (d *Dispatcher) unicast(ctx context.Context, n *notify.Notification, sub *notify.Subscription, host string, user *notify.UserProfile) error {
	state := notify.StateSent
	if err := d.sendTo(ctx, newPush(n, host), sub, n.UserChannelID); err != nil {
		state = notify.StateError
		d.log.Warn("notify: unicast push not sent", "notification", n.ID.Hex(), "channel", n.Channel, "err", err)
	} else if n.Channel == notify.ChannelEmail {
		d.stampBounces(ctx, n.Channel, n.Updated, []string{n.UserChannelID})
	}
	return d.setState(ctx, n.ID, state, profileFields(user))
}

// stampBounces marks the active bounce records of addresses that were just
// sent a notification, as the original does after each push: the inbound
// bounce handler and the deleteBounces cron job compare a bounce's date with
// latestNotificationStarted to tell bounces of this mail from older ones.
// A failure is logged: the mail went out, the notification is not in error.
func (d *Dispatcher) stampBounces(ctx context.Context, channel string, started time.Time, userChannelIDs []string) {
	if !d.o.Bounce || len(userChannelIDs) == 0 {
		return
	}
	const batch = 500
	for start := 0; start < len(userChannelIDs); start += batch {
		ids := userChannelIDs[start:min(start+batch, len(userChannelIDs))]
		in := make([]any, len(ids))
		for i, id := range ids {
			in[i] = id
		}
		filter := doc(
			"state", notify.BounceActive,
			"channel", channel,
			"userChannelId", doc("$in", in),
			"$or", []any{
				doc("latestNotificationStarted", nil),
				doc("latestNotificationStarted", doc("$lt", started)),
			},
		)
		update := doc("$set", doc(
			"latestNotificationStarted", started,
			"latestNotificationEnded", d.o.Now(),
		))
		err := d.retry(ctx, func(ctx context.Context) error {
			_, err := d.o.Store.Bounces.UpdateMany(ctx, filter, update)
			return err
		})
		if err != nil {
			d.log.Error("notify: bounce records not updated", "err", err)
			return
		}
	}
}
