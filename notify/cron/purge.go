package cron

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// Purged counts what one purgeData run deleted.
type Purged struct {
	PushNotifications         int64 // sent or failed push notifications past retention
	ExpiredInAppNotifications int64
	DeletedInAppNotifications int64
	NonConfirmedSubscriptions int64
	DeletedBounces            int64
	ExpiredAccessTokens       int64
	DispatchRecords           int64 // broadcast candidates and results of purged notifications
	Claims                    int64 // claims of earlier runs (see mongostore.Store.Claim)
}

// claimRetention is how long the claim of a run is kept.
const claimRetention = 24 * time.Hour

// purgePage is how many notifications are deleted per round trip.
const purgePage = 5000

// PurgeData deletes what the original's purgeData deletes, each kind by
// its own retention (cron.purgeData; a retention that is not set falls
// back to defaultRetentionDays):
//
//   - push (email, sms) notifications created before the retention that
//     are not new or sending, with the broadcast candidates and results
//     kept beside them;
//   - in-app notifications whose validTill is older than the retention;
//   - every in-app notification in state deleted;
//   - subscriptions that are not confirmed (unconfirmed, deleted) and
//     were last updated before the retention;
//   - deleted bounce records last updated before the retention;
//   - access tokens with a ttl that expired more than the retention ago
//     (created + ttl + retention is past); tokens without ttl stay.
//
// Every kind is attempted; the errors are joined.
func (s *Service) PurgeData(ctx context.Context) (Purged, error) {
	pd := s.o.Config.Cron.PurgeData
	now := s.now()
	var p Purged
	var errs []error
	try := func(what string, n *int64, fn func() (int64, error)) {
		c, err := fn()
		*n += c
		if err != nil {
			errs = append(errs, fmt.Errorf("purge %s: %w", what, err))
		}
	}
	try("push notifications", &p.PushNotifications, func() (int64, error) {
		return s.purgeNotifications(ctx, doc(
			"channel", doc("$ne", notify.ChannelInApp),
			"state", doc("$nin", []any{notify.StateNew, notify.StateSending}),
			"created", doc("$lt", now.Add(-days(pd.PushNotificationRetentionDays))),
		), &p.DispatchRecords)
	})
	try("expired in-app notifications", &p.ExpiredInAppNotifications, func() (int64, error) {
		return s.purgeNotifications(ctx, doc(
			"channel", notify.ChannelInApp,
			"validTill", doc("$lt", now.Add(-days(pd.ExpiredInAppNotificationRetentionDays))),
		), &p.DispatchRecords)
	})
	try("deleted in-app notifications", &p.DeletedInAppNotifications, func() (int64, error) {
		return s.purgeNotifications(ctx, doc("channel", notify.ChannelInApp, "state", notify.StateDeleted), &p.DispatchRecords)
	})
	try("non-confirmed subscriptions", &p.NonConfirmedSubscriptions, func() (int64, error) {
		return s.o.Store.Subscriptions().DeleteMany(ctx, doc(
			"state", doc("$ne", notify.StateConfirmed),
			"updated", doc("$lt", now.Add(-days(pd.NonConfirmedSubscriptionRetentionDays))),
		))
	})
	try("deleted bounces", &p.DeletedBounces, func() (int64, error) {
		return s.o.Store.Bounces().DeleteMany(ctx, doc(
			"state", notify.BounceDeleted,
			"updated", doc("$lt", now.Add(-days(pd.DeletedBounceRetentionDays))),
		))
	})
	try("expired access tokens", &p.ExpiredAccessTokens, func() (int64, error) {
		return s.purgeAccessTokens(ctx, now.Add(-days(pd.ExpiredAccessTokenRetentionDays)))
	})
	// Claims only matter while the runs that made them overlap; one whose
	// change was never made (a node died in between) is forgotten here,
	// and the change is made by the next run.
	try("claims", &p.Claims, func() (int64, error) { return s.o.Store.PurgeClaims(ctx, now.Add(-claimRetention)) })
	if p != (Purged{}) {
		s.log.Info("cron: purged", "pushNotifications", p.PushNotifications,
			"expiredInAppNotifications", p.ExpiredInAppNotifications, "deletedInAppNotifications", p.DeletedInAppNotifications,
			"nonConfirmedSubscriptions", p.NonConfirmedSubscriptions, "deletedBounces", p.DeletedBounces,
			"expiredAccessTokens", p.ExpiredAccessTokens, "dispatchRecords", p.DispatchRecords, "claims", p.Claims)
	}
	return p, errors.Join(errs...)
}

// purgeNotifications deletes the notifications filter selects, a page at
// a time: a broadcast's candidates and results first, then the
// notifications, so that a run cut short leaves nothing orphaned (the
// notifications left are purged by the next run).
func (s *Service) purgeNotifications(ctx context.Context, filter notify.Fields, dispatchRecords *int64) (int64, error) {
	coll := s.o.Store.Notifications()
	var total int64
	for {
		page, err := coll.Find(ctx, mongostore.Query{Filter: filter, Projection: doc("id", 1, "isBroadcast", 1), Limit: purgePage})
		if err != nil || len(page) == 0 {
			return total, err
		}
		ids := make([]any, len(page))
		var broadcasts []notify.ID
		for i, n := range page {
			ids[i] = n.ID
			if n.IsBroadcast {
				broadcasts = append(broadcasts, n.ID)
			}
		}
		if len(broadcasts) > 0 {
			c, err := s.o.Store.DeleteDispatchOf(ctx, broadcasts)
			*dispatchRecords += c
			if err != nil {
				return total, err
			}
		}
		c, err := coll.DeleteMany(ctx, doc("id", doc("$in", ids)))
		total += c
		if err != nil {
			return total, err
		}
		if len(page) < purgePage || c == 0 {
			return total, nil
		}
	}
}

// purgeAccessTokens deletes tokens whose ttl ran out before cutoff.
func (s *Service) purgeAccessTokens(ctx context.Context, cutoff time.Time) (int64, error) {
	coll := s.o.Store.AccessTokens()
	toks, err := coll.Find(ctx, mongostore.Query{Filter: doc("ttl", doc("$gte", 0), "created", doc("$lt", cutoff))})
	if err != nil {
		return 0, err
	}
	var ids []any
	for _, t := range toks {
		if t.TTL != nil && t.Created.Add(time.Duration(*t.TTL)*time.Second).Before(cutoff) {
			ids = append(ids, t.ID)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return coll.DeleteMany(ctx, doc("id", doc("$in", ids)))
}
