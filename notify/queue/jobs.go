package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of a Queue.
const (
	DefaultLease       = 30 * time.Second
	DefaultReapEvery   = 5 * time.Second
	DefaultIdleWait    = time.Second
	DefaultMaxBackoff  = time.Minute
	defaultFirstBackof = time.Second
)

// QueueOptions adjust a Queue.
type QueueOptions struct {
	// Name separates queues on one backend (default "q").
	Name string
	// Lease is how long a claimed job stays with its worker without a
	// heartbeat (default DefaultLease); heartbeats come every third of it.
	Lease time.Duration
	// ReapEvery is how often workers take back expired leases (default
	// DefaultReapEvery).
	ReapEvery time.Duration
	// IdleWait bounds how long an idle worker blocks waiting for work
	// before it looks again (default DefaultIdleWait; Redis counts it in
	// whole seconds, at least one).
	IdleWait time.Duration
	// FirstBackoff is the wait before a failed job runs again; it doubles
	// with each attempt up to MaxBackoff (defaults 1 s and 1 min).
	FirstBackoff, MaxBackoff time.Duration
	Logger                   *slog.Logger
}

// Queue is a reliable job queue on a Backend (see the package doc). It is
// safe for concurrent use, by any number of processes sharing the
// backend.
type Queue struct {
	c    redis.UniversalClient
	keys []string // jobs, pending, leases, owners, delayed, wake
	o    QueueOptions
	log  *slog.Logger
}

// Key indexes of Queue.keys.
const (
	kJobs = iota
	kPending
	kLeases
	kOwners
	kDelayed
	kWake
)

// NewQueue returns the queue o.Name on b.
func NewQueue(b *Backend, o QueueOptions) *Queue {
	if o.Name == "" {
		o.Name = "q"
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.ReapEvery <= 0 {
		o.ReapEvery = DefaultReapEvery
	}
	if o.IdleWait <= 0 {
		o.IdleWait = DefaultIdleWait
	}
	if o.FirstBackoff <= 0 {
		o.FirstBackoff = defaultFirstBackof
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	p := b.Prefix + o.Name + ":"
	return &Queue{
		c:    b.Client,
		keys: []string{p + "jobs", p + "pending", p + "leases", p + "owners", p + "delayed", p + "wake"},
		o:    o,
		log:  o.Logger,
	}
}

// Lease returns the queue's lease duration.
func (q *Queue) Lease() time.Duration { return q.o.Lease }

// enqueueScript adds the ids ARGV[2…] not already known, in order, at
// the back of the line (ARGV[1] "back") or the front, and wakes as many
// idle workers (at most 64 tokens are kept).
var enqueueScript = redis.NewScript(`
local added = 0
local push = 'RPUSH'
if ARGV[1] == 'front' then push = 'LPUSH' end
for i = 2, #ARGV do
  if redis.call('HSETNX', KEYS[1], ARGV[i], 0) == 1 then
    redis.call(push, KEYS[2], ARGV[i])
    added = added + 1
  end
end
if added > 0 then
  for i = 1, math.min(added, 64) do redis.call('LPUSH', KEYS[6], '1') end
  redis.call('LTRIM', KEYS[6], 0, 63)
end
return added
`)

// Enqueue adds jobs at the back of the line; ids the queue already knows
// (waiting, running or waiting for a retry) are left as they are. It
// returns how many were added.
func (q *Queue) Enqueue(ctx context.Context, ids ...string) (int, error) {
	return q.enqueue(ctx, "back", ids)
}

// EnqueueFront adds jobs at the front of the line, as Enqueue does
// otherwise: short jobs that others wait for should not queue behind a
// large broadcast's chunks.
func (q *Queue) EnqueueFront(ctx context.Context, ids ...string) (int, error) {
	return q.enqueue(ctx, "front", ids)
}

func (q *Queue) enqueue(ctx context.Context, where string, ids []string) (int, error) {
	added := 0
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 500)]
		ids = ids[len(batch):]
		args := make([]any, 0, len(batch)+1)
		args = append(args, where)
		for _, id := range batch {
			args = append(args, id)
		}
		n, err := enqueueScript.Run(ctx, q.c, q.keys, args...).Int()
		added += n
		if err != nil {
			return added, fmt.Errorf("queue: enqueue: %w", err)
		}
	}
	return added, nil
}

// Known reports whether the queue knows id (waiting, running or waiting
// for a retry).
func (q *Queue) Known(ctx context.Context, id string) (bool, error) {
	return q.c.HExists(ctx, q.keys[kJobs], id).Result()
}

