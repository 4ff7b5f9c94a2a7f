package cron

import (
	"context"
	"sync"
	"time"
)

// Clock is the time the scheduler and the jobs go by.
type Clock interface {
	Now() time.Time
	// WaitUntil returns when the clock reads t or later (nil), or when
	// ctx ends (its error).
	WaitUntil(ctx context.Context, t time.Time) error
}

// SystemClock is the machine's clock.
type SystemClock struct{}

// Now returns the current time, truncated to milliseconds as MongoDB keeps
// times.
func (SystemClock) Now() time.Time { return time.Now().Truncate(time.Millisecond) }

// WaitUntil sleeps until t. It checks the clock again after each timer, so
// that a wall clock set back while waiting does not fire a job early.
func (SystemClock) WaitUntil(ctx context.Context, t time.Time) error {
	for {
		d := time.Until(t)
		if d <= 0 {
			return nil
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		}
	}
}

// ManualClock is a clock that moves only when told to, for tests: jobs
// scheduled minutes or days ahead run as soon as Advance or Set passes
// their time. It is safe for concurrent use.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters map[chan struct{}]time.Time
}

// NewManualClock returns a clock that reads now until moved.
func NewManualClock(now time.Time) *ManualClock {
	return &ManualClock{now: now, waiters: map[chan struct{}]time.Time{}}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t (forward or back) and wakes the waiters whose
// time has come.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	for ch, at := range c.waiters {
		if !at.After(t) {
			close(ch)
			delete(c.waiters, ch)
		}
	}
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// WaitUntil waits until the clock is moved to t or later.
func (c *ManualClock) WaitUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if !t.After(c.now) {
		c.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	c.waiters[ch] = t
	c.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.waiters, ch)
		c.mu.Unlock()
		return ctx.Err()
	}
}
