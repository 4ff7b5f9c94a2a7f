package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/govkit/govkit/internal/testsvc"
)

// fakeClock is advanced by the tests instead of sleeping.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type backend struct {
	store   Store
	window  time.Duration
	advance func(time.Duration)
}

func backends(t *testing.T) map[string]func(t *testing.T) backend {
	return map[string]func(t *testing.T) backend{
		"memory": func(t *testing.T) backend {
			c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			m := newMemory(0, c.now)
			return backend{store: m, window: time.Minute, advance: c.add}
		},
		"redis": func(t *testing.T) backend {
			r := testsvc.RequireRedis(t)
			return backend{store: NewRedis(r.Client, r.Prefix), window: 300 * time.Millisecond, advance: time.Sleep}
		},
	}
}

func TestAllow(t *testing.T) {
	ctx := context.Background()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("limit requests pass, the next is refused with the rest of the window as Retry-After", func(t *testing.T) {
				b := mk(t)
				rule := Rule{Limit: 3, Window: b.window}
				for i := 1; i <= 3; i++ {
					d, err := Allow(ctx, b.store, "ip:a", rule)
					if err != nil {
						t.Fatal(err)
					}
					if !d.Allowed || d.Remaining != 3-i || d.Limit != 3 {
						t.Fatalf("request %d: %+v", i, d)
					}
				}
				d, err := Allow(ctx, b.store, "ip:a", rule)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed || d.Remaining != 0 || d.ResetIn <= 0 || d.ResetIn > b.window {
					t.Fatalf("4th request: %+v", d)
				}
			})
			t.Run("keys have separate budgets", func(t *testing.T) {
				b := mk(t)
				rule := Rule{Limit: 1, Window: b.window}
				Allow(ctx, b.store, "ip:a", rule)
				if d, _ := Allow(ctx, b.store, "ip:b", rule); !d.Allowed {
					t.Fatal("ip:b refused after ip:a used its budget")
				}
			})
			t.Run("a new window restores the budget", func(t *testing.T) {
				b := mk(t)
				rule := Rule{Limit: 1, Window: b.window}
				Allow(ctx, b.store, "ip:a", rule)
				if d, _ := Allow(ctx, b.store, "ip:a", rule); d.Allowed {
					t.Fatal("second request allowed")
				}
				b.advance(b.window + 50*time.Millisecond)
				if d, _ := Allow(ctx, b.store, "ip:a", rule); !d.Allowed {
					t.Fatalf("refused in a new window: %+v", d)
				}
			})
		})
	}
}

func TestFailures(t *testing.T) {
	ctx := context.Background()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("max failures allowed, then blocked before any work", func(t *testing.T) {
				b := mk(t)
				f := &Failures{Store: b.store, Max: 20, Window: b.window}
				for i := 0; i < 20; i++ {
					if blocked, _, err := f.Blocked(ctx, "k"); err != nil || blocked {
						t.Fatalf("attempt %d blocked (err %v)", i+1, err)
					}
					if err := f.Fail(ctx, "k"); err != nil {
						t.Fatal(err)
					}
				}
				blocked, retry, err := f.Blocked(ctx, "k")
				if err != nil || !blocked || retry <= 0 {
					t.Fatalf("21st attempt: blocked=%v retry=%v err=%v", blocked, retry, err)
				}
			})
			t.Run("a success resets the counter", func(t *testing.T) {
				b := mk(t)
				f := &Failures{Store: b.store, Max: 2, Window: b.window}
				f.Fail(ctx, "k")
				f.Fail(ctx, "k")
				if blocked, _, _ := f.Blocked(ctx, "k"); !blocked {
					t.Fatal("not blocked after 2 failures")
				}
				if err := f.Succeed(ctx, "k"); err != nil {
					t.Fatal(err)
				}
				if blocked, _, _ := f.Blocked(ctx, "k"); blocked {
					t.Fatal("still blocked after success")
				}
			})
			t.Run("the block ends with the window", func(t *testing.T) {
				b := mk(t)
				f := &Failures{Store: b.store, Max: 1, Window: b.window}
				f.Fail(ctx, "k")
				b.advance(b.window + 50*time.Millisecond)
				if blocked, _, _ := f.Blocked(ctx, "k"); blocked {
					t.Fatal("still blocked after the window")
				}
			})
		})
	}
}