// claimScript moves the due retries to the front, then takes the first
// pending job that is still known, leases it to ARGV[1] for ARGV[2] ms,
// and counts the attempt.
var claimScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, 100)
for i = #due, 1, -1 do
  redis.call('ZREM', KEYS[5], due[i])
  redis.call('LPUSH', KEYS[2], due[i])
end
while true do
  local id = redis.call('LPOP', KEYS[2])
  if not id then return false end
  if redis.call('HEXISTS', KEYS[1], id) == 1 and not redis.call('ZSCORE', KEYS[3], id) then
    local attempt = redis.call('HINCRBY', KEYS[1], id, 1)
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), id)
    redis.call('HSET', KEYS[4], id, ARGV[1])
    return {id, attempt}
  end
end
`)

// Job is a claimed job.
type Job struct {
	ID string
	// Attempt counts the claims of this job, 1 the first time: more means
	// an earlier run failed or its node died.
	Attempt int
	token   string
}

// claim takes the next job for token, if any.
func (q *Queue) claim(ctx context.Context, token string) (Job, bool, error) {
	res, err := claimScript.Run(ctx, q.c, q.keys, token, q.o.Lease.Milliseconds()).Slice()
	if errors.Is(err, redis.Nil) {
		return Job{}, false, nil
	}
	if err != nil {
		return Job{}, false, fmt.Errorf("queue: claim: %w", err)
	}
	if len(res) != 2 {
		return Job{}, false, errors.New("queue: claim: unexpected reply")
	}
	id, _ := res[0].(string)
	attempt, _ := res[1].(int64)
	return Job{ID: id, Attempt: int(attempt), token: token}, true, nil
}

// extendScript renews the lease of ARGV[1] held by ARGV[2].
var extendScript = redis.NewScript(`
if redis.call('HGET', KEYS[4], ARGV[1]) ~= ARGV[2] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
return 1
`)

// extend renews j's lease; false means the lease is lost.
func (q *Queue) extend(ctx context.Context, j Job) (bool, error) {
	n, err := extendScript.Run(ctx, q.c, q.keys, j.ID, j.token, q.o.Lease.Milliseconds()).Int()
	return n == 1, err
}

// finishScript ends a claim held by ARGV[2]: ARGV[1] is the job, ARGV[3]
// what becomes of it: "done" forgets it, "retry" delays it by ARGV[4] ms,
// "release" puts it back at the front without counting the attempt.
var finishScript = redis.NewScript(`
if redis.call('HGET', KEYS[4], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
if ARGV[3] == 'done' then
  redis.call('HDEL', KEYS[1], ARGV[1])
elseif ARGV[3] == 'retry' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZADD', KEYS[5], now + tonumber(ARGV[4]), ARGV[1])
else
  redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
  redis.call('LPUSH', KEYS[2], ARGV[1])
  redis.call('LPUSH', KEYS[6], '1')
  redis.call('LTRIM', KEYS[6], 0, 63)
end
return 1
`)

func (q *Queue) finish(ctx context.Context, j Job, how string, delay time.Duration) error {
	return finishScript.Run(ctx, q.c, q.keys, j.ID, j.token, how, delay.Milliseconds()).Err()
}

// reapScript takes back up to 100 expired leases and puts their jobs at
// the front of the line.
var reapScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 100)
for i = #expired, 1, -1 do
  local id = expired[i]
  redis.call('ZREM', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
  redis.call('LPUSH', KEYS[2], id)
end
if #expired > 0 then
  for i = 1, math.min(#expired, 64) do redis.call('LPUSH', KEYS[6], '1') end
  redis.call('LTRIM', KEYS[6], 0, 63)
end
return #expired
`)

// Reap takes back the jobs whose lease expired and returns how many.
func (q *Queue) Reap(ctx context.Context) (int, error) {
	n, err := reapScript.Run(ctx, q.c, q.keys).Int()
	if err != nil {
		return n, fmt.Errorf("queue: reap: %w", err)
	}
	return n, nil
}

// Stats counts the jobs by where they are.
type Stats struct {
	Known, Pending, Running, Delayed int64
}

// Stats reads the queue's counters.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	var known, pending, running, delayed *redis.IntCmd
	_, err := q.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		known = p.HLen(ctx, q.keys[kJobs])
		pending = p.LLen(ctx, q.keys[kPending])
		running = p.ZCard(ctx, q.keys[kLeases])
		delayed = p.ZCard(ctx, q.keys[kDelayed])
		return nil
	})
	if err != nil {
		return s, err
	}
	return Stats{Known: known.Val(), Pending: pending.Val(), Running: running.Val(), Delayed: delayed.Val()}, nil
}

