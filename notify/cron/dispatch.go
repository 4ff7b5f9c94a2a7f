package cron

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/jmesfilter"
	"github.com/govkit/govkit/notify/mongostore"
)

const (
	// livePage is how many due notifications one query reads.
	livePage = 500
	// liveConcurrency bounds the unicasts sent at once by one run.
	liveConcurrency = 8
	// StaleAfter is how long a broadcast in state sending may show no
	// progress before it is dispatched again, as in the original.
	StaleAfter = 600 * time.Second
)

// claim changes a notification only if nobody changed it since it was
// read (same state, same updated): of however many runs on however many
// nodes read that version, only the one whose claim is recorded first
// makes the change. The claim names the notification, the job and the
// version, so a later version can be claimed again.
func (s *Service) claim(ctx context.Context, job string, n *notify.Notification, set notify.Fields) (bool, error) {
	key := job + "/" + n.ID.Hex() + "/" + strconv.FormatInt(n.Updated.UnixMilli(), 10)
	ok, err := s.o.Store.Claim(ctx, key)
	if err != nil || !ok {
		return false, err
	}
	c, err := s.o.Store.Notifications().UpdateMany(ctx,
		doc("id", n.ID, "state", n.State, "updated", n.Updated),
		doc("$set", set))
	if err != nil {
		_ = s.o.Store.Unclaim(context.WithoutCancel(ctx), key)
		return false, err
	}
	return c == 1, nil
}

// asyncValue is the original's asyncBroadcastPushNotification ||= true: a
// callback URL (or true) is kept, anything else becomes true, so that a
// run of cron never waits for a broadcast.
func asyncValue(n *notify.Notification) any {
	if dispatch.IsAsync(n) {
		return n.AsyncBroadcastPushNotification
	}
	return true
}

// DispatchLiveNotifications sends the push notifications that were held
// until invalidBefore and whose time has come: email and sms
// notifications in state new with invalidBefore in the past, unicasts and
// broadcasts alike. Each is claimed first by changing its state from new
// to sending in one conditional update, so that overlapping runs (a slow
// run and the next, or two nodes) never send one twice; broadcasts become
// asynchronous, as in the original, and run on in the dispatcher. It
// returns how many notifications it dispatched.
func (s *Service) DispatchLiveNotifications(ctx context.Context) (int, error) {
	filter := doc(
		"state", notify.StateNew,
		"channel", doc("$ne", notify.ChannelInApp),
		"invalidBefore", doc("$lt", s.now()),
	)
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, liveConcurrency)
		mu    sync.Mutex
		count int
		errs  []error
	)
	for ctx.Err() == nil {
		page, err := s.o.Store.Notifications().Find(ctx, mongostore.Query{Filter: filter, Sort: doc("id", 1), Limit: livePage})
		if err != nil {
			errs = append(errs, err)
			break
		}
		claimed := 0
		for _, n := range page {
			async := asyncValue(n)
			ok, err := s.claim(ctx, DispatchLiveNotifications, n, doc("state", notify.StateSending, "asyncBroadcastPushNotification", async, "updatedBy", User.Fields()))
			if err != nil {
				errs = append(errs, fmt.Errorf("claim %s: %w", n.ID.Hex(), err))
				continue
			}
			if !ok {
				continue
			}
			claimed++
			n.State, n.AsyncBroadcastPushNotification = notify.StateSending, async
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				sent, err := s.dispatchLive(ctx, n)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if sent {
					count++
				}
			}()
		}
		if claimed == 0 || len(page) < livePage {
			break
		}
	}
	wg.Wait()
	if count > 0 {
		s.log.Info("cron: live notifications dispatched", "count", count)
	}
	return count, errors.Join(errs...)
}

