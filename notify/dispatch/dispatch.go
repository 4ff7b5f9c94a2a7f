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
	"github.com/govkit/govkit/notify/outbound"
	"github.com/govkit/govkit/notify/queue"
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
	// ErrQueueUnavailable is a broadcast that could not be handed to the
	// queue backend. The notification stays in state sending, so the
	// reDispatchBroadcastPushNotifications cron job takes it up again.
	ErrQueueUnavailable = errors.New("the queue backend is unavailable")
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
	// InternalHTTPHost is internalHttpHost: {http_host} of what the cron
	// jobs send (Redispatch) when neither the notification nor the config
	// names one, as the original's self-calls to that host make it.
	InternalHTTPHost string
	// ChunkSize is notification.broadcastSubscriberChunkSize (default
	// 1000, at most MaxChunkSize).
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
		RestAPIRoot:      c.RestAPIRoot,
		HTTPHost:         c.HTTPHost,
		InternalHTTPHost: c.InternalHTTPHost,
		ChunkSize:        c.Notification.BroadcastSubscriberChunkSize,
		Guaranteed:       c.Notification.GuaranteedBroadcastPushDispatchProcessing,
		LogSkipped:       c.Notification.LogSkippedBroadcastPushDispatches,
		Bounce:           c.Email.Bounce.Enabled,
	}
}

// MaxChunkSize bounds notification.broadcastSubscriberChunkSize: a chunk
// is one queue job and one result document, which must stay well under a
// document's 16 MB with every failure's error in it.
const MaxChunkSize = 10000

// Options configure a Dispatcher.
type Options struct {
	Settings
	Store Store
	// Backend is the queue backend broadcasts run through (required).
	Backend *queue.Backend
	// Email and SMS send the messages; a nil sender fails every send on
	// its channel (recorded as the subscriber's failure).
	Email EmailSender
	SMS   SMSSender
	// Filters evaluates the broadcast filters with the config's custom
	// functions; nil means an engine without custom functions.
	Filters *jmesfilter.Engine
	// Concurrency bounds the sends of one chunk in flight at once
	// (default 16). Sends beyond the SMTP pool's connections wait for one.
	Concurrency int
	// Workers is how many jobs (chunks) a node works on at once when it
	// runs workers (default 2: one loads or records while the other sends).
	Workers int
	// BatchSize is how many results are stored per write (default 250).
	// Results are also written every second, so progress shows.
	BatchSize int
	// Lease is the queue lease of a job (default queue.DefaultLease): how
	// long a dead node's chunk waits before another node takes it over.
	Lease time.Duration
	// MaxAttempts is how many times a chunk is tried before its unsent
	// subscribers are recorded as failed (default 8; 1 without guaranteed
	// processing, as the original does not retry a failed chunk then).
	MaxAttempts int
	// RetryDelay is the first wait before retrying a failed store call
	// (default 200 ms, doubling, five attempts).
	RetryDelay time.Duration
	// JobBackoff is the first wait before a failed job runs again
	// (default 1 s, doubling up to a minute).
	JobBackoff time.Duration
	// HTTPClient posts the async callback (default: notify/outbound's
	// client with its default policy and a 30 s timeout; the service
	// passes one built from outboundRequests). A callback URL is a
	// caller's, so the client must be one that checks where it dials.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Now is the clock (default notify.Now).
	Now func() time.Time
}

// Dispatcher sends push notifications. It is safe for concurrent use. Any
// node enqueues broadcasts; StartWorkers makes a node work on them too.
type Dispatcher struct {
	o   Options
	log *slog.Logger
	q   *queue.Queue
	co  coordinator

	mu      sync.Mutex
	closed  bool
	workers *queue.Workers
	waiters map[string][]chan struct{} // run key → sync requests waiting here
}

// New returns a Dispatcher.
func New(o Options) (*Dispatcher, error) {
	if o.Store.Subscriptions == nil || o.Store.Notifications == nil || o.Store.Broadcasts == nil || o.Store.Bounces == nil {
		return nil, errors.New("dispatch: incomplete store")
	}
	if o.Backend == nil {
		return nil, errors.New("dispatch: no queue backend")
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
	o.ChunkSize = min(o.ChunkSize, MaxChunkSize)
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 250
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 8
	}
	if !o.Guaranteed {
		o.MaxAttempts = 1
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = 200 * time.Millisecond
	}
	if o.HTTPClient == nil {
		t, _ := outbound.New(outbound.Policy{AllowPrivateNetworks: true}) // no entries to misread
		o.HTTPClient = t.Client(30 * time.Second)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = notify.Now
	}
	d := &Dispatcher{o: o, log: o.Logger, waiters: map[string][]chan struct{}{}}
	d.q = queue.NewQueue(o.Backend, queue.QueueOptions{Name: "broadcast", Lease: o.Lease, FirstBackoff: o.JobBackoff, Logger: o.Logger})
	d.co = coordinator{c: o.Backend.Client, prefix: o.Backend.Prefix + "broadcast:"}
	return d, nil
}

// StartWorkers makes this node work on queued broadcasts (planning,
// chunks, finishing) until Close. Nodes of role primary do not call it.
func (d *Dispatcher) StartWorkers() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.workers == nil && !d.closed {
		d.workers = d.q.Start(d.o.Workers, d.handle)
	}
}

