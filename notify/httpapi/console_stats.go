package httpapi

// The routes the web console needs beyond NotifyBC's API, under
// {restApiRoot}/console, administrators only. Shapes (the contract the
// console's browser code reads):
//
//	GET  {root}/console/stats    ConsoleStats (this file)
//	POST {root}/console/preview  ConsolePreview (console_preview.go)
//
// Decisions where the console's brief left room:
//
//   - Stats has three fields beyond the brief's shape: subscriptionsTruncated
//     (more than 200 groups exist; the largest are listed),
//     countsGenerated (when the subscription and bounce counts were made;
//     null until a node's first count) and countsPending (true until
//     then, with empty lists). The counts are made in the background
//     (statsCache), so they can be older than generated. queue has known,
//     pending, active, delayed and embedded.
//
//   - Who the caller is: GET {root}/administrators/whoami, NotifyBC's own
//     route, already answers every caller (anonymous included) with
//     {securityId, authnStrategy, role}; there is no separate console
//     whoami.
//   - A running broadcast's progress: GET {root}/notifications/{id} shows
//     dispatch.counts {candidates, pending, successful, failed, skipped}
//     (pending is what the console calls remaining). A client that asks
//     only for it — filter {"fields":{"dispatch.counts":true,…}} — gets
//     dispatch: {counts} from dispatch.Dispatcher.Progress: a hash in the
//     queue backend while the broadcast runs, the header's counts once it
//     is finished, never the broadcast's lists (notifications.go); cheap
//     enough to poll every second. Those counts leave out the lists an
//     original NotifyBC document holds inline (a broadcast it left
//     half-sent); the full dispatch still merges them.
//   - In stats, a broadcast's counts are {sent, failed, skipped,
//     remaining}: sent is dispatch.counts.successful (recorded when
//     guaranteedBroadcastPushDispatchProcessing or bounce handling is on,
//     as in the original), remaining is pending while the broadcast is in
//     state sending and 0 otherwise.

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/mongostore"
)

func init() { routeGroups = append(routeGroups, (*Server).consoleStatsRoutes) }

func (s *Server) consoleStatsRoutes() {
	if s.store == nil || s.disp == nil {
		return
	}
	s.handle(route{method: "GET", path: "/console/stats", roles: adminsOnly, tag: "console",
		summary:  "the console's dashboard: subscriptions by service, channel and state; recent broadcasts; queue; throttles; bounces",
		response: "ConsoleStats", h: s.consoleStats})
}

// Bounds of the stats answer: every list a caller could lengthen by writing
// records is cut.
const (
	// statsBroadcasts is how many of the most recent broadcasts are shown.
	statsBroadcasts = 20
	// statsGroups bounds the subscription groups (service × channel ×
	// state), largest first; subscriptionsTruncated says when more exist.
	// Anonymous callers create subscriptions, so services are unbounded.
	statsGroups = 200
	// statsCacheTTL is how long the subscription and bounce counts are
	// reused before a recount starts: they cost a scan of the collection
	// (see ConsoleStats), and a dashboard is polled.
	statsCacheTTL = 10 * time.Second
)

// ConsoleStats is the dashboard's answer.
//
// Its cost: the subscription groups are one $group aggregation on
// MongoDB (served by the serviceName_state_channel index) and, on the
// embedded store, one GROUP BY over a SQLite index of ours that reads no
// document (BenchmarkScaleReads, BENCHMARKS.md: milliseconds at a
// million subscriptions); statsCache still recounts in the background,
// spaced by how long a count takes, so a polled dashboard never waits
// for one after the first. Bounces
// are one count per state. The 20 broadcasts are found among the
// broadcast headers (one per broadcast run, not the notification
// collection); each costs a read of its notification and of its header,
// and one hash read in the queue backend while it runs. The queue is one
// round trip to its Redis.
type ConsoleStats struct {
	Subscriptions []mongostore.SubscriptionGroup `json:"subscriptions"`
	// SubscriptionsTruncated is true when there are more than statsGroups
	// groups (only the largest are listed).
	SubscriptionsTruncated bool                      `json:"subscriptionsTruncated"`
	Broadcasts             []BroadcastSummary        `json:"broadcasts"`
	Queue                  QueueSummary              `json:"queue"`
	Throttle               map[string]ThrottleConfig `json:"throttle"`
	Bounces                []StateCount              `json:"bounces"`
	Generated              time.Time                 `json:"generated"`
	// CountsGenerated is when subscriptions and bounces were counted
	// (statsCacheTTL or more before Generated: they are recounted in the
	// background); null until the first count of this node is done, and
	// CountsPending true meanwhile (the lists are empty then).
	CountsGenerated *time.Time `json:"countsGenerated"`
	CountsPending   bool       `json:"countsPending"`
}