// dispatchLive sends one claimed notification. A unicast is checked again
// as the API checks it: one whose subscriber is gone (or that is otherwise
// invalid) ends in state error instead of being retried every minute.
func (s *Service) dispatchLive(ctx context.Context, n *notify.Notification) (sent bool, err error) {
	id := n.ID.Hex()
	notes := s.o.Store.Notifications()
	before := n.UserChannelID
	sub, err := s.o.Dispatcher.Check(ctx, n)
	if err != nil {
		var syntax *jmesfilter.SyntaxError
		if errors.Is(err, dispatch.ErrInvalidUser) || errors.As(err, &syntax) {
			s.log.Warn("cron: held notification cannot be sent", "notification", id, "err", err)
			return false, notes.UpdateByID(ctx, id, doc("$set", doc("state", notify.StateError)))
		}
		// The store failed: put it back for the next run.
		_ = notes.UpdateByID(ctx, id, doc("$set", doc("state", notify.StateNew)))
		return false, fmt.Errorf("check %s: %w", id, err)
	}
	if n.UserChannelID != before {
		if err := notes.UpdateByID(ctx, id, doc("$set", doc("userChannelId", n.UserChannelID))); err != nil {
			return false, fmt.Errorf("notification %s: %w", id, err)
		}
	}
	if _, err := s.o.Dispatcher.Dispatch(ctx, n, sub, s.request(n)); err != nil {
		if errors.Is(err, dispatch.ErrClosed) {
			// Shutting down before anything was sent: the next run
			// (here or on another node) takes it.
			_ = notes.UpdateByID(context.WithoutCancel(ctx), id, doc("$set", doc("state", notify.StateNew)))
		}
		return false, fmt.Errorf("dispatch %s: %w", id, err)
	}
	return true, nil
}

// ReDispatchBroadcastPushNotifications picks up broadcasts whose node
// stopped: email and sms broadcasts in state sending that have shown no
// progress for StaleAfter — neither the notification nor any of its
// recorded results changed. Each is claimed (its updated moved to now, on
// the condition that it is unchanged) and dispatched again,
// asynchronously; the dispatcher resumes it, sending only to subscribers
// without a recorded outcome. It returns how many it dispatched.
func (s *Service) ReDispatchBroadcastPushNotifications(ctx context.Context) (int, error) {
	now := s.now()
	cutoff := now.Add(-StaleAfter)
	notes := s.o.Store.Notifications()
	page, err := notes.Find(ctx, mongostore.Query{
		Filter: doc(
			"state", notify.StateSending,
			"channel", doc("$ne", notify.ChannelInApp),
			"isBroadcast", true,
			"updated", doc("$lt", cutoff),
		),
		Sort:  doc("id", 1),
		Limit: livePage,
	})
	if err != nil {
		return 0, err
	}
	var errs []error
	count := 0
	for _, n := range page {
		last, err := s.o.Store.LastDispatchActivity(ctx, n.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if last.After(cutoff) {
			// Alive on some node: carry its progress over to the
			// notification, so the next check waits from there.
			if _, err := s.o.Store.Notifications().UpdateMany(ctx, doc("id", n.ID, "state", n.State, "updated", n.Updated), doc("$set", doc("updated", last))); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		async := asyncValue(n)
		ok, err := s.claim(ctx, ReDispatchBroadcastPushNotifications, n, doc("updated", now, "asyncBroadcastPushNotification", async, "updatedBy", User.Fields()))
		if err != nil {
			errs = append(errs, fmt.Errorf("claim %s: %w", n.ID.Hex(), err))
			continue
		}
		if !ok {
			continue
		}
		n.AsyncBroadcastPushNotification = async
		s.log.Warn("cron: stalled broadcast dispatched again", "notification", n.ID.Hex(), "lastActivity", last)
		if _, err := s.o.Dispatcher.Dispatch(ctx, n, nil, s.request(n)); err != nil {
			errs = append(errs, fmt.Errorf("dispatch %s: %w", n.ID.Hex(), err))
			continue
		}
		count++
	}
	return count, errors.Join(errs...)
}
