package cron

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Locker takes the short locks that keep a scheduled run from happening
// twice when two nodes run cron at once (two primaries during a rolling
// update). A lock names a job and the time it was scheduled for, so every
// node asks for the same key; it is never released, only expires, so that
// a node whose clock lags cannot take it after the first node finished.
type Locker interface {
	// Acquire takes key for ttl. It reports false when another holder
	// has it.
	Acquire(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// MemoryLocker keeps locks in this process: enough for a single node
// (and for the embedded queue, which is per process anyway).
type MemoryLocker struct {
	mu    sync.Mutex
	clock Clock
	held  map[string]time.Time // key → expiry
}

// NewMemoryLocker returns a locker whose locks expire by clock (nil: the
// system clock).
func NewMemoryLocker(clock Clock) *MemoryLocker {
	if clock == nil {
		clock = SystemClock{}
	}
	return &MemoryLocker{clock: clock, held: map[string]time.Time{}}
}

// Acquire implements Locker.
func (l *MemoryLocker) Acquire(_ context.Context, key string, ttl time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	for k, exp := range l.held {
		if !exp.After(now) {
			delete(l.held, k)
		}
	}
	if _, ok := l.held[key]; ok {
		return false, nil
	}
	l.held[key] = now.Add(ttl)
	return true, nil
}

// RedisLocker keeps locks in Redis (SET key NX PX ttl), shared by every
// node that uses the same server and prefix.
type RedisLocker struct {
	client redis.Cmdable
	prefix string
	owner  string
}

// NewRedisLocker returns a locker keeping its keys under prefix.
func NewRedisLocker(client redis.Cmdable, prefix string) *RedisLocker {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &RedisLocker{client: client, prefix: prefix, owner: hex.EncodeToString(b)}
}

// Acquire implements Locker.
func (l *RedisLocker) Acquire(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	err := l.client.SetArgs(ctx, l.prefix+key, l.owner, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	if err == redis.Nil {
		return false, nil
	}
	return err == nil, err
}
