package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify"
	notifydispatch "github.com/govkit/govkit/notify/dispatch"
)

// A node started by a test can be held at a point of a broadcast's life
// (notify/dispatch's test hook, points such as "finish" or
// "plan:chunk-written:2"): when GOVKIT_TEST_HOLD_DIR is set and the test
// has armed the point (cluster.arm: a file named after it in that
// directory), the first node of the cluster to reach it takes the file
// away, logs "govkit-test: held at <point>" and waits for SIGUSR1; the
// others pass. The test then breaks something — stops Redis, kills the
// node — at exactly that point, instead of after a guessed delay.
const holdDirEnv = "GOVKIT_TEST_HOLD_DIR"

func installHold() {
	dir := os.Getenv(holdDirEnv)
	if dir == "" {
		return
	}
	release := make(chan os.Signal, 1)
	signal.Notify(release, syscall.SIGUSR1)
	notifydispatch.SetTestHook(func(_ context.Context, point string) {
		if os.Remove(filepath.Join(dir, holdFile(point))) != nil {
			return // not armed, or another node took it
		}
		fmt.Fprintf(os.Stderr, "govkit-test: held at %s\n", point)
		<-release
		fmt.Fprintf(os.Stderr, "govkit-test: released at %s\n", point)
	})
}

func holdFile(point string) string { return strings.ReplaceAll(point, ":", "_") }

// holding makes the cluster's nodes able to be held (before they start).
func (c *cluster) holding() {
	c.holdDir = c.t.TempDir()
	c.env = append(c.env, holdDirEnv+"="+c.holdDir)
}

// arm makes the next node to reach point hold there; wait returns that
// node once it holds.
func (c *cluster) arm(point string, nodes ...*node) (wait func() *node) {
	c.t.Helper()
	line := "govkit-test: held at " + point + "\n"
	before := make([]int, len(nodes))
	for i, n := range nodes {
		before[i] = strings.Count(n.logs.String(), line)
	}
	if err := os.WriteFile(filepath.Join(c.holdDir, holdFile(point)), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
	return func() *node {
		c.t.Helper()
		var held *node
		waitFor(c.t, 3*time.Minute, "a node to be held at "+point, func() bool {
			for i, n := range nodes {
				if strings.Count(n.logs.String(), line) > before[i] {
					held = n
					return true
				}
			}
			return false
		})
		return held
	}
}

func (n *node) release(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
}

// broadcast posts an asynchronous email broadcast to svc's subscribers
// through n and returns its id.
func (n *node) broadcast(t *testing.T, svc string) string {
	t.Helper()
	var posted notificationView
	if st := n.do(t, "POST", "/notifications", map[string]any{
		"serviceName": svc, "channel": "email", "isBroadcast": true, "asyncBroadcastPushNotification": true,
		"message": map[string]any{"from": "no_reply@invalid.local", "subject": "hello", "textBody": "hi {subscription_id}"},
	}, &posted); st != http.StatusOK {
		t.Fatalf("POST notification: %d", st)
	}
	return posted.ID
}

// sentVia waits for notification id to be sent, as n answers, and returns
// it.
func (n *node) sentVia(t *testing.T, id string) notificationView {
	t.Helper()
	var got notificationView
	waitFor(t, 4*time.Minute, "the broadcast to finish", func() bool {
		got = notificationView{}
		return n.do(t, "GET", "/notifications/"+id, nil, &got) == http.StatusOK && got.State == notify.StateSent
	})
	return got
}

// checkOnce checks the guarantee of a broadcast to ids (address →
// subscription id) that a fault interrupted: every subscriber recorded
// exactly once, as successful (a fault is no subscriber's failure), and
// every address got the mail. An address got it twice only when lostAck
// says so of its first delivery: the sink accepted it and the node that
// sent it could not have stored that (it was killed). It returns how many
// got it twice.
func checkOnce(t *testing.T, c *cluster, svc string, ids map[string]string, got notificationView, lostAck func(delivery) bool) int {
	t.Helper()
	d := got.Dispatch
	if d.Counts.Candidates != int64(len(ids)) || d.Counts.Successful != int64(len(ids)) || d.Counts.Failed != 0 || d.Counts.Pending != 0 {
		t.Errorf("counts %+v, want %d successful", d.Counts, len(ids))
	}
	for _, f := range d.Failed {
		t.Errorf("%s recorded failed: %v", f.SubscriptionID, f.Error)
	}
	recorded := map[string]int{}
	for _, id := range d.Successful {
		recorded[id]++
	}
	perAddress := map[string][]delivery{}
	for _, dl := range c.sink.deliveries() {
		if strings.HasSuffix(dl.to, "@"+svc+".test") {
			perAddress[dl.to] = append(perAddress[dl.to], dl)
		}
	}
	twice := 0
	for addr, id := range ids {
		if recorded[id] != 1 {
			t.Errorf("%s (%s) recorded %d times in dispatch.successful", id, addr, recorded[id])
		}
		switch got := perAddress[addr]; {
		case len(got) == 0:
			t.Errorf("%s got no mail", addr)
		case len(got) == 2:
			twice++
			first := got[0]
			if got[1].at.Before(first.at) {
				first = got[1]
			}
			if lostAck == nil || !lostAck(first) {
				t.Errorf("%s got the mail twice (first from %s at %v), and its first acceptance reached a live node", addr, first.node, first.at)
			}
		case len(got) > 2:
			t.Errorf("%s got %d mails", addr, len(got))
		}
	}
	return twice
}

// redisGaps are how long Redis stays down in TestClusterRidesOutARedisRestart:
// one second by default; GOVKIT_TEST_REDIS_GAPS=1s,6s,15s for the full
// matrix (about three minutes more).
func redisGaps(t *testing.T) []time.Duration {
	v := os.Getenv("GOVKIT_TEST_REDIS_GAPS")
	if v == "" {
		return []time.Duration{time.Second}
	}
	var gaps []time.Duration
	for _, f := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("GOVKIT_TEST_REDIS_GAPS: %v", err)
		}
		gaps = append(gaps, d)
	}
	return gaps
}