// Handler runs one job. Returning nil acknowledges it; an error runs it
// again after a backoff. ctx ends when the lease is lost or the workers
// are stopped past their grace period; the handler should then return
// promptly.
type Handler func(ctx context.Context, j Job) error

// Workers run a queue's jobs in this process.
type Workers struct {
	q      *Queue
	h      Handler
	n      int
	stop   context.CancelFunc // stops claiming
	abort  context.CancelFunc // cancels running jobs
	jobCtx context.Context
	wg     sync.WaitGroup
	once   sync.Once
}

// Start runs n workers and the reaper until Stop.
func (q *Queue) Start(n int, h Handler) *Workers {
	w := &Workers{q: q, h: h, n: max(n, 1)}
	claimCtx, stop := context.WithCancel(context.Background())
	w.jobCtx, w.abort = context.WithCancel(context.Background())
	w.stop = stop
	for i := 0; i < w.n; i++ {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.loop(claimCtx)
		}()
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.reap(claimCtx)
	}()
	return w
}

// Stop stops claiming jobs and waits, within ctx, for the running ones;
// those still running when ctx ends are cancelled and released to other
// workers without counting an attempt.
func (w *Workers) Stop(ctx context.Context) error {
	w.once.Do(func() {
		w.stop()
		// Wake the workers blocked waiting for work (others' may wake
		// too; they just look again).
		wake, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_, _ = w.q.c.Pipelined(wake, func(p redis.Pipeliner) error {
			for range w.n {
				p.LPush(wake, w.q.keys[kWake], "1")
			}
			p.LTrim(wake, w.q.keys[kWake], 0, 63)
			return nil
		})
	})
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		w.abort()
		return nil
	case <-ctx.Done():
		w.abort()
		<-done
		return ctx.Err()
	}
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// loop claims and runs jobs until ctx ends.
func (w *Workers) loop(ctx context.Context) {
	q := w.q
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		j, ok, err := q.claim(ctx, newToken())
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			q.log.Warn("queue: cannot claim a job; retrying", "err", err, "in", backoff)
			sleep(ctx, backoff)
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if !ok {
			// Block until a job is announced, or look again after IdleWait
			// (retries fall due without an announcement).
			_ = q.c.BLPop(ctx, q.o.IdleWait, q.keys[kWake]).Err()
			continue
		}
		w.run(ctx, j)
	}
}

// run runs one claimed job with heartbeats, and records its end.
func (w *Workers) run(claimCtx context.Context, j Job) {
	q := w.q
	ctx, cancel := context.WithCancelCause(w.jobCtx)
	defer cancel(nil)
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		t := time.NewTicker(q.o.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				held, err := q.extend(ctx, j)
				if err != nil {
					q.log.Warn("queue: lease not extended", "job", j.ID, "err", err)
					continue // the lease may outlast a short outage
				}
				if !held {
					cancel(errLeaseLost)
					return
				}
			}
		}
	}()
	err := w.h(ctx, j)
	cancel(nil)
	<-beat
	end := context.WithoutCancel(ctx)
	switch {
	case errors.Is(context.Cause(ctx), errLeaseLost):
		q.log.Warn("queue: lease lost; another worker has the job", "job", j.ID)
	case err == nil:
		if ferr := q.finish(end, j, "done", 0); ferr != nil {
			q.log.Error("queue: job done but not acknowledged; it will run again", "job", j.ID, "err", ferr)
		}
	case w.jobCtx.Err() != nil && claimCtx.Err() != nil:
		// Stopped past the grace period: hand it over untouched.
		if ferr := q.finish(end, j, "release", 0); ferr != nil {
			q.log.Error("queue: job not released; its lease will expire", "job", j.ID, "err", ferr)
		}
	default:
		delay := q.backoff(j.Attempt)
		q.log.Warn("queue: job failed; it will run again", "job", j.ID, "attempt", j.Attempt, "in", delay, "err", err)
		if ferr := q.finish(end, j, "retry", delay); ferr != nil {
			q.log.Error("queue: job not rescheduled; its lease will expire", "job", j.ID, "err", ferr)
		}
	}
}

var errLeaseLost = errors.New("queue: lease lost")

func (q *Queue) backoff(attempt int) time.Duration {
	d := q.o.FirstBackoff
	for i := 1; i < attempt && d < q.o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, q.o.MaxBackoff)
}

// reap takes back expired leases every ReapEvery until ctx ends.
func (w *Workers) reap(ctx context.Context) {
	t := time.NewTicker(w.q.o.ReapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := w.q.Reap(ctx)
			if err != nil && ctx.Err() == nil {
				w.q.log.Warn("queue: reaper", "err", err)
			} else if n > 0 {
				w.q.log.Info("queue: jobs of a stopped worker taken back", "jobs", n)
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
