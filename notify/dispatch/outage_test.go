package dispatch_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/queue"
)

// Redis (a process of the test's own, with an append-only file) goes away
// in the middle of a chunk for longer than a lease (2 s here), so that the
// chunk's marks cannot be written: the attempt stops starting sends, lets
// those past their mark finish, stores their outcomes (the store is still
// there) and fails; when Redis is back the chunk is taken up again. Frozen
// (SIGSTOP), Redis applies on thawing the marks whose writer gave up
// waiting for the reply: marks in doubt, whose mail did not go, sent on
// resumption. No node died, so every acceptance reached its node: each
// subscriber is recorded once, as successful, and got the mail exactly
// once — none "unknown", none cut short and stored as failed.
func TestBroadcastOutlastsARedisOutageLongerThanALease(t *testing.T) {
	tests := []struct {
		name       string
		fail, mend func(*testsvc.OwnedRedis)
	}{
		{"stopped with SIGTERM and started again", (*testsvc.OwnedRedis).Stop, (*testsvc.OwnedRedis).Start},
		{"frozen with SIGSTOP and thawed", func(r *testsvc.OwnedRedis) { r.Pause() }, func(r *testsvc.OwnedRedis) { r.Resume() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { outlastRedisOutage(t, tc.fail, tc.mend) })
	}
}

func outlastRedisOutage(t *testing.T, fail, mend func(*testsvc.OwnedRedis)) {
	const subscribers, lease = 120, 2 * time.Second
	rd := testsvc.OwnRedisAOF(t)
	host, port, _ := net.SplitHostPort(rd.Addr)
	p, _ := strconv.Atoi(port)
	backend, err := queue.Open(&config.QueueConnection{Host: host, Port: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backend.Close() })
	logs := &lockedLog{}
	f := newFixture(t, func(o *dispatch.Options) {
		o.Backend = backend
		o.Lease = lease
		o.ChunkSize = 40
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	f.sink.delay.Store(int64(20 * time.Millisecond))
	addr := map[string]string{}
	for i := range subscribers {
		a := fmt.Sprintf("u%d@foo.com", i)
		addr[f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: a}).ID.Hex()] = a
	}
	n := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x"), AsyncBroadcastPushNotification: true})
	eventually(t, "a quarter of the mails", func() bool { return f.sink.count.Load() >= subscribers/4 })
	if f.sink.count.Load() >= subscribers {
		t.Fatal("every mail was sent before Redis stopped; the test needs it in the middle")
	}
	fail(rd)
	atStop := f.sink.count.Load()
	time.Sleep(3 * lease) // the outage itself: longer than a lease
	mend(rd)
	waitLong(t, "state sent", func() bool { return f.load(n.ID).State == notify.StateSent })
	if !strings.Contains(logs.String(), "resuming a broadcast chunk") {
		t.Fatalf("no chunk was interrupted and resumed; the test needs one:\n%s", logs.String())
	}

	got := f.load(n.ID)
	if len(got.Dispatch.Failed) != 0 {
		t.Errorf("failed: %+v", got.Dispatch.Failed)
	}
	if c := got.Dispatch.Counts; c.Successful != subscribers || c.Candidates != subscribers || c.Pending != 0 {
		t.Errorf("counts %+v", c)
	}
	seen := map[string]int{}
	for _, id := range got.Dispatch.Successful {
		seen[id]++
	}
	for id, a := range addr {
		if seen[id] != 1 {
			t.Errorf("%s recorded %d times", a, seen[id])
		}
		if m := len(f.sink.to(a)); m != 1 {
			t.Errorf("%s got %d mails", a, m)
		}
	}
	t.Logf("%d mails when Redis went away, %d in all", atStop, len(f.sink.messages()))
}

// lockedLog keeps what a dispatcher logs.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLong is eventually with room for a lease to expire and a job to be
// taken back: it measures nothing.
func waitLong(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A node stopped without a grace period (its jobs' contexts end at once)
// while mails are being handed to the SMTP server: the sends past their
// mark finish and are recorded, those still waiting for a connection stop
// and leave no outcome, and the node taking the chunk over sends only
// those. Each subscriber gets the mail once and is recorded once.
func TestStoppedNodeLetsSendsPastTheirMarkFinish(t *testing.T) {
	const subscribers = 20
	f := newFixture(t)
	f.sink.delay.Store(int64(300 * time.Millisecond))
	addr := map[string]string{}
	for i := range subscribers {
		a := fmt.Sprintf("u%d@foo.com", i)
		addr[f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: a}).ID.Hex()] = a
	}
	n := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x"), AsyncBroadcastPushNotification: true})
	eventually(t, "mails being handed over", func() bool { return f.sink.inData.Load() >= 3 })
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	_ = f.d.Close(stopped) // no grace: the jobs in flight are cut
	atStop := f.sink.count.Load()
	if atStop >= subscribers {
		t.Fatal("every mail was sent before the node stopped; the test needs it in the middle")
	}
	f.node(true)
	eventually(t, "state sent", func() bool { return f.load(n.ID).State == notify.StateSent })
	got := f.load(n.ID)
	if len(got.Dispatch.Failed) != 0 || got.Dispatch.Counts.Successful != subscribers {
		t.Errorf("dispatch %+v", got.Dispatch)
	}
	seen := map[string]int{}
	for _, id := range got.Dispatch.Successful {
		seen[id]++
	}
	for id, a := range addr {
		if seen[id] != 1 || len(f.sink.to(a)) != 1 {
			t.Errorf("%s recorded %d times, got %d mails", a, seen[id], len(f.sink.to(a)))
		}
	}
	t.Logf("%d mails accepted when the node stopped, %d in all", atStop, len(f.sink.messages()))
}
