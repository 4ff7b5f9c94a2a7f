package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ticketTTL is how long a waiter's place in line outlives its last poll:
// a waiter whose node died leaves the line after at most this long.
// Waiters poll at least three times per ticketTTL.
const ticketTTL = 3 * time.Second

// Throttle spaces grants cluster-wide: at most max per duration, at least
// ceil(duration/max) apart, in priority order (see the package doc). It is
// safe for concurrent use by any number of processes sharing the backend
// and name.
type Throttle struct {
	c        redis.UniversalClient
	keys     []string // waiting, alive, next
	interval time.Duration
}

// NewThrottle returns the throttle name on b allowing max grants per
// duration. max and duration must be positive.
func NewThrottle(b *Backend, name string, max int, duration time.Duration) *Throttle {
	p := b.Prefix + "throttle:" + name + ":"
	// Rounded up to the microsecond, so that max intervals are never
	// shorter than duration.
	interval := (duration + time.Duration(max) - 1) / time.Duration(max)
	interval = (interval + time.Microsecond - 1).Truncate(time.Microsecond)
	return &Throttle{c: b.Client, keys: []string{p + "waiting", p + "alive", p + "next"}, interval: interval}
}

// Interval is the least time between two grants.
func (t *Throttle) Interval() time.Duration { return t.interval }

// acquireScript registers ARGV[1] (priority ARGV[2]) in line, drops the
// tickets of waiters that stopped polling, and grants the slot when the
// ticket is at the head of the line and the slot is free. The answer is
// {1} for a grant, or {0, µs to wait}.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ticket, interval, ttl = ARGV[1], tonumber(ARGV[3]), tonumber(ARGV[4])
if not redis.call('ZSCORE', KEYS[1], ticket) then
  redis.call('ZADD', KEYS[1], tonumber(ARGV[2]) * 1e13 + math.floor(now / 1000), ticket)
end
redis.call('ZADD', KEYS[2], now + ttl, ticket)
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 100)
for i = 1, #dead do
  redis.call('ZREM', KEYS[1], dead[i])
  redis.call('ZREM', KEYS[2], dead[i])
end
local rank = redis.call('ZRANK', KEYS[1], ticket)
local nxt = tonumber(redis.call('GET', KEYS[3]) or '0')
if rank > 0 then
  return {0, math.max(nxt - now, 0) + rank * interval}
end
if now < nxt then
  return {0, nxt - now}
end
redis.call('SET', KEYS[3], now + interval, 'PX', math.ceil(interval / 1000) + 1000)
redis.call('ZREM', KEYS[1], ticket)
redis.call('ZREM', KEYS[2], ticket)
return {1}
`)

// Wait blocks until this caller may send: when its ticket reaches the head
// of the line (lower priority values first, then first come) and the
// interval since the last grant has passed. It returns ctx's error if ctx
// ends first (the ticket is then withdrawn), or a Redis error.
func (t *Throttle) Wait(ctx context.Context, priority int) error {
	ticket := newToken()
	for {
		res, err := acquireScript.Run(ctx, t.c, t.keys, ticket, priority, t.interval.Microseconds(), ticketTTL.Microseconds()).Int64Slice()
		if err != nil {
			t.withdraw(ticket)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("queue: throttle: %w", err)
		}
		if len(res) == 0 {
			return errors.New("queue: throttle: unexpected reply")
		}
		if res[0] == 1 {
			return nil
		}
		wait := time.Millisecond
		if len(res) > 1 {
			wait = max(wait, time.Duration(res[1])*time.Microsecond)
		}
		timer := time.NewTimer(min(wait, ticketTTL/3))
		select {
		case <-ctx.Done():
			timer.Stop()
			t.withdraw(ticket)
			return ctx.Err()
		case <-timer.C:
		}
	}
}

func (t *Throttle) withdraw(ticket string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = t.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, t.keys[0], ticket)
		p.ZRem(ctx, t.keys[1], ticket)
		return nil
	})
}
