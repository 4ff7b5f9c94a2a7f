// Package ratelimit counts requests and failures per key in fixed windows,
// either in process memory or in Redis so that several replicas of a service
// share one budget.
//
// Two uses are built on the same counter Store:
//
//   - Allow: a request budget (N requests per window per client). The
//     counter grows with every request, refused ones included, so a client
//     that keeps hammering stays refused until the window ends.
//   - Failures: a failure budget (the API-key lockout). Only failures count;
//     once Max failures are recorded in a window, Blocked says so before the
//     caller does any work (no key comparison), and a success resets the
//     counter.
//
// Fixed windows were chosen over a sliding algorithm because they are what
// the original services did (so limits mean the same), they cost one INCR in
// Redis, and Retry-After is exact: the time until the window ends. For the
// same reasons the Redis store is a short Lua script of our own rather than
// redis_rate (GCRA): the failure budget needs "peek without counting" and
// "reset", and both stores must count alike.
package ratelimit

import (
	"context"
	"time"
)

// Window is the state of one key's counter.
type Window struct {
	Count   int64         // events counted in the current window
	ResetIn time.Duration // until the window ends; 0 when no window is open
}

// Store keeps fixed-window counters.
//
// A key passed to a Store may be a view into a larger object of the
// caller's (an HTTP request's state builds its keys in its own buffer, to
// spare an allocation per request): a Store that keeps a key beyond the
// call keeps a copy (strings.Clone), so that it does not hold that object
// for as long as the window lasts.
type Store interface {
	// Hit counts one event for key, opening a window of the given length if
	// none is open, and returns the counter after counting.
	Hit(ctx context.Context, key string, window time.Duration) (Window, error)
	// Peek returns the counter without counting.
	Peek(ctx context.Context, key string) (Window, error)
	// Reset forgets the key's counter.
	Reset(ctx context.Context, key string) error
}

// Rule is a budget: Limit events per Window.
type Rule struct {
	Limit  int
	Window time.Duration
}

// Decision is the outcome of Allow, with what RateLimit headers need.
type Decision struct {
	Allowed   bool
	Limit     int
	Remaining int
	ResetIn   time.Duration // also the Retry-After of a refusal
}

// Allow counts one request for key under rule and says whether it is within
// the budget.
func Allow(ctx context.Context, s Store, key string, rule Rule) (Decision, error) {
	w, err := s.Hit(ctx, key, rule.Window)
	if err != nil {
		return Decision{Allowed: true, Limit: rule.Limit, Remaining: rule.Limit}, err
	}
	d := Decision{Limit: rule.Limit, ResetIn: w.ResetIn, Allowed: w.Count <= int64(rule.Limit)}
	if rem := int64(rule.Limit) - w.Count; rem > 0 {
		d.Remaining = int(rem)
	}
	return d, nil
}

// Failures is a per-key failure budget: Max failures per Window are allowed;
// after that the key is blocked until the window ends or a success resets it.
type Failures struct {
	Store  Store
	Max    int
	Window time.Duration
}

// Blocked reports whether key has used up its failures, and for how long it
// stays blocked.
func (f *Failures) Blocked(ctx context.Context, key string) (bool, time.Duration, error) {
	w, err := f.Store.Peek(ctx, key)
	if err != nil {
		return false, 0, err
	}
	if w.Count >= int64(f.Max) {
		return true, w.ResetIn, nil
	}
	return false, 0, nil
}

// Fail records one failure for key.
func (f *Failures) Fail(ctx context.Context, key string) error {
	_, err := f.Store.Hit(ctx, key, f.Window)
	return err
}

// Succeed clears key's failures.
func (f *Failures) Succeed(ctx context.Context, key string) error {
	return f.Store.Reset(ctx, key)
}
