package queue_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/queue"
)

// backends returns the backends every behaviour is checked on: the
// embedded Redis, and the test Redis under a prefix of this test's own.
func backends(t *testing.T) map[string]*queue.Backend {
	t.Helper()
	emb, err := queue.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close() })
	out := map[string]*queue.Backend{"embedded": emb}
	r := testsvc.RequireRedis(t)
	out["redis"] = &queue.Backend{Client: r.Client, Prefix: r.Prefix, Addr: r.Addr}
	return out
}

// eventually polls cond for up to 30 s; the bound keeps a broken test from
// hanging and measures nothing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestJobsRunOnceEachAndDuplicatesAreIgnored(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			q := queue.NewQueue(b, queue.QueueOptions{Name: "once"})
			ctx := context.Background()
			var ids []string
			for i := range 50 {
				ids = append(ids, fmt.Sprint("job-", i))
			}
			if n, err := q.Enqueue(ctx, ids...); err != nil || n != 50 {
				t.Fatalf("enqueue = %d, %v", n, err)
			}
			if n, err := q.Enqueue(ctx, ids[:10]...); err != nil || n != 0 {
				t.Fatalf("enqueue of known ids = %d, %v; want 0", n, err)
			}
			var mu sync.Mutex
			seen := map[string]int{}
			w := q.Start(4, func(ctx context.Context, j queue.Job) error {
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				return nil
			})
			defer w.Stop(ctx)
			eventually(t, "every job to run", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) == 50
			})
			eventually(t, "the queue to be empty", func() bool {
				s, err := q.Stats(ctx)
				return err == nil && s == queue.Stats{}
			})
			for id, n := range seen {
				if n != 1 {
					t.Errorf("%s ran %d times", id, n)
				}
			}
			// Once acknowledged, an id may be enqueued again.
			if n, err := q.Enqueue(ctx, ids[0]); err != nil || n != 1 {
				t.Fatalf("enqueue after done = %d, %v", n, err)
			}
		})
	}
}

func TestFailedJobRunsAgainAfterBackoff(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			q := queue.NewQueue(b, queue.QueueOptions{Name: "retry", FirstBackoff: 50 * time.Millisecond, IdleWait: 50 * time.Millisecond})
			ctx := context.Background()
			var attempts []int
			var mu sync.Mutex
			w := q.Start(1, func(ctx context.Context, j queue.Job) error {
				mu.Lock()
				defer mu.Unlock()
				attempts = append(attempts, j.Attempt)
				if j.Attempt < 3 {
					return errors.New("not yet")
				}
				return nil
			})
			defer w.Stop(ctx)
			if _, err := q.Enqueue(ctx, "flaky"); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the third attempt", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(attempts) == 3
			})
			eventually(t, "the job to be acknowledged", func() bool {
				known, err := q.Known(ctx, "flaky")
				return err == nil && !known
			})
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(attempts, []int{1, 2, 3}) {
				t.Errorf("attempts = %v", attempts)
			}
		})
	}
}

// A worker that stops heartbeating (its process died) loses the job to
// another worker once the lease expires; the job's attempt count says so.
func TestDeadWorkersJobIsTakenOver(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			opts := queue.QueueOptions{Name: "takeover", Lease: 300 * time.Millisecond, ReapEvery: 50 * time.Millisecond, IdleWait: 50 * time.Millisecond}
			ctx := context.Background()
			dead := queue.NewQueue(b, opts)
			started := make(chan struct{})
			hang := make(chan struct{})
			// The "dead" node: its handler never returns and its
			// heartbeats are made to fail by deleting its ownership.
			w1 := dead.Start(1, func(ctx context.Context, j queue.Job) error {
				close(started)
				<-hang
				return nil
			})
			if _, err := dead.Enqueue(ctx, "chunk"); err != nil {
				t.Fatal(err)
			}
			<-started
			// Simulate the crash: stop its heartbeats by stopping claiming
			// and forgetting the owner, as an expired lease would look.
			if err := b.Client.HDel(ctx, b.Prefix+"takeover:owners", "chunk").Err(); err != nil {
				t.Fatal(err)
			}
			got := make(chan int, 1)
			other := queue.NewQueue(b, opts)
			w2 := other.Start(1, func(ctx context.Context, j queue.Job) error {
				got <- j.Attempt
				return nil
			})
			defer w2.Stop(ctx)
			select {
			case a := <-got:
				if a != 2 {
					t.Errorf("attempt = %d, want 2", a)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the job was not taken over")
			}
			close(hang)
			_ = w1.Stop(ctx)
		})
	}
}

