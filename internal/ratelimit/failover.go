package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Failover is a Store that counts in a shared store (Redis) and, while
// that store fails, in process memory: budgets keep holding, per process,
// through an outage of the shared counters. The two ways out it avoids
// are letting every request through (granting unlimited attempts, at
// login and at API keys alike) and refusing every request (taking the
// service down with its counters). During the outage a client may use a
// budget on each process; once the shared store answers again, counting
// returns to it (windows counted in memory are not carried over).
//
// After a failure, no request waits on the shared store: a background
// probe asks it every ProbeEvery, and the next request after a successful
// probe uses it again. So one request per outage pays the shared store's
// timeout.
type Failover struct {
	shared Store
	local  *Memory
	probe  func(ctx context.Context) error
	every  time.Duration
	// onChange, when set, is told when the shared store goes down (err)
	// and comes back (nil).
	onChange func(err error)

	down   atomic.Bool // read on every request: no lock
	mu     sync.Mutex  // over going down, closed and wg
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

// ProbeEvery is how often a Failover asks a failed shared store whether
// it answers again.
const ProbeEvery = time.Second

// NewFailover counts in shared, and in local while shared fails; probe
// asks shared whether it answers (a PING), with a deadline in ctx.
// onChange may be nil.
func NewFailover(shared Store, local *Memory, probe func(ctx context.Context) error, onChange func(err error)) *Failover {
	return &Failover{shared: shared, local: local, probe: probe, every: ProbeEvery, onChange: onChange, stop: make(chan struct{})}
}

// Down reports whether counting happens in process memory now.
func (f *Failover) Down() bool { return f.down.Load() }

// failed switches to memory after the shared store failed with err (unless
// the caller's own context ended: that is not the store's failure) and
// starts the probe.
func (f *Failover) failed(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	f.mu.Lock()
	if f.down.Load() || f.closed {
		f.mu.Unlock()
		return true
	}
	f.down.Store(true)
	f.wg.Add(1)
	f.mu.Unlock()
	if f.onChange != nil {
		f.onChange(err)
	}
	go f.recover()
	return true
}

// recover probes the shared store until it answers or Close.
func (f *Failover) recover() {
	defer f.wg.Done()
	for {
		select {
		case <-f.stop:
			return
		case <-time.After(f.every):
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.every)
		err := f.probe(ctx)
		cancel()
		if err == nil {
			f.down.Store(false)
			if f.onChange != nil {
				f.onChange(nil)
			}
			return
		}
	}
}

func (f *Failover) Hit(ctx context.Context, key string, window time.Duration) (Window, error) {
	if !f.down.Load() {
		w, err := f.shared.Hit(ctx, key, window)
		if err == nil || !f.failed(ctx, err) {
			return w, err
		}
	}
	return f.local.Hit(ctx, key, window)
}

func (f *Failover) Peek(ctx context.Context, key string) (Window, error) {
	if !f.down.Load() {
		w, err := f.shared.Peek(ctx, key)
		if err == nil || !f.failed(ctx, err) {
			return w, err
		}
	}
	return f.local.Peek(ctx, key)
}

func (f *Failover) Reset(ctx context.Context, key string) error {
	if !f.down.Load() {
		err := f.shared.Reset(ctx, key)
		if err == nil || !f.failed(ctx, err) {
			return err
		}
	}
	return f.local.Reset(ctx, key)
}

// Close stops the probe; the stores are the caller's to close.
func (f *Failover) Close() error {
	f.mu.Lock()
	if !f.closed {
		f.closed = true
		close(f.stop)
	}
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}
