package httpapi

import (
	"errors"
	"log/slog"
	"net/url"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/cron"
	"github.com/govkit/govkit/notify/cron/timespec"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/feed"
)

// CronOptions adjust the scheduled jobs of a node that runs them.
type CronOptions struct {
	// Locker takes the per-run locks; nil keeps them in the queue's Redis
	// (in this process on the embedded queue, which serves one node).
	Locker cron.Locker
	// Clock is the jobs' time (nil: the system clock); tests pass a
	// cron.ManualClock.
	Clock cron.Clock
	// OnRun is told of each run (tests).
	OnRun func(cron.Run)
}

// Dispatcher returns the dispatcher of the notification routes, which
// the scheduled jobs share so that what they send goes the way a
// request's would (and shutdown waits for it).
func (s *Server) Dispatcher() *dispatch.Dispatcher { return s.disp }

// Cron returns the scheduled jobs of this node, nil when it runs none.
func (a *App) Cron() *cron.Service { return a.cron }

func (a *App) startCron(cfg *config.Config, o CronOptions, log *slog.Logger) error {
	d := a.Server.Dispatcher()
	if d == nil {
		return errors.New("cron: the notification routes have no dispatcher")
	}
	locker := o.Locker
	if locker == nil && !a.Queue.Embedded() {
		locker = cron.NewRedisLocker(a.Redis, a.RedisPrefix+"cron:")
	}
	svc, err := cron.New(cron.Options{
		Config: cfg, Store: a.Store, Dispatcher: d,
		Clock: o.Clock, Locker: locker, Logger: log, OnRun: o.OnRun,
		Feeds: feed.NewFetcher(feed.Options{Client: a.outbound.Client(0)}),
	})
	if err != nil {
		return err
	}
	svc.Start()
	a.cron = svc
	return nil
}

// checkRss refuses an RSS feed configuration with settings the cron could
// not run — a time spec it cannot read, a url that is not http or https —
// with a 400 naming the field; the original accepts them and its cron
// fails later. Settings left out are accepted, as in the original (such a
// feed is logged and not scheduled until they are set).
func checkRss(c *notify.Configuration) error {
	v, ok := c.Value.(notify.Fields)
	if c.Name != cron.ConfigNotification || !ok {
		return nil
	}
	r, _ := v.Get("rss")
	rss, ok := r.(notify.Fields)
	if !ok {
		return nil
	}
	if ts, ok := rss.Get("timeSpec"); ok {
		s, _ := ts.(string)
		if _, err := timespec.Parse(s); err != nil {
			return &notify.FieldError{Field: "value.rss.timeSpec", Rule: err.Error()}
		}
	}
	if raw, ok := rss.Get("url"); ok {
		s, _ := raw.(string)
		u, err := url.Parse(s)
		if err == nil {
			err = feed.CheckURL(u)
		}
		if err != nil {
			return &notify.FieldError{Field: "value.rss.url", Rule: "must be an http or https URL"}
		}
	}
	return nil
}
