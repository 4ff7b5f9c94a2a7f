package cron

import (
	"context"
	"errors"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// DeleteBounces retires the bounce records of addresses that got their
// latest notification without bouncing: an active record whose latest
// notification ended more than cron.deleteBounces
// .minLapsedHoursSinceLatestNotificationEnded hours ago, and whose newest
// bounce message is not later than that notification's start, is set to
// state deleted (purgeData removes it later). A record that received a
// bounce while this run looked at it is left for the next run. It returns
// how many records it retired.
func (s *Service) DeleteBounces(ctx context.Context) (int64, error) {
	hours := s.o.Config.Cron.DeleteBounces.MinLapsedHoursSinceLatestNotificationEnded
	cutoff := s.now().Add(-time.Duration(hours * float64(time.Hour)))
	coll := s.o.Store.Bounces()
	list, err := coll.Find(ctx, mongostore.Query{Filter: doc(
		"state", notify.BounceActive,
		"latestNotificationEnded", doc("$lt", cutoff),
		"latestNotificationStarted", doc("$ne", nil),
		"bounceMessages", doc("$ne", nil),
	)})
	if err != nil {
		return 0, err
	}
	var (
		count int64
		errs  []error
	)
	for _, b := range list {
		if b.LatestNotificationStarted == nil || len(b.BounceMessages) == 0 || b.BounceMessages[0].Date.IsZero() ||
			b.BounceMessages[0].Date.After(*b.LatestNotificationStarted) {
			continue
		}
		n, err := coll.UpdateMany(ctx,
			doc("id", b.ID, "state", notify.BounceActive, "updated", b.Updated),
			doc("$set", doc("state", notify.BounceDeleted, "updatedBy", User.Fields())))
		count += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	if count > 0 {
		s.log.Info("cron: bounce records retired", "count", count)
	}
	return count, errors.Join(errs...)
}