// Pending counts the broadcast jobs the queue holds, across the cluster:
// waiting, running or waiting for a retry. Zero means every broadcast
// dispatched so far is finished.
func (d *Dispatcher) Pending(ctx context.Context) (int64, error) {
	s, err := d.q.Stats(ctx)
	return s.Known, err
}

// Close stops this node's workers: it waits, within ctx, for the jobs in
// flight, then stops those still running and hands them to other nodes
// (their recorded results are kept; nobody recorded is sent to again).
// Later dispatches of email and sms fail with ErrClosed.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	w := d.workers
	d.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.Stop(ctx)
}

// Request is what a dispatch needs of the HTTP request that caused it.
type Request struct {
	// Host is the request's scheme://host[:port]: {http_host} when
	// neither the notification nor the config has one.
	Host string
	// User made the request; state changes record it as updatedBy.
	User *notify.UserProfile
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
// returns. A synchronous broadcast returns when it is finished, by
// whichever nodes did the work. A failed send is not an error: it is the
// notification's state. A broadcast that cannot be queued is
// ErrQueueUnavailable.
func (d *Dispatcher) Dispatch(ctx context.Context, n *notify.Notification, sub *notify.Subscription, req Request) (*notify.Notification, error) {
	switch n.Channel {
	case notify.ChannelEmail, notify.ChannelSMS:
	default:
		return n, nil
	}
	if !n.InvalidBefore.IsZero() && n.InvalidBefore.After(d.o.Now()) {
		return n, nil
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	host := mailmerge.ResolveHTTPHost(mailmerge.HostSources{Notification: n.HTTPHost, Config: d.o.HTTPHost, Request: req.Host})
	if !n.IsBroadcast {
		if err := d.unicast(context.WithoutCancel(ctx), n, sub, host, req.User); err != nil {
			return nil, err
		}
		return d.reload(ctx, n.ID)
	}
	run, err := d.startBroadcast(ctx, n, host, req.User)
	if err != nil {
		return nil, err
	}
	if IsAsync(n) {
		return n, nil
	}
	if err := d.waitFinished(ctx, n.ID, run); err != nil {
		return nil, err
	}
	return d.reload(ctx, n.ID)
}

// Redispatch sends a stored notification the way the original's cron jobs
// do (dispatchLiveNotifications, reDispatchBroadcastPushNotifications): a
// unicast whose invalidBefore has come, checked against its subscription
// again (without a confirmed one it ends in state error), or a broadcast —
// started, or resumed where it stopped when it was started before, its
// recorded subscribers never sent to again. It never waits for a broadcast
// to finish. {http_host} is the notification's httpHost, else the
// config's, else internalHttpHost.
func (d *Dispatcher) Redispatch(ctx context.Context, id notify.ID) error {
	n, err := d.o.Store.Notifications.FindByID(ctx, id.Hex())
	if err != nil {
		return err
	}
	req := Request{Host: d.o.InternalHTTPHost}
	if n.IsBroadcast {
		n.AsyncBroadcastPushNotification = asyncOf(n.AsyncBroadcastPushNotification)
		_, err := d.Dispatch(ctx, n, nil, req)
		return err
	}
	sub, err := d.Check(ctx, n)
	if errors.Is(err, ErrInvalidUser) {
		d.log.Warn("notify: held unicast has no confirmed subscription any more", "notification", id.Hex())
		return d.setState(ctx, n.ID, notify.StateError, nil)
	}
	if err != nil {
		return err
	}
	_, err = d.Dispatch(ctx, n, sub, req)
	return err
}

// asyncOf keeps a callback URL and makes anything else true: the cron
// jobs never wait, as the original sets asyncBroadcastPushNotification.
func asyncOf(v any) any {
	if s, ok := v.(string); ok && s != "" {
		return s
	}
	return true
}

// reload reads a notification back with its dispatch results.
func (d *Dispatcher) reload(ctx context.Context, id notify.ID) (*notify.Notification, error) {
	n, err := d.o.Store.Notifications.FindByID(ctx, id.Hex())
	if err != nil {
		return nil, err
	}
	if err := d.o.Store.Broadcasts.LoadDispatch(ctx, n); err != nil {
		return nil, err
	}
	return n, nil
}

// setState records a notification's state (and who changed it).
func (d *Dispatcher) setState(ctx context.Context, id notify.ID, state string, user notify.Fields) error {
	set := doc("state", state)
	if user != nil {
		set.Set("updatedBy", user)
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

// untilLease runs op, a read or write of the queue backend, until it
// succeeds or a lease has passed, waiting longer each time (from 50 ms,
// doubling up to 2 s). A Redis restart or failover lasts seconds; a node
// that cannot reach Redis for a whole lease has lost its job's lease
// anyway, and another node takes the work over. Every op given is safe
// to repeat (a write whose reply was lost is written again). The end of
// ctx stops it sooner.
func (d *Dispatcher) untilLease(ctx context.Context, op func(context.Context) error) error {
	deadline := time.Now().Add(d.q.Lease())
	wait := 50 * time.Millisecond
	for {
		err := op(ctx)
		if err == nil || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// QueueStats reads the counters of the broadcast queue, across the
// cluster: four counter reads in one round trip.
func (d *Dispatcher) QueueStats(ctx context.Context) (queue.Stats, error) {
	return d.q.Stats(ctx)
}
