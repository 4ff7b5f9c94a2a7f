package cron_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/cron"
)

func TestHeldNotificationGoesOutAtTheFirstTickAfterInvalidBefore(t *testing.T) {
	f := newFixture(t, nil)
	f.subscribe(notify.Subscription{UserChannelID: "bar@foo.com"})
	n := f.insert(notify.Notification{Channel: notify.ChannelEmail, UserChannelID: "bar@foo.com",
		Message: emailMessage("held", "x"), InvalidBefore: time.Date(2026, 3, 4, 10, 2, 10, 0, time.UTC)})
	f.svc.Start()
	for _, tick := range []string{"10:01:00", "10:02:00"} {
		f.clock.Set(at(t, tick))
		if r := f.waitRunAt(cron.DispatchLiveNotifications, at(t, tick)); r.Err != nil {
			t.Fatalf("run %+v", r)
		}
		if got := f.load(n.ID); got.State != notify.StateNew || len(f.catcher.Mails()) != 0 {
			t.Fatalf("sent at %s, before invalidBefore", tick)
		}
	}
	f.clock.Set(at(t, "10:03:00"))
	f.waitRunAt(cron.DispatchLiveNotifications, at(t, "10:03:00"))
	if got := f.load(n.ID); got.State != notify.StateSent || len(f.mailsTo("bar@foo.com")) != 1 {
		t.Fatalf("state %s, %d mails", got.State, len(f.catcher.Mails()))
	}
}