// A handler learns through its context that its lease is gone.
func TestHandlerIsCancelledWhenItsLeaseIsLost(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			q := queue.NewQueue(b, queue.QueueOptions{Name: "lost", Lease: 150 * time.Millisecond, ReapEvery: time.Hour})
			ctx := context.Background()
			cancelled := make(chan struct{})
			started := make(chan struct{})
			w := q.Start(1, func(ctx context.Context, j queue.Job) error {
				close(started)
				<-ctx.Done()
				close(cancelled)
				return ctx.Err()
			})
			defer w.Stop(ctx)
			if _, err := q.Enqueue(ctx, "x"); err != nil {
				t.Fatal(err)
			}
			<-started
			if err := b.Client.HSet(ctx, b.Prefix+"lost:owners", "x", "someone-else").Err(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-cancelled:
			case <-time.After(30 * time.Second):
				t.Fatal("handler not cancelled")
			}
		})
	}
}

// Stopping past the grace period hands running jobs to others without
// counting an attempt.
func TestStopReleasesRunningJobs(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			q := queue.NewQueue(b, queue.QueueOptions{Name: "release", IdleWait: 50 * time.Millisecond})
			ctx := context.Background()
			started := make(chan struct{})
			w := q.Start(1, func(ctx context.Context, j queue.Job) error {
				close(started)
				<-ctx.Done()
				return ctx.Err()
			})
			if _, err := q.Enqueue(ctx, "long"); err != nil {
				t.Fatal(err)
			}
			<-started
			stop, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			if err := w.Stop(stop); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("stop = %v", err)
			}
			got := make(chan int, 1)
			w2 := q.Start(1, func(ctx context.Context, j queue.Job) error { got <- j.Attempt; return nil })
			defer w2.Stop(ctx)
			select {
			case a := <-got:
				if a != 1 {
					t.Errorf("attempt after release = %d, want 1", a)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("released job not run")
			}
		})
	}
}

// Grants of one throttle shared by several clients (as by several nodes)
// are never closer than the interval, measured where they are decided.
func TestThrottleSpacesGrantsAcrossClients(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			const max, duration = 5, 500 * time.Millisecond
			var clients []*queue.Throttle
			for range 3 {
				c := b.Client
				if name == "redis" {
					c = redis.NewClient(&redis.Options{Addr: b.Addr})
					t.Cleanup(func() { _ = c.Close() })
				}
				clients = append(clients, queue.NewThrottle(&queue.Backend{Client: c, Prefix: b.Prefix}, "spacing", max, duration))
			}
			interval := clients[0].Interval()
			if interval != 100*time.Millisecond {
				t.Fatalf("interval = %v", interval)
			}
			var mu sync.Mutex
			var grants []time.Time // Redis time of each grant
			var wg sync.WaitGroup
			for i := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					th := clients[i%len(clients)]
					if err := th.Wait(context.Background(), 5); err != nil {
						t.Error(err)
						return
					}
					now, err := b.Client.Time(context.Background()).Result()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					grants = append(grants, now)
					mu.Unlock()
				}()
			}
			wg.Wait()
			slices.SortFunc(grants, func(a, b time.Time) int { return a.Compare(b) })
			// Every window of max+1 grants spans at least duration minus
			// the time between a grant and its timestamp being read
			// (generously 60 ms on a loaded machine).
			for i := 0; i+max < len(grants); i++ {
				if span := grants[i+max].Sub(grants[i]); span < duration-60*time.Millisecond {
					t.Errorf("%d grants within %v", max+1, span)
				}
			}
		})
	}
}