func TestMemorySweepDropsExpiredWindows(t *testing.T) {
	c := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	m := newMemory(0, c.now)
	ctx := context.Background()
	m.Hit(ctx, "old", time.Second)
	c.add(2 * time.Second)
	m.Hit(ctx, "fresh", time.Minute)
	m.Sweep()
	if m.Len() != 1 {
		t.Fatalf("%d keys after sweep, want 1", m.Len())
	}
	if w, _ := m.Peek(ctx, "fresh"); w.Count != 1 {
		t.Fatalf("fresh window lost: %+v", w)
	}
}

func TestMemorySweeperRuns(t *testing.T) {
	m := NewMemory(5 * time.Millisecond)
	defer m.Close()
	m.Hit(context.Background(), "k", time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for m.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("sweeper never dropped the expired window")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Two stores on one Redis prefix are two replicas: they share one budget.
func TestRedisReplicasShareOneBudget(t *testing.T) {
	r := testsvc.RequireRedis(t)
	a, b := NewRedis(r.Client, r.Prefix), NewRedis(r.Client, r.Prefix)
	ctx := context.Background()
	rule := Rule{Limit: 4, Window: time.Minute}
	for i := 0; i < 2; i++ {
		Allow(ctx, a, "ip", rule)
		Allow(ctx, b, "ip", rule)
	}
	if d, _ := Allow(ctx, a, "ip", rule); d.Allowed {
		t.Fatal("fifth request across replicas allowed")
	}
}

func TestConcurrentHitsAreAllCounted(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			b := mk(t)
			var wg sync.WaitGroup
			for i := 0; i < 50; i++ {
				wg.Add(1)
				go func() { defer wg.Done(); b.store.Hit(context.Background(), "k", time.Minute) }()
			}
			wg.Wait()
			w, err := b.store.Peek(context.Background(), "k")
			if err != nil || w.Count != 50 {
				t.Fatalf("count %d (err %v), want 50", w.Count, err)
			}
		})
	}
}

func BenchmarkMemoryAllow(b *testing.B) {
	m := NewMemory(time.Minute)
	defer m.Close()
	ctx := context.Background()
	rule := Rule{Limit: 1 << 30, Window: time.Minute}
	b.ReportAllocs()
	for b.Loop() {
		Allow(ctx, m, "global:127.0.0.1", rule)
	}
}

// A key may view a buffer its caller goes on to use (Store's contract):
// every store counts under the key's text at the time of the call, and
// the memory store keeps a copy of its own rather than the caller's
// bytes, which writing over the buffer would otherwise change under the
// map.
func TestKeysViewingACallersBufferAreCopied(t *testing.T) {
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			b := mk(t)
			ctx := context.Background()
			buf := []byte("rl:global:192.0.2.1")
			view := unsafe.String(&buf[0], len(buf))
			if _, err := b.store.Hit(ctx, view, b.window); err != nil {
				t.Fatal(err)
			}
			copy(buf, "rl:global:192.0.2.2")
			w, err := b.store.Hit(ctx, "rl:global:192.0.2.1", b.window)
			if err != nil || w.Count != 2 {
				t.Fatalf("first key after its buffer changed: %+v, %v", w, err)
			}
			w, err = b.store.Hit(ctx, view, b.window) // now reads …0.2.2
			if err != nil || w.Count != 1 {
				t.Fatalf("second key: %+v, %v", w, err)
			}
			if m, ok := b.store.(*Memory); ok && m.Len() != 2 {
				t.Fatalf("%d keys held, want 2", m.Len())
			}
		})
	}
}