func at(t *testing.T, hms string) time.Time {
	t.Helper()
	v, err := time.Parse(time.DateTime, "2026-03-04 "+hms)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestEveryJobRunsAtItsTimeSpec(t *testing.T) {
	f := newFixture(t, nil)
	f.svc.Start()
	// From 10:00:30: minutely jobs at 10:01, reDispatch at 10:02,
	// deleteBounces at 11:00, purgeData at 01:00 the next day.
	want := []struct {
		job  string
		when time.Time
	}{
		{cron.DispatchLiveNotifications, at(t, "10:01:00")},
		{cron.CheckRssConfigUpdates, at(t, "10:01:00")},
		{cron.ReDispatchBroadcastPushNotifications, at(t, "10:02:00")},
		{cron.DeleteBounces, at(t, "11:00:00")},
		{cron.PurgeData, time.Date(2026, 3, 5, 1, 0, 0, 0, time.UTC)},
	}
	for _, w := range want {
		f.clock.Set(w.when)
		r := f.waitRunAt(w.job, w.when)
		if r.Err != nil || !r.At.Equal(w.when) {
			t.Errorf("%s ran for %s (%v), want %s", w.job, r.At, r.Err, w.when)
		}
	}
}

// Two nodes running cron at once (two primaries during a rolling update)
// share the locks: each scheduled run happens on one of them.
func TestTwoNodesRunEachScheduledRunOnce(t *testing.T) {
	runs := make(chan cron.Run, 100)
	locker := cron.NewMemoryLocker(nil)
	share := func(o *cron.Options) {
		o.Locker = locker
		o.OnRun = func(r cron.Run) { runs <- r }
	}
	a := newFixture(t, nil, share)
	// The second node: same store, same locks, same clock.
	b, err := cron.New(cron.Options{Config: a.cfg, Store: a.store, Dispatcher: a.d, Clock: a.clock, Location: time.UTC,
		Locker: locker, Logger: quietLog(), OnRun: func(r cron.Run) { runs <- r }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Stop(context.Background()) })
	a.svc.Start()
	b.Start()
	for _, tick := range []string{"10:01:00", "10:02:00", "10:03:00"} {
		a.clock.Set(at(t, tick))
		ran, skipped := 0, 0
		for ran+skipped < 2 {
			var r cron.Run
			select {
			case r = <-runs:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: ran %d, skipped %d so far", tick, ran, skipped)
			}
			if r.Job != cron.DispatchLiveNotifications {
				continue
			}
			if r.Skipped {
				skipped++
			} else {
				ran++
			}
		}
		if ran != 1 || skipped != 1 {
			t.Fatalf("%s: ran %d, skipped %d", tick, ran, skipped)
		}
	}
}

func TestRssSchedulesFollowTheirConfigurations(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.subscribe(notify.Subscription{UserChannelID: "bar@foo.com"})
	srv := newFeedServer(t, rss2(rssItem{"1", "One", "Wed, 28 Jun 2017 08:00:00 EDT"}))
	c := f.rssConfig(srv.URL, notify.Fields{{Key: "timeSpec", Value: "0 */5 * * * *"}})
	job := "rss:" + c.ID.Hex()
	f.svc.Start()
	f.clock.Set(at(t, "10:01:00"))
	f.waitRunAt(cron.CheckRssConfigUpdates, at(t, "10:01:00"))
	f.clock.Set(at(t, "10:05:00"))
	if r := f.waitRunAt(job, at(t, "10:05:00")); r.Err != nil {
		t.Fatal(r.Err)
	}
	if srv.hits.Load() != 1 {
		t.Fatalf("feed fetched %d times", srv.hits.Load())
	}
	eventually(t, "the item's mail", func() bool { return len(f.mailsTo("bar@foo.com")) == 1 })

	// An edited configuration is restarted with its new time spec.
	rss := c.Value.(notify.Fields)[0].Value.(notify.Fields)
	rss.Set("timeSpec", "0 7 * * * *")
	c.Value.(notify.Fields)[0].Value = rss
	if err := f.store.Configurations().Replace(ctx, c); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(at(t, "10:06:00"))
	f.waitRunAt(cron.CheckRssConfigUpdates, at(t, "10:06:00"))
	f.clock.Set(at(t, "10:07:00"))
	f.waitRunAt(job, at(t, "10:07:00"))
	// A deleted one is stopped.
	if err := f.store.Configurations().DeleteByID(ctx, c.ID.Hex()); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(at(t, "10:08:00"))
	f.waitRunAt(cron.CheckRssConfigUpdates, at(t, "10:08:00"))
	hits := srv.hits.Load()
	f.clock.Set(at(t, "11:07:00")) // the old schedule's time
	// The check missed since 10:09 runs once, late.
	f.waitRunAt(cron.CheckRssConfigUpdates, at(t, "10:09:00"))
	time.Sleep(200 * time.Millisecond) // room for a poll that should not happen
	f.mu.Lock()
	polled := len(f.runs[job])
	f.mu.Unlock()
	if polled != 0 || srv.hits.Load() != hits {
		t.Fatal("a deleted configuration's feed was polled")
	}
}

func TestNewRefusesABadTimeSpecNamingItsKey(t *testing.T) {
	f := newFixture(t, nil)
	cfg := *f.cfg
	cfg.Cron.DeleteBounces.TimeSpec = "0 0 0 31 2 *"
	_, err := cron.New(cron.Options{Config: &cfg, Store: f.store, Dispatcher: f.d})
	if err == nil || !strings.Contains(err.Error(), "cron.deleteBounces.timeSpec") {
		t.Fatalf("err = %v", err)
	}
}

func TestLockers(t *testing.T) {
	ctx := context.Background()
	clock := cron.NewManualClock(start)
	lockers := map[string]cron.Locker{"memory": cron.NewMemoryLocker(clock)}
	r := testsvc.RequireRedis(t)
	lockers["redis"] = cron.NewRedisLocker(r.Client, r.Prefix)
	other := cron.NewRedisLocker(r.Client, r.Prefix)
	for name, l := range lockers {
		t.Run(name, func(t *testing.T) {
			if ok, err := l.Acquire(ctx, "job:1", time.Minute); !ok || err != nil {
				t.Fatalf("first acquire: %v, %v", ok, err)
			}
			if ok, err := l.Acquire(ctx, "job:1", time.Minute); ok || err != nil {
				t.Fatalf("second acquire: %v, %v", ok, err)
			}
			if ok, _ := l.Acquire(ctx, "job:2", time.Minute); !ok {
				t.Fatal("another key is free")
			}
		})
	}
	if ok, _ := other.Acquire(ctx, "job:1", time.Minute); ok {
		t.Error("a second node took a lock the first holds")
	}
	clock.Advance(2 * time.Minute)
	if ok, _ := lockers["memory"].Acquire(ctx, "job:1", time.Minute); !ok {
		t.Error("an expired memory lock is free again")
	}
	if ok, _ := other.Acquire(ctx, "expiring", 50*time.Millisecond); !ok {
		t.Fatal("acquire")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ok, _ := other.Acquire(ctx, "expiring", time.Minute); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a Redis lock never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