// BroadcastSummary is one recent broadcast.
type BroadcastSummary struct {
	ID          string         `json:"id"`
	ServiceName string         `json:"serviceName"`
	Channel     string         `json:"channel"`
	State       string         `json:"state"`
	Created     time.Time      `json:"created"`
	Updated     time.Time      `json:"updated"`
	Counts      BroadcastCount `json:"counts"`
	// PerSecond is outcomes recorded per second since the broadcast
	// started (until its last update once it is over); 0 before any.
	PerSecond float64 `json:"perSecond"`
}

// BroadcastCount is a broadcast's progress.
type BroadcastCount struct {
	Sent      int64 `json:"sent"`
	Failed    int64 `json:"failed"`
	Skipped   int64 `json:"skipped"`
	Remaining int64 `json:"remaining"`
}

// QueueSummary is the broadcast queue: jobs (a plan, a chunk of
// subscribers or a finish step each) by where they are.
type QueueSummary struct {
	// Known counts every job not yet done: pending, active or delayed.
	Known   int64 `json:"known"`
	Pending int64 `json:"pending"`
	Active  int64 `json:"active"`
	// Delayed jobs wait for a retry.
	Delayed int64 `json:"delayed"`
	// Embedded is true for the in-process queue (no queue.connection).
	Embedded bool `json:"embedded"`
}

// ThrottleConfig is email.throttle or sms.throttle.
type ThrottleConfig struct {
	Enabled bool `json:"enabled"`
	Max     int  `json:"max"`
	// Duration is in milliseconds, as in the config file.
	Duration int `json:"duration"`
}

// StateCount counts records in one state.
type StateCount struct {
	State string `json:"state"`
	Count int64  `json:"count"`
}

// statsCache keeps the costly part of the stats — the subscription groups
// and bounce counts — and recounts it in the background: a request never
// waits for a scan of a large collection (on the embedded store, tens of
// seconds at 100k subscriptions on a loaded machine), it gets the last
// counts with their date. A recount starts when a request finds the counts
// older than statsCacheTTL, one at a time per node, and no sooner after the
// previous one than five times as long as that one took, so that scanning
// takes at most a sixth of the store's time however often the dashboard is
// polled.
type statsCache struct {
	mu      sync.Mutex
	at      time.Time // when the counts were made; zero: never
	groups  []mongostore.SubscriptionGroup
	more    bool
	bounce  []StateCount
	err     error         // the last recount's failure
	running chan struct{} // closed when the running recount ends; nil: none
	ended   time.Time     // when the last recount ended
	took    time.Duration // how long it took
}

// statsFirstWait bounds how long a request waits for the first counts of
// a node (small stores have them at once); past it, the answer says
// countsPending.
const statsFirstWait = 3 * time.Second

// snapshot is the counts as they are, starting a recount when they are
// due.
type statsSnapshot struct {
	at      time.Time
	groups  []mongostore.SubscriptionGroup
	more    bool
	bounce  []StateCount
	pending bool
}

