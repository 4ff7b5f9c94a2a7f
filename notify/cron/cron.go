package cron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/cron/timespec"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/feed"
	"github.com/govkit/govkit/notify/mongostore"
)

// Job names, as the config keys under cron name them.
const (
	PurgeData                            = "purgeData"
	DispatchLiveNotifications            = "dispatchLiveNotifications"
	CheckRssConfigUpdates                = "checkRssConfigUpdates"
	DeleteBounces                        = "deleteBounces"
	ReDispatchBroadcastPushNotifications = "reDispatchBroadcastPushNotifications"
)

// Dispatcher sends notifications: *dispatch.Dispatcher, the same one the
// API uses, so that what cron sends goes the way a request's would.
type Dispatcher interface {
	Check(ctx context.Context, n *notify.Notification) (*notify.Subscription, error)
	Dispatch(ctx context.Context, n *notify.Notification, sub *notify.Subscription, req dispatch.Request) (*notify.Notification, error)
}

// User is who cron's changes are recorded as (updatedBy, createdBy): the
// profile the original's self-calls get, requests from the loopback
// address of an admin IP.
var User = notify.UserProfile{SecurityID: "127.0.0.1", AuthnStrategy: notify.AuthnIP, Role: notify.RoleSuperAdmin}

// Options configure a Service. Config, Store and Dispatcher are required.
type Options struct {
	Config     *config.Config
	Store      *mongostore.Store
	Dispatcher Dispatcher
	// Clock is the time jobs are scheduled and run by (nil: the system
	// clock); tests move a ManualClock instead of waiting.
	Clock Clock
	// Locker takes the per-run locks (nil: a MemoryLocker). With several
	// nodes on one Redis, pass a RedisLocker.
	Locker Locker
	// Location is the time zone of the time specs (nil: time.Local, the
	// process time zone, as the original).
	Location *time.Location
	// Feeds fetches RSS feeds (nil: a Fetcher with the package defaults).
	Feeds  *feed.Fetcher
	Logger *slog.Logger
	// OnRun, when set, is told of every scheduled run when it ends.
	OnRun func(Run)
}

// Service is the cron of a node that runs it.
type Service struct {
	o     Options
	log   *slog.Logger
	specs map[string]*timespec.Spec
	sched *scheduler

	// feeds are the RSS schedules this node keeps, by configuration id.
	feedsMu sync.Mutex
	feeds   map[string]feedTask
}

// New checks the time specs of the jobs (an invalid one is an error naming
// its key) and returns a Service ready to Start.
func New(o Options) (*Service, error) {
	if o.Config == nil || o.Store == nil || o.Dispatcher == nil {
		return nil, errors.New("cron: Config, Store and Dispatcher are required")
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Locker == nil {
		o.Locker = NewMemoryLocker(o.Clock)
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Feeds == nil {
		o.Feeds = feed.NewFetcher(feed.Options{})
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := o.Config.Cron
	s := &Service{o: o, log: o.Logger, specs: map[string]*timespec.Spec{}, feeds: map[string]feedTask{}}
	var errs []error
	for name, src := range map[string]string{
		PurgeData:                            c.PurgeData.TimeSpec,
		DispatchLiveNotifications:            c.DispatchLiveNotifications.TimeSpec,
		CheckRssConfigUpdates:                c.CheckRssConfigUpdates.TimeSpec,
		DeleteBounces:                        c.DeleteBounces.TimeSpec,
		ReDispatchBroadcastPushNotifications: c.ReDispatchBroadcastPushNotifications.TimeSpec,
	} {
		sp, err := timespec.Parse(src)
		if err != nil {
			errs = append(errs, fmt.Errorf("cron.%s.timeSpec: %w", name, err))
			continue
		}
		s.specs[name] = sp
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	s.sched = newScheduler(o.Clock, o.Locker, o.Location, s.log, o.OnRun)
	return s, nil
}

// Start schedules the jobs. Runs happen in the background until Stop.
func (s *Service) Start() {
	jobs := []struct {
		name string
		lock bool
		run  func(context.Context) error
	}{
		{PurgeData, true, func(ctx context.Context) error { _, err := s.PurgeData(ctx); return err }},
		{DispatchLiveNotifications, true, func(ctx context.Context) error { _, err := s.DispatchLiveNotifications(ctx); return err }},
		// Each node keeps its own RSS schedules; the polls take the locks.
		{CheckRssConfigUpdates, false, s.CheckRssConfigUpdates},
		{DeleteBounces, true, func(ctx context.Context) error { _, err := s.DeleteBounces(ctx); return err }},
		{ReDispatchBroadcastPushNotifications, true, func(ctx context.Context) error {
			_, err := s.ReDispatchBroadcastPushNotifications(ctx)
			return err
		}},
	}
	for _, j := range jobs {
		s.sched.add(j.name, s.specs[j.name], j.lock, j.run)
	}
	s.log.Info("cron started", "jobs", len(jobs), "timezone", s.o.Location.String())
}

// Stop ends the schedules and waits, within ctx, for runs in progress.
// Broadcasts a run started go on in the dispatcher.
func (s *Service) Stop(ctx context.Context) error {
	return s.sched.stop(ctx)
}

func (s *Service) now() time.Time { return s.o.Clock.Now().UTC().Truncate(time.Millisecond) }

// request is what cron's dispatches carry in place of an HTTP request:
// the original's self-calls go to internalHttpHost, else to the
// notification's or the configured httpHost; the message's {http_host}
// prefers the notification's and the configured one anyway.
func (s *Service) request(n *notify.Notification) dispatch.Request {
	host := s.o.Config.InternalHTTPHost
	if host == "" {
		host = n.HTTPHost
	}
	if host == "" {
		host = s.o.Config.HTTPHost
	}
	if host == "" {
		host = fmt.Sprintf("http://localhost:%d", s.o.Config.Port)
	}
	u := User
	return dispatch.Request{Host: host, User: &u}
}

// doc builds a document from alternating keys and values.
func doc(kv ...any) notify.Fields {
	f := make(notify.Fields, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		f = append(f, notify.Field{Key: kv[i].(string), Value: kv[i+1]})
	}
	return f
}

// days is a retention in days as a duration (fractions allowed).
func days(d float64) time.Duration { return time.Duration(d * float64(24*time.Hour)) }
