package ratelimit

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store in Redis, shared by every process that uses the same
// server and prefix. A window is one key with a millisecond expiry; Redis
// expires stale keys itself, so there is nothing to sweep.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

// NewRedis returns a Store keeping its counters under prefix.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

// hitScript increments and opens the window atomically, so two replicas
// racing on a new key cannot both start a window (or leave one without
// expiry).
var hitScript = redis.NewScript(`
local c = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if c == 1 or ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {c, ttl}
`)

func (r *Redis) Hit(ctx context.Context, key string, window time.Duration) (Window, error) {
	ms := window.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	res, err := hitScript.Run(ctx, r.client, []string{r.prefix + key}, ms).Int64Slice()
	if err != nil {
		return Window{}, err
	}
	if len(res) != 2 {
		return Window{}, errors.New("ratelimit: unexpected reply from Redis")
	}
	return Window{Count: res[0], ResetIn: time.Duration(res[1]) * time.Millisecond}, nil
}

func (r *Redis) Peek(ctx context.Context, key string) (Window, error) {
	k := r.prefix + key
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, k)
		pttl = p.PTTL(ctx, k)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Window{}, err
	}
	n, err := get.Int64()
	if errors.Is(err, redis.Nil) {
		return Window{}, nil
	}
	if err != nil {
		return Window{}, err
	}
	ttl := pttl.Val()
	if ttl < 0 {
		ttl = 0
	}
	return Window{Count: n, ResetIn: ttl}, nil
}

func (r *Redis) Reset(ctx context.Context, key string) error {
	return r.client.Del(ctx, r.prefix+key).Err()
}