// A primary and two secondaries on FerretDB-on-PostgreSQL and a Redis of
// the test's own with an append-only file. Redis is stopped (SIGTERM) and
// started again on the same port, after a gap, at three points of a
// broadcast: while the plan is being written (a node held after its third
// chunk), in the middle of the chunks (a third of the mails at the sink),
// and during the finish step (the node held as it begins); and frozen
// (SIGSTOP) mid-chunk, so that writes go unanswered and are applied when
// it thaws, after their writers gave up waiting. No node dies,
// so every acceptance reaches its node: each subscriber is recorded once,
// as successful, and gets the mail exactly once.
//
//	GOVKIT_TEST_REDIS_GAPS=1s,6s,15s go test -run TestClusterRidesOutARedisRestart -v ./cmd/govkit/
func TestClusterRidesOutARedisRestart(t *testing.T) {
	const subscribers, chunk = 300, 20
	rd := testsvc.OwnRedisAOF(t)
	c := newCluster(t, clusterConfig{chunkSize: chunk, sinkDelay: 50 * time.Millisecond, redis: rd})
	c.putRSAKey()
	c.holding()
	p := c.start("p", "primary").serving(t)
	var secondaries []*node
	for _, name := range []string{"s1", "s2"} {
		secondaries = append(secondaries, c.start(name, "secondary").serving(t))
	}
	restart := func(gap time.Duration) {
		rd.Stop()
		time.Sleep(gap) // the outage itself, not a wait for something
		rd.Start()
	}
	round := 0
	for _, gap := range redisGaps(t) {
		for _, at := range []string{"plan", "mid-chunk", "finish", "mid-chunk, frozen"} {
			round++
			t.Run(fmt.Sprintf("%s/gap=%v", at, gap), func(t *testing.T) {
				svc := fmt.Sprintf("svc%d", round)
				ids := c.subscribe(svc, subscribers)
				sent := func(d delivery) bool { return strings.HasSuffix(d.to, "@"+svc+".test") }
				var held func() *node
				switch at {
				case "plan":
					held = c.arm("plan:chunk-written:2", secondaries...)
				case "finish":
					held = c.arm("finish", secondaries...)
				}
				id := p.broadcast(t, svc)
				switch at {
				case "plan":
					n := held()
					rd.Stop()
					n.release(t)
					time.Sleep(gap)
					rd.Start()
				case "mid-chunk":
					waitFor(t, 2*time.Minute, "a third of the mails", func() bool { return c.sink.count(sent) >= subscribers/3 })
					if c.sink.count(sent) >= subscribers {
						t.Fatal("every mail was sent before Redis stopped; the test needs it in the middle")
					}
					restart(gap)
				case "mid-chunk, frozen":
					waitFor(t, 2*time.Minute, "a third of the mails", func() bool { return c.sink.count(sent) >= subscribers/3 })
					rd.Pause()
					time.Sleep(gap) // the outage itself
					rd.Resume()
				case "finish":
					n := held()
					rd.Stop()
					n.release(t)
					time.Sleep(gap)
					rd.Start()
				}
				got := secondaries[0].sentVia(t, id)
				twice := checkOnce(t, c, svc, ids, got, nil)
				t.Logf("Redis down %v at %s: %d mails for %d subscribers, %d twice", gap, at, c.sink.count(sent), subscribers, twice)
			})
		}
	}
}