// A waiter of priority 1 goes before a backlog of priority 5 waiters.
func TestThrottlePriorityOvertakesBacklog(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			th := queue.NewThrottle(b, "priority", 1, 100*time.Millisecond)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var order []int
			var mu sync.Mutex
			record := func(p int) {
				mu.Lock()
				order = append(order, p)
				mu.Unlock()
			}
			var wg sync.WaitGroup
			for range 10 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if th.Wait(ctx, 5) == nil {
						record(5)
					}
				}()
			}
			waiting := func() int64 { return b.Client.ZCard(ctx, b.Prefix+"throttle:priority:waiting").Val() }
			eventually(t, "a backlog", func() bool { return waiting() >= 8 })
			mu.Lock()
			before := len(order)
			mu.Unlock()
			if err := th.Wait(ctx, 1); err != nil {
				t.Fatal(err)
			}
			record(1)
			wg.Wait()
			// The priority-1 waiter came after at most one more grant (the
			// slot being taken as it arrived).
			pos := slices.Index(order, 1)
			if pos > before+1 {
				t.Errorf("priority 1 granted at %d; %d grants had happened before it asked (order %v)", pos, before, order)
			}
		})
	}
}

// A waiter that stops polling (its node died) leaves the line by itself.
func TestThrottleDeadWaiterLeavesTheLine(t *testing.T) {
	b, err := queue.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	th := queue.NewThrottle(b, "dead", 1, 10*time.Millisecond)
	// A ticket at the head of the line whose owner never comes back.
	ctx := context.Background()
	if err := b.Client.ZAdd(ctx, b.Prefix+"throttle:dead:waiting", redis.Z{Score: 0, Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Client.ZAdd(ctx, b.Prefix+"throttle:dead:alive", redis.Z{Score: float64(time.Now().Add(time.Second).UnixMicro()), Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := th.Wait(wctx, 5); err != nil {
		t.Fatalf("live waiter blocked behind a dead one: %v", err)
	}
}

func TestWaitGivesUpWithItsContext(t *testing.T) {
	b, err := queue.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	th := queue.NewThrottle(b, "ctx", 1, time.Hour)
	if err := th.Wait(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := th.Wait(ctx, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if n := b.Client.ZCard(context.Background(), b.Prefix+"throttle:ctx:waiting").Val(); n != 0 {
		t.Errorf("%d tickets left behind", n)
	}
}

func TestOpenReadsIORedisOptions(t *testing.T) {
	r := testsvc.RequireRedis(t)
	host, port := splitAddr(t, r.Addr)
	conn := &config.QueueConnection{Host: host, Port: port, Raw: map[string]any{"keyPrefix": r.Prefix, "connectTimeout": 2000.0, "family": 4.0}}
	b, err := queue.Open(conn)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Prefix != r.Prefix || b.Embedded() {
		t.Errorf("prefix %q, embedded %v", b.Prefix, b.Embedded())
	}
	if err := b.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		conn config.QueueConnection
		want string
	}{
		{"sentinels need a master name", config.QueueConnection{Sentinels: []config.HostPort{{Host: "127.0.0.1", Port: 26379}}}, "queue.connection.name"},
		{"a CA must be PEM", config.QueueConnection{Host: "h", Port: 1, TLS: true, Raw: map[string]any{"tls": map[string]any{"ca": "nope"}}}, "queue.connection.tls.ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := queue.Open(&tc.conn)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func TestUnreachableRedisFailsPing(t *testing.T) {
	b, err := queue.Open(&config.QueueConnection{Host: "127.0.0.1", Port: 1, Raw: map[string]any{"connectTimeout": 200.0}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.Ping(ctx); err == nil {
		t.Fatal("ping of a closed port succeeded")
	}
}

func splitAddr(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

func TestEnqueueFrontGoesFirst(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			q := queue.NewQueue(b, queue.QueueOptions{Name: "front"})
			ctx := context.Background()
			if _, err := q.Enqueue(ctx, "chunk-1", "chunk-2"); err != nil {
				t.Fatal(err)
			}
			if n, err := q.EnqueueFront(ctx, "finish"); err != nil || n != 1 {
				t.Fatal(n, err)
			}
			var mu sync.Mutex
			var order []string
			w := q.Start(1, func(ctx context.Context, j queue.Job) error {
				mu.Lock()
				order = append(order, j.ID)
				mu.Unlock()
				return nil
			})
			defer w.Stop(ctx)
			eventually(t, "three jobs", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(order) == 3
			})
			if !slices.Equal(order, []string{"finish", "chunk-1", "chunk-2"}) {
				t.Errorf("order %v", order)
			}
		})
	}
}
