package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/govkit/govkit/internal/testsvc"
)

// A Redis of the test's own is frozen (SIGSTOP) and thawed: while it does
// not answer, budgets are kept in memory — a client over its budget is
// still refused, nobody is let through unlimited — and once it answers
// again counting returns to it, without anything being restarted.
func TestFailoverKeepsBudgetsWhileRedisDoesNotAnswer(t *testing.T) {
	rd := testsvc.OwnRedis(t)
	client := redis.NewClient(&redis.Options{Addr: rd.Addr, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer client.Close()
	mem := NewMemory(0)
	defer mem.Close()
	changes := make(chan error, 4)
	f := NewFailover(NewRedis(client, "t:"), mem, func(ctx context.Context) error { return client.Ping(ctx).Err() },
		func(err error) { changes <- err })
	defer f.Close()
	ctx := context.Background()
	rule := Rule{Limit: 3, Window: time.Minute}

	if d, err := Allow(ctx, f, "up", rule); err != nil || !d.Allowed {
		t.Fatalf("with Redis up: %+v %v", d, err)
	}
	if f.Down() {
		t.Fatal("down while Redis answers")
	}

	rd.Pause()
	for i := range 3 {
		d, err := Allow(ctx, f, "client", rule)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d of the budget while Redis is frozen: %+v %v", i+1, d, err)
		}
	}
	if err := <-changes; err == nil {
		t.Fatal("no outage reported")
	}
	if !f.Down() {
		t.Fatal("not down while Redis is frozen")
	}
	if d, err := Allow(ctx, f, "client", rule); err != nil || d.Allowed {
		t.Fatalf("over the budget while Redis is frozen: %+v %v, want refused", d, err)
	}
	fails := Failures{Store: f, Max: 1, Window: time.Minute}
	if err := fails.Fail(ctx, "guesser"); err != nil {
		t.Fatal(err)
	}
	if blocked, _, err := fails.Blocked(ctx, "guesser"); err != nil || !blocked {
		t.Fatalf("a failure budget spent while Redis is frozen: blocked %v %v", blocked, err)
	}

	rd.Resume()
	if err := <-changes; err != nil {
		t.Fatalf("recovery reported as %v", err)
	}
	if f.Down() {
		t.Fatal("still down after Redis answered the probe")
	}
	// Counting is Redis's again: the key counted before the outage goes on
	// from where Redis left it.
	w, err := f.Hit(ctx, "up", time.Minute)
	if err != nil || w.Count != 2 {
		t.Fatalf("after recovery: %+v %v, want the second hit counted in Redis", w, err)
	}
}