// The primary (running workers too, as a primary of NotifyBC does) is
// killed (SIGKILL) while it writes a broadcast's plan, after its third
// chunk, its other worker sending the first chunks meanwhile. The
// secondaries take the plan over when its lease expires and continue it
// after the chunks written. Every subscriber is recorded once and gets
// the mail; twice only when the primary sent it and died before storing
// the acceptance.
func TestClusterSurvivesAPrimaryKilledWhilePlanning(t *testing.T) {
	const subscribers, chunk = 300, 20
	c := newCluster(t, clusterConfig{chunkSize: chunk, sinkDelay: 50 * time.Millisecond})
	c.putRSAKey()
	c.holding()
	ids := c.subscribe("svc", subscribers)
	p := c.start("p", "").serving(t)
	held := c.arm("plan:chunk-written:2", p)
	id := p.broadcast(t, "svc")
	held()
	s1, s2 := c.start("s1", "secondary"), c.start("s2", "secondary")
	s1.serving(t)
	s2.serving(t)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	killedAt := time.Now()
	got := s1.sentVia(t, id)
	twice := checkOnce(t, c, "svc", ids, got, func(d delivery) bool { return d.node == "p" && d.at.Before(killedAt) })
	t.Logf("primary killed while planning: %d mails from it, %d for %d subscribers in all, %d twice",
		c.sink.count(func(d delivery) bool { return d.node == "p" }), len(c.sink.deliveries()), subscribers, twice)
}

// A secondary is killed (SIGKILL) as it begins a broadcast's finish
// step; the other one takes the step over when its lease expires. The
// broadcast ends sent, every subscriber recorded once, nobody mailed
// twice (every send had ended and been stored before the finish step).
func TestClusterSurvivesASecondaryKilledWhileFinishing(t *testing.T) {
	const subscribers, chunk = 200, 20
	c := newCluster(t, clusterConfig{chunkSize: chunk, sinkDelay: 20 * time.Millisecond})
	c.putRSAKey()
	c.holding()
	ids := c.subscribe("svc", subscribers)
	p := c.start("p", "primary").serving(t)
	s1 := c.start("s1", "secondary").serving(t)
	s2 := c.start("s2", "secondary").serving(t)
	wait := c.arm("finish", s1, s2)
	id := p.broadcast(t, "svc")
	held := wait()
	other := s1
	if held == s1 {
		other = s2
	}
	if err := held.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-held.exited
	got := other.sentVia(t, id)
	twice := checkOnce(t, c, "svc", ids, got, nil)
	t.Logf("%s killed in the finish step: %d mails for %d subscribers, %d twice", held.name, len(c.sink.deliveries()), subscribers, twice)
}
