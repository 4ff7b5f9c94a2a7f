package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/jmesfilter"
	"github.com/govkit/govkit/notify/mailmerge"
	"github.com/govkit/govkit/notify/sms"
)

// EmailSender sends one mail; *email.Sender implements it.
type EmailSender interface {
	Send(ctx context.Context, m email.Message) error
}

// SMSSender sends one text message; every sms provider implements it.
type SMSSender = sms.Sender

// Errors.
var (
	// ErrInvalidUser is a unicast push that names no subscriber, or one
	// without a confirmed subscription. The API answers 403 "invalid user",
	// as the original does.
	ErrInvalidUser = errors.New("invalid user")
	// ErrClosed is returned for dispatches started after Close.
	ErrClosed = errors.New("dispatch: dispatcher is closed")
	// errNoSender is a send on a channel whose sender is not configured.
	errNoSender = errors.New("no sender is configured for this channel")
)

// Settings are the parts of the service configuration dispatch acts on.
type Settings struct {
	// RestAPIRoot is restApiRoot, for the links of merged messages.
	RestAPIRoot string
	// HTTPHost is the configured httpHost ("" when unset): the public
	// scheme://host[:port] of the API, preferred to the request's.
	HTTPHost string
	// ChunkSize is notification.broadcastSubscriberChunkSize (default 1000).
	ChunkSize int
	// Guaranteed is notification.guaranteedBroadcastPushDispatchProcessing.
	Guaranteed bool
	// LogSkipped is notification.logSkippedBroadcastPushDispatches.
	LogSkipped bool
	// Bounce is email.bounce.enabled: successes are recorded and bounce
	// records stamped after each push email.
	Bounce bool
}

// SettingsFromConfig reads Settings from the service configuration.
func SettingsFromConfig(c *config.Config) Settings {
	return Settings{
		RestAPIRoot: c.RestAPIRoot,
		HTTPHost:    c.HTTPHost,
		ChunkSize:   c.Notification.BroadcastSubscriberChunkSize,
		Guaranteed:  c.Notification.GuaranteedBroadcastPushDispatchProcessing,
		LogSkipped:  c.Notification.LogSkippedBroadcastPushDispatches,
		Bounce:      c.Email.Bounce.Enabled,
	}
}

// Options configure a Dispatcher.
type Options struct {
	Settings
	Store Store
	// Email and SMS send the messages; a nil sender fails every send on
	// its channel (recorded as the subscriber's failure).
	Email EmailSender
	SMS   SMSSender
	// Filters evaluates the broadcast filters with the config's custom
	// functions; nil means an engine without custom functions.
	Filters *jmesfilter.Engine
	// Concurrency bounds the sends of one broadcast in flight at once
	// (default 16). Sends beyond the SMTP pool's connections wait for one.
	Concurrency int
	// BatchSize is how many results the writer stores per store call
	// (default 500). It also flushes every second, so progress shows.
	BatchSize int
	// RetryDelay is the first wait before retrying a failed store call
	// (default 200 ms, doubling, five attempts).
	RetryDelay time.Duration
	// Go runs a broadcast in the background; the HTTP server passes its
	// own, so that shutdown waits for broadcasts in flight. Nil: the
	// Dispatcher's goroutines, which Close waits for.
	Go func(fn func(ctx context.Context))
	// HTTPClient posts the async callback (default: 30 s timeout).
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock (default notify.Now).
	Now func() time.Time
}

// Dispatcher sends push notifications. It is safe for concurrent use.
type Dispatcher struct {
	o      Options
	log    *slog.Logger
	base   context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// New returns a Dispatcher.
func New(o Options) (*Dispatcher, error) {
	if o.Store.Subscriptions == nil || o.Store.Notifications == nil || o.Store.Results == nil || o.Store.Bounces == nil {
		return nil, errors.New("dispatch: incomplete store")
	}
	if o.Filters == nil {
		f, err := jmesfilter.New(nil)
		if err != nil {
			return nil, err
		}
		o.Filters = f
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 1000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 500
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 200 * time.Millisecond
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = notify.Now
	}
	base, cancel := context.WithCancel(context.Background())
	return &Dispatcher{o: o, log: o.Logger, base: base, cancel: cancel}, nil
}

// Close waits, within ctx, for the broadcasts in flight, then stops those
// still running. A stopped broadcast keeps its recorded results and stays
// in state sending, so a re-dispatch finishes it. Later dispatches of email
// and sms fail with ErrClosed.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		d.cancel()
		return nil
	case <-ctx.Done():
		d.cancel()
		<-done
		return ctx.Err()
	}
}