func (s *Server) statsCounts(ctx context.Context) (statsSnapshot, error) {
	c := &s.stats
	c.mu.Lock()
	now := time.Now()
	due := c.at.IsZero() || now.Sub(c.at) >= statsCacheTTL
	spaced := c.ended.IsZero() || now.Sub(c.ended) >= 5*c.took
	if due && spaced && c.running == nil {
		c.running = make(chan struct{})
		done := c.running
		s.Go(func(bg context.Context) { s.recount(bg, done) })
	}
	wait := c.running
	first := c.at.IsZero()
	c.mu.Unlock()
	if first && wait != nil {
		t := time.NewTimer(statsFirstWait)
		select {
		case <-wait:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() && c.err != nil && c.running == nil {
		return statsSnapshot{}, c.err
	}
	snap := statsSnapshot{at: c.at, groups: c.groups, more: c.more, bounce: slices.Clone(c.bounce), pending: c.at.IsZero()}
	if snap.groups == nil {
		snap.groups = []mongostore.SubscriptionGroup{}
	}
	if snap.bounce == nil {
		snap.bounce = []StateCount{}
	}
	return snap, nil
}

// recount counts the subscriptions and bounces and keeps the result.
func (s *Server) recount(ctx context.Context, done chan struct{}) {
	c := &s.stats
	start, at := time.Now(), notify.Now()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	groups, more, err := s.store.SubscriptionGroups(ctx, statsGroups)
	var bc map[string]int64
	states := []string{notify.BounceActive, notify.BounceDeleted}
	if err == nil {
		bc, err = s.store.BounceCounts(ctx, states)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended, c.took, c.err, c.running = time.Now(), time.Since(start), err, nil
	defer close(done)
	if err != nil {
		s.log.Warn("notify: console counts failed", "err", err)
		return
	}
	c.bounce = c.bounce[:0]
	for _, st := range states {
		c.bounce = append(c.bounce, StateCount{State: st, Count: bc[st]})
	}
	c.groups, c.more, c.at = groups, more, at
}

func (s *Server) consoleStats(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	counts, err := s.statsCounts(ctx)
	if err != nil {
		writeError(w, r, err)
		return
	}
	// After the counts: on a small store statsCounts starts a count and
	// waits for it, and the answer must not claim to predate its counts.
	now := notify.Now()
	out := ConsoleStats{
		Subscriptions:          counts.groups,
		SubscriptionsTruncated: counts.more,
		Bounces:                counts.bounce,
		CountsPending:          counts.pending,
		Generated:              now,
		Throttle: map[string]ThrottleConfig{
			"email": throttleOf(s.cfg.Email.Throttle),
			"sms":   throttleOf(s.cfg.SMS.Throttle),
		},
	}
	if !counts.at.IsZero() {
		at := counts.at.UTC()
		out.CountsGenerated = &at
	}
	if out.Broadcasts, err = s.recentBroadcasts(ctx, now); err != nil {
		writeError(w, r, err)
		return
	}
	qs, err := s.disp.QueueStats(ctx)
	if err != nil {
		writeError(w, r, err)
		return
	}
	out.Queue = QueueSummary{Known: qs.Known, Pending: qs.Pending, Active: qs.Running, Delayed: qs.Delayed}
	if e, ok := s.queue.(interface{ Embedded() bool }); ok {
		out.Queue.Embedded = e.Embedded()
	}
	writeJSON(w, http.StatusOK, out)
}

func throttleOf(t config.Throttle) ThrottleConfig {
	return ThrottleConfig{Enabled: t.Enabled, Max: t.Max, Duration: t.Duration}
}

// recentBroadcasts summarises the statsBroadcasts most recently started
// broadcasts (email and SMS: in-app broadcasts send nothing and have no
// run), newest first. A header whose notification is gone is skipped.
func (s *Server) recentBroadcasts(ctx context.Context, now time.Time) ([]BroadcastSummary, error) {
	hdrs, err := s.store.RecentBroadcasts(ctx, statsBroadcasts)
	if err != nil {
		return nil, err
	}
	proj := bson.D{
		{Key: "serviceName", Value: 1}, {Key: "channel", Value: 1}, {Key: "state", Value: 1},
		{Key: "created", Value: 1}, {Key: "updated", Value: 1}, {Key: "isBroadcast", Value: 1},
	}
	out := make([]BroadcastSummary, 0, len(hdrs))
	for _, h := range hdrs {
		n, err := s.store.Notifications().FindOne(ctx, mongostore.Query{Filter: bson.D{{Key: "_id", Value: h.NotificationID}}, Projection: proj})
		if errors.Is(err, notify.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p, err := s.disp.Progress(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		b := BroadcastSummary{
			ID: n.ID.Hex(), ServiceName: shortName(n.ServiceName), Channel: n.Channel, State: n.State,
			Created: n.Created, Updated: n.Updated,
			Counts: BroadcastCount{Sent: p.Counts.Successful, Failed: p.Counts.Failed, Skipped: p.Counts.Skipped},
		}
		end := now
		if n.State == notify.StateSending {
			b.Counts.Remaining = p.Counts.Pending
		} else {
			end = n.Updated
		}
		done := p.Counts.Successful + p.Counts.Failed + p.Counts.Skipped
		if secs := end.Sub(p.Started).Seconds(); p.Found && done > 0 && secs > 0 {
			b.PerSecond = float64(done) / secs
		}
		out = append(out, b)
	}
	return out, nil
}

// shortName cuts a service name for the dashboard (any caller may write
// one, up to a body's size).
func shortName(s string) string {
	if r := []rune(s); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return s
}

// consoleSchemas are the console routes' OpenAPI schemas.
func consoleSchemas() map[string]any {
	str := map[string]any{"type": "string"}
	dt := map[string]any{"type": "string", "format": "date-time"}
	integer := map[string]any{"type": "integer"}
	num := map[string]any{"type": "number"}
	boolean := map[string]any{"type": "boolean"}
	obj := func(props map[string]any, required ...string) map[string]any {
		o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	arr := func(items map[string]any) map[string]any { return map[string]any{"type": "array", "items": items} }
	throttle := obj(map[string]any{"enabled": boolean, "max": integer, "duration": map[string]any{"type": "integer", "description": "milliseconds"}})
	return map[string]any{
		"ConsoleStats": obj(map[string]any{
			"subscriptions": map[string]any{"type": "array", "maxItems": statsGroups, "description": "largest groups first",
				"items": obj(map[string]any{"serviceName": str, "channel": str, "state": str, "count": integer})},
			"subscriptionsTruncated": boolean,
			"broadcasts": map[string]any{"type": "array", "maxItems": statsBroadcasts, "description": "the most recent broadcast push notifications, newest first",
				"items": obj(map[string]any{
					"id": str, "serviceName": str, "channel": str, "state": str, "created": dt, "updated": dt,
					"counts":    obj(map[string]any{"sent": integer, "failed": integer, "skipped": integer, "remaining": integer}),
					"perSecond": num,
				})},
			"queue":           obj(map[string]any{"known": integer, "pending": integer, "active": integer, "delayed": integer, "embedded": boolean}),
			"throttle":        obj(map[string]any{"email": throttle, "sms": throttle}),
			"bounces":         arr(obj(map[string]any{"state": str, "count": integer})),
			"generated":       dt,
			"countsGenerated": map[string]any{"type": "string", "format": "date-time", "nullable": true},
			"countsPending":   boolean,
		}),
		"ConsolePreviewRequest": obj(map[string]any{
			"notification":   map[string]any{"$ref": "#/components/schemas/Notification"},
			"subscriptionId": str,
		}, "notification", "subscriptionId"),
		"ConsolePreview": obj(map[string]any{
			"channel": map[string]any{"type": "string", "enum": []string{notify.ChannelEmail, notify.ChannelSMS}},
			"to":      str, "from": str, "subject": str, "textBody": str, "htmlBody": str,
		}, "channel", "to", "textBody"),
	}
}
