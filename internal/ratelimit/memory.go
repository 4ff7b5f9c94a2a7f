package ratelimit

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Memory is a Store in process memory. Expired windows are dropped on
// access and by a sweeper, so keys seen once do not pile up. Counters are
// per process: replicas each have their own.
type Memory struct {
	now func() time.Time

	mu sync.Mutex
	// windows holds pointers so that counting in an open window changes
	// the window in place: assigning to a map entry again would store the
	// caller's key string in place of the one kept, and a caller's key may
	// view a larger object of its own (see Store).
	windows map[string]*memWindow

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

type memWindow struct {
	count int64
	end   time.Time
}

// NewMemory returns a memory Store that sweeps expired windows every
// sweepEvery (no sweeper when it is zero). Close stops the sweeper.
func NewMemory(sweepEvery time.Duration) *Memory {
	return newMemory(sweepEvery, time.Now)
}

func newMemory(sweepEvery time.Duration, now func() time.Time) *Memory {
	m := &Memory{now: now, windows: make(map[string]*memWindow), stop: make(chan struct{}), done: make(chan struct{})}
	if sweepEvery <= 0 {
		close(m.done)
		return m
	}
	go func() {
		defer close(m.done)
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.Sweep()
			}
		}
	}()
	return m
}

// Close stops the sweeper.
func (m *Memory) Close() error {
	m.once.Do(func() { close(m.stop) })
	<-m.done
	return nil
}

// Sweep drops every expired window.
func (m *Memory) Sweep() {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.windows {
		if !now.Before(w.end) {
			delete(m.windows, k)
		}
	}
}

// Len is the number of keys held, expired or not.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.windows)
}

func (m *Memory) Hit(_ context.Context, key string, window time.Duration) (Window, error) {
	now := m.now()
	m.mu.Lock()
	w := m.windows[key]
	if w == nil {
		// A key is kept as a copy of its own: not the caller's bytes.
		w = &memWindow{}
		m.windows[strings.Clone(key)] = w
	}
	if !now.Before(w.end) {
		*w = memWindow{end: now.Add(window)}
	}
	w.count++
	c := *w
	m.mu.Unlock()
	return Window{Count: c.count, ResetIn: c.end.Sub(now)}, nil
}

func (m *Memory) Peek(_ context.Context, key string) (Window, error) {
	now := m.now()
	m.mu.Lock()
	var w memWindow
	p, ok := m.windows[key]
	if ok {
		w = *p
	}
	m.mu.Unlock()
	if !ok || !now.Before(w.end) {
		return Window{}, nil
	}
	return Window{Count: w.count, ResetIn: w.end.Sub(now)}, nil
}

func (m *Memory) Reset(_ context.Context, key string) error {
	m.mu.Lock()
	delete(m.windows, key)
	m.mu.Unlock()
	return nil
}