// Request is what a dispatch needs of the HTTP request that caused it.
type Request struct {
	// Host is the request's scheme://host[:port]: {http_host} when
	// neither the notification nor the config has one.
	Host string
	// User made the request; state changes record it as updatedBy.
	User *notify.UserProfile
}

// Job is one broadcast to run: all RunBroadcast needs, so a queue can
// carry it to another node.
type Job struct {
	NotificationID notify.ID
	// HTTPHost is the resolved {http_host} of the messages.
	HTTPHost string
	User     *notify.UserProfile
}

// IsAsync reports whether a broadcast answers before it is sent:
// asyncBroadcastPushNotification is true or a callback URL.
func IsAsync(n *notify.Notification) bool {
	switch v := n.AsyncBroadcastPushNotification.(type) {
	case bool:
		return v
	case string:
		return v != ""
	}
	return false
}

// Dispatch sends a notification that has just been created or replaced (see
// the package documentation) and returns it as it then is, with dispatch
// results loaded. sub is the subscription Check matched, if any. In-app
// notifications and those whose invalidBefore is in the future are returned
// unchanged, as is an asynchronous broadcast, which runs on after Dispatch
// returns. A failed send is not an error: it is the notification's state.
func (d *Dispatcher) Dispatch(ctx context.Context, n *notify.Notification, sub *notify.Subscription, req Request) (*notify.Notification, error) {
	switch n.Channel {
	case notify.ChannelEmail, notify.ChannelSMS:
	default:
		return n, nil
	}
	if !n.InvalidBefore.IsZero() && n.InvalidBefore.After(d.o.Now()) {
		return n, nil
	}
	host := mailmerge.ResolveHTTPHost(mailmerge.HostSources{Notification: n.HTTPHost, Config: d.o.HTTPHost, Request: req.Host})
	if !n.IsBroadcast {
		if err := d.unicast(context.WithoutCancel(ctx), n, sub, host, req.User); err != nil {
			return nil, err
		}
		return d.reload(ctx, n.ID)
	}
	done, err := d.start(Job{NotificationID: n.ID, HTTPHost: host, User: req.User})
	if err != nil {
		return nil, err
	}
	if IsAsync(n) {
		return n, nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return d.reload(ctx, n.ID)
}

// start runs a broadcast in-process, in the background: the place the
// queue-based runner takes over.
func (d *Dispatcher) start(job Job) (<-chan struct{}, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	d.wg.Add(1)
	done := make(chan struct{})
	run := func(ctx context.Context) {
		defer d.wg.Done()
		defer close(done)
		if err := d.RunBroadcast(ctx, job); err != nil {
			d.log.Error("notify: broadcast failed", "notification", job.NotificationID.Hex(), "err", err)
		}
	}
	if d.o.Go != nil {
		d.o.Go(run)
	} else {
		go run(d.base)
	}
	return done, nil
}

// reload reads a notification back with its dispatch results.
func (d *Dispatcher) reload(ctx context.Context, id notify.ID) (*notify.Notification, error) {
	n, err := d.o.Store.Notifications.FindByID(ctx, id.Hex())
	if err != nil {
		return nil, err
	}
	if err := d.o.Store.Results.LoadDispatch(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// setState records a notification's state (and who changed it).
func (d *Dispatcher) setState(ctx context.Context, id notify.ID, state string, user *notify.UserProfile) error {
	set := doc("state", state)
	if user != nil {
		set.Set("updatedBy", user.Fields())
	}
	return d.retry(ctx, func(ctx context.Context) error {
		return d.o.Store.Notifications.UpdateByID(ctx, id.Hex(), doc("$set", set))
	})
}

// retry runs op until it succeeds, five attempts at most, waiting longer
// each time: store calls fail transiently (a busy SQLite file, a replica
// set election) and a broadcast should not end on one such failure.
// notify.ErrNotFound is not retried.
func (d *Dispatcher) retry(ctx context.Context, op func(context.Context) error) error {
	wait := d.o.RetryDelay
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = op(ctx); err == nil || errors.Is(err, notify.ErrNotFound) {
			return err
		}
		if attempt == 4 {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("%w (after: %v)", ctx.Err(), err)
		}
		wait *= 2
	}
	return err
}
