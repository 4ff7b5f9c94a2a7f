package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/subscription"
)

// execEnv makes the test binary run as govkit: the cluster tests start
// nodes of `govkit notify serve` by running this binary again, which is
// much faster than building ./cmd/govkit.
const execEnv = "GOVKIT_TEST_EXEC_GOVKIT"

func TestMain(m *testing.M) {
	testsvc.ServeFerretDBChild()
	if os.Getenv(execEnv) == "1" {
		installHold()
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr})
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// waitFor polls cond until it holds, or fails t after limit: the limit
// only keeps a broken test from hanging; it measures nothing.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// delivery is one message as the cluster's SMTP sink saw it.
type delivery struct {
	node string    // the sender's HELO name: which node sent it
	to   string    // RCPT TO
	at   time.Time // when MAIL FROM arrived: the start of the send
}

// clusterSink is the SMTP server every node sends to. It records who sent
// what to whom and when; delay holds each message before it is accepted,
// so that a broadcast lasts long enough to kill a node in the middle.
type clusterSink struct {
	addr  string
	delay time.Duration
	mu    sync.Mutex
	got   []delivery
}

func startClusterSink(t *testing.T, delay time.Duration) *clusterSink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &clusterSink{addr: l.Addr().String(), delay: delay}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &sinkSession{s: s, node: c.Hostname()}, nil
	}))
	srv.Domain = "sink.test"
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *clusterSink) deliveries() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.got...)
}

// count counts the deliveries for which keep is true.
func (s *clusterSink) count(keep func(delivery) bool) int {
	n := 0
	for _, d := range s.deliveries() {
		if keep(d) {
			n++
		}
	}
	return n
}

type sinkSession struct {
	s    *clusterSink
	node string
	cur  delivery
}

func (ss *sinkSession) Mail(string, *smtp.MailOptions) error {
	ss.cur = delivery{node: ss.node, at: time.Now()}
	return nil
}

func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.cur.to = strings.ToLower(to)
	return nil
}

func (ss *sinkSession) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	time.Sleep(ss.s.delay)
	ss.s.mu.Lock()
	ss.s.got = append(ss.s.got, ss.cur)
	ss.s.mu.Unlock()
	return nil
}

func (ss *sinkSession) Reset()        {}
func (ss *sinkSession) Logout() error { return nil }

// cluster is a deployment directory shared by nodes that run as separate
// processes, on one MongoDB-protocol store (FerretDB on the test's
// PostgreSQL database) and one Redis (under the test's key prefix).
type cluster struct {
	t       *testing.T
	env     []string // added to every node's environment
	holdDir string   // where hold points are armed (see installHold)
	dir     string
	uri     string // the store, with the database name
	store   *mongostore.Store
	sink    *clusterSink
}

type clusterConfig struct {
	chunkSize int
	// throttle is email.throttle as JSON ("" leaves it off).
	throttle  string
	sinkDelay time.Duration
	// redis is a Redis of the test's own to use instead of the shared one
	// (under a key prefix of the test's).
	redis *testsvc.OwnedRedis
}

func newCluster(t *testing.T, cc clusterConfig) *cluster {
	t.Helper()
	var r testsvc.Redis
	if cc.redis != nil {
		r = testsvc.Redis{Addr: cc.redis.Addr, Prefix: "govkit:"}
	} else {
		r = testsvc.RequireRedis(t)
	}
	c := &cluster{t: t, dir: t.TempDir(), uri: strings.TrimSuffix(testsvc.RequireFerretDB(t), "/") + "/notify"}
	c.sink = startClusterSink(t, cc.sinkDelay)
	redisHost, redisPort, _ := net.SplitHostPort(r.Addr)
	sinkHost, sinkPort, _ := net.SplitHostPort(c.sink.addr)
	throttle := cc.throttle
	if throttle == "" {
		throttle = "{enabled: false}"
	}
	// The node's name comes from the environment, as a deployment's
	// settings do on a platform: it is the HELO name each node's mail
	// carries, so the sink can tell the nodes apart.
	js := fmt.Sprintf(`module.exports = {
  host: '127.0.0.1',
  port: 0,
  adminIps: ['127.0.0.1'],
  email: {
    smtp: {host: %q, port: %s, name: process.env.GOVKIT_TEST_NODE, maxConnections: 4},
    throttle: %s,
    inboundSmtpServer: {enabled: false},
  },
  notification: {broadcastSubscriberChunkSize: %d},
  queue: {connection: {host: %q, port: %s, keyPrefix: %q}},
};
`, sinkHost, sinkPort, throttle, cc.chunkSize, redisHost, redisPort, r.Prefix)
	write := func(name, content string) {
		p := filepath.Join(c.dir, "src", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config.local.js", js)
	write("datasources/db.datasource.local.json", fmt.Sprintf(`{"uri": %q}`, c.uri))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	c.store, err = mongostore.Open(ctx, c.uri, mongostore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.store.Close(context.Background()) })
	return c
}

// putRSAKey stores a key pair, so that the primary does not spend seconds
// making a 4096-bit one.
func (c *cluster) putRSAKey() {
	c.t.Helper()
	priv, pub, err := subscription.GenerateRSAKeyPEM(2048)
	if err != nil {
		c.t.Fatal(err)
	}
	v := notify.Fields{{Key: "private", Value: priv}, {Key: "public", Value: pub}}
	if err := c.store.Configurations().Insert(context.Background(), &notify.Configuration{Name: "rsa", Value: v}); err != nil {
		c.t.Fatal(err)
	}
}

// subscribe bulk-loads n confirmed email subscribers of svc, u0@… to
// u{n-1}@…, and returns their ids by address.
func (c *cluster) subscribe(svc string, n int) map[string]string {
	c.t.Helper()
	subs := make([]*notify.Subscription, n)
	for i := range subs {
		subs[i] = &notify.Subscription{ServiceName: svc, Channel: notify.ChannelEmail, State: notify.StateConfirmed,
			UserChannelID: fmt.Sprintf("u%d@%s.test", i, svc), UnsubscriptionCode: "12345"}
	}
	if err := c.store.Subscriptions().InsertMany(context.Background(), subs); err != nil {
		c.t.Fatal(err)
	}
	ids := map[string]string{}
	for _, s := range subs {
		ids[s.UserChannelID] = s.ID.Hex()
	}
	return ids
}

// node is one `govkit notify serve` process.
type node struct {
	name   string
	cmd    *exec.Cmd
	logs   *lockedBuffer
	url    chan string
	base   string // http://127.0.0.1:port/api once serving
	exited chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs a node of the given role ("" for all) without waiting for it
// to serve; extra is added to its environment.
func (c *cluster) start(name, role string, extra ...string) *node {
	c.t.Helper()
	n := &node{name: name, logs: &lockedBuffer{}, url: make(chan string, 1), exited: make(chan struct{})}
	n.cmd = exec.Command(os.Args[0], "notify", "serve", "--dir", c.dir, "--data-dir", c.t.TempDir())
	env := append([]string{execEnv + "=1", "GOVKIT_TEST_NODE=" + name, "NOTIFYBC_NODE_ROLE=" + role}, c.env...)
	env = append(env, extra...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NOTIFYBC_NODE_ROLE=") && !strings.HasPrefix(kv, "NODE_ENV=") {
			env = append(env, kv)
		}
	}
	n.cmd.Env = env
	n.cmd.Stderr = n.logs
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "notify: serving "); ok {
				n.url <- rest
			}
		}
	}()
	go func() { _ = n.cmd.Wait(); close(n.exited) }()
	c.t.Cleanup(func() {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.exited:
		case <-time.After(40 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.exited
		}
		if c.t.Failed() {
			c.t.Logf("log of node %s:\n%s", n.name, tail(n.logs.String(), 40))
		}
	})
	return n
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

// serving waits until the node serves.
func (n *node) serving(t *testing.T) *node {
	t.Helper()
	select {
	case u := <-n.url:
		n.base = u
	case <-n.exited:
		t.Fatalf("node %s exited before serving:\n%s", n.name, tail(n.logs.String(), 40))
	case <-time.After(2 * time.Minute):
		t.Fatalf("node %s did not start serving", n.name)
	}
	return n
}

// do sends a request to the node as a super admin (from 127.0.0.1) unless
// header says otherwise, and decodes a JSON answer into out.
func (n *node) do(t *testing.T, method, path string, body any, out any, header ...string) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, n.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, n.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode
}

type notificationView struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Dispatch struct {
		Candidates []string `json:"candidates"`
		Successful []string `json:"successful"`
		Failed     []struct {
			SubscriptionID string         `json:"subscriptionId"`
			Error          map[string]any `json:"error"`
		} `json:"failed"`
		Counts notify.DispatchCounts `json:"counts"`
	} `json:"dispatch"`
}

// A primary and two secondaries, as separate processes on one store and
// one Redis. The secondaries wait for the RSA key pair the primary makes;
// a broadcast posted to the primary is sent by the secondaries only; one
// secondary is killed (SIGKILL) in the middle, and its chunks are taken
// over when their leases expire (there is no cron in play to re-dispatch
// them). In the end every subscriber is recorded exactly once, as
// successful, and got the mail: twice at most for the few s1 was sending
// when it died.
func TestClusterSurvivesAKilledSecondary(t *testing.T) {
	const subscribers, chunk = 600, 20
	c := newCluster(t, clusterConfig{chunkSize: chunk, sinkDelay: 100 * time.Millisecond})
	ids := c.subscribe("svc", subscribers)

	s1, s2 := c.start("s1", "secondary"), c.start("s2", "secondary")
	for _, s := range []*node{s1, s2} {
		waitFor(t, 2*time.Minute, s.name+" to wait for the key pair", func() bool {
			return strings.Contains(s.logs.String(), "waiting for the primary to create the RSA key pair")
		})
	}
	p := c.start("p", "primary").serving(t)
	s1.serving(t)
	s2.serving(t)
	if n, err := c.store.Configurations().Count(context.Background(), map[string]any{"name": "rsa"}); err != nil || n != 1 {
		t.Fatalf("rsa configurations: %d, %v", n, err)
	}

	var posted notificationView
	st := p.do(t, "POST", "/notifications", map[string]any{
		"serviceName": "svc", "channel": "email", "isBroadcast": true, "asyncBroadcastPushNotification": true,
		"message": map[string]any{"from": "no_reply@invalid.local", "subject": "hello", "textBody": "hi {subscription_id}"},
	}, &posted)
	if st != http.StatusOK {
		t.Fatalf("POST: %d", st)
	}
	fromS1 := func(d delivery) bool { return d.node == "s1" }
	waitFor(t, 2*time.Minute, "s1 to be sending", func() bool { return c.sink.count(fromS1) >= 100 })
	if err := s1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s1.exited
	killedAt := time.Now()
	atKill := len(c.sink.deliveries())
	if atKill >= subscribers {
		t.Fatalf("the broadcast was over (%d mails) before the kill; the test needs it in the middle", atKill)
	}

	var got notificationView
	waitFor(t, 3*time.Minute, "the broadcast to finish", func() bool {
		got = notificationView{}
		return s2.do(t, "GET", "/notifications/"+posted.ID, nil, &got) == http.StatusOK && got.State == notify.StateSent
	})
	for _, dl := range c.sink.deliveries() {
		if dl.node != "s1" && dl.node != "s2" {
			t.Errorf("mail to %s sent by node %q; only the secondaries send", dl.to, dl.node)
		}
	}
	// Twice only where the sink accepted a mail of s1 before it died,
	// whose acceptance s1 could not store.
	twice := checkOnce(t, c, "svc", ids, got, func(d delivery) bool { return d.node == "s1" && d.at.Before(killedAt) })
	// At most a send on each of s1's 4 SMTP connections, and on each the
	// send just before, whose outcome was being kept.
	if twice > 8 {
		t.Errorf("%d subscribers got the mail twice; more than one node's sends in flight", twice)
	}
	t.Logf("%d mails before the kill, %d after; %d subscribers got the mail twice", atKill, len(c.sink.deliveries())-atKill, twice)
}

// Several nodes share one throttle through Redis: at most max sends in
// any window of duration, spaced rather than in bursts, whichever node
// sends; and a confirmation requested while a broadcast's sends queue for
// the throttle goes before them.
func TestClusterThrottleIsSharedAndPrioritized(t *testing.T) {
	const subscribers, max, duration = 16, 2, 1500 * time.Millisecond
	c := newCluster(t, clusterConfig{chunkSize: 2, throttle: fmt.Sprintf("{enabled: true, max: %d, duration: %d}", max, duration.Milliseconds())})
	c.putRSAKey()
	c.subscribe("svc", subscribers)
	nodes := []*node{c.start("a", ""), c.start("b", ""), c.start("c", "")}
	for _, n := range nodes {
		n.serving(t)
	}
	var posted notificationView
	if st := nodes[0].do(t, "POST", "/notifications", map[string]any{
		"serviceName": "svc", "channel": "email", "isBroadcast": true, "asyncBroadcastPushNotification": true,
		"message": map[string]any{"from": "no_reply@invalid.local", "subject": "hello", "textBody": "hi"},
	}, &posted); st != http.StatusOK {
		t.Fatalf("POST notification: %d", st)
	}
	broadcast := func(d delivery) bool { return strings.HasSuffix(d.to, "@svc.test") }
	waitFor(t, 2*time.Minute, "the broadcast to be under way", func() bool { return c.sink.count(broadcast) >= 2 })
	askedAt := time.Now()
	if left := subscribers - c.sink.count(broadcast); left < 8 {
		t.Fatalf("only %d broadcast mails left when the confirmation was asked for; no backlog to overtake", left)
	}
	if st := nodes[1].do(t, "POST", "/subscriptions", map[string]any{"serviceName": "other", "channel": "email", "userChannelId": "confirm@other.test"},
		nil, "is_anonymous", "true"); st != http.StatusOK {
		t.Fatalf("POST subscription: %d", st)
	}
	waitFor(t, 2*time.Minute, "every mail", func() bool { return len(c.sink.deliveries()) == subscribers+1 })

	all := c.sink.deliveries()
	slices.SortFunc(all, func(a, b delivery) int { return a.at.Compare(b.at) })
	nodesSeen := map[string]bool{}
	var confirmedAt time.Time
	for _, d := range all {
		nodesSeen[d.node] = true
		if d.to == "confirm@other.test" {
			confirmedAt = d.at
		}
	}
	if len(nodesSeen) < 2 {
		t.Errorf("every mail came from %v; the test needs several nodes sending", nodesSeen)
	}
	// Overtaking: a dozen broadcast sends were waiting for the throttle
	// (three nodes, two chunks of two each); the confirmation went after
	// at most the few granted while its request was being handled.
	overtaken := 0
	for _, d := range all {
		if broadcast(d) && d.at.After(askedAt) && d.at.Before(confirmedAt) {
			overtaken++
		}
	}
	if overtaken > 4 {
		t.Errorf("%d broadcast mails went between the confirmation's request and its delivery; it should overtake the queue", overtaken)
	}
	// Spacing: grants are at least duration/max apart wherever they are
	// made; arrival times add the delivery's jitter, for which jitter is
	// allowed: m+1 consecutive arrivals span at least m·interval − jitter.
	interval := duration / max
	const jitter = 600 * time.Millisecond
	closest := time.Hour
	for i := 0; i+1 < len(all); i++ {
		closest = min(closest, all[i+1].at.Sub(all[i].at))
	}
	t.Logf("%d broadcast mails between the confirmation's request and its delivery; closest two mails %v apart (interval %v); senders %v", overtaken, closest, interval, nodesSeen)
	for i := range all {
		for m := 1; m <= max && i+m < len(all); m++ {
			if span := all[i+m].at.Sub(all[i].at); span < time.Duration(m)*interval-jitter {
				t.Errorf("mails %d..%d (%s, %s) only %v apart; the throttle spaces them %v", i, i+m, all[i].node, all[i+m].node, span, time.Duration(m)*interval)
			}
		}
	}
}

// TestLoadClusterBroadcast is the load run of a cluster (GOVKIT_LOAD=1):
// a primary and 1, then 2, secondaries as processes on FerretDB-on-
// PostgreSQL and Redis, one async email broadcast each to 10,000 and
// 100,000 subscribers (GOVKIT_LOAD_SUBSCRIBERS=a,b,… picks the sizes)
// sent to an SMTP sink on loopback, throttle off, guaranteed processing
// on. It logs emails/s (first mail to last, at the sink) and each node's
// peak resident memory. It asserts only that every subscriber got one
// mail.
//
//	GOVKIT_LOAD=1 go test -run TestLoadClusterBroadcast -v -timeout 2h ./cmd/govkit/
func TestLoadClusterBroadcast(t *testing.T) {
	if os.Getenv("GOVKIT_LOAD") != "1" {
		t.Skip("a load run: set GOVKIT_LOAD=1")
	}
	sizes := []int{10000, 100000}
	if s := os.Getenv("GOVKIT_LOAD_SUBSCRIBERS"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			var n int
			if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil {
				t.Fatalf("GOVKIT_LOAD_SUBSCRIBERS: %v", err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, secondaries := range []int{1, 2} {
		for _, subscribers := range sizes {
			t.Run(fmt.Sprintf("secondaries=%d/subscribers=%d", secondaries, subscribers), func(t *testing.T) {
				c := newCluster(t, clusterConfig{chunkSize: 1000})
				c.putRSAKey()
				loadStart := time.Now()
				for done := 0; done < subscribers; done += 10000 {
					c.subscribeRange("svc", done, min(done+10000, subscribers))
				}
				t.Logf("%d subscriptions loaded in %v", subscribers, time.Since(loadStart).Round(time.Millisecond))
				p := c.start("p", "primary").serving(t)
				var nodes []*node
				for i := range secondaries {
					nodes = append(nodes, c.start(fmt.Sprintf("s%d", i+1), "secondary"))
				}
				for _, n := range nodes {
					n.serving(t)
				}
				for _, n := range append(nodes, p) {
					resetPeakRSSOf(n.cmd.Process.Pid)
				}
				var posted notificationView
				posted0 := time.Now()
				if st := p.do(t, "POST", "/notifications", map[string]any{
					"serviceName": "svc", "channel": "email", "isBroadcast": true, "asyncBroadcastPushNotification": true,
					"message": map[string]any{"from": "no_reply@invalid.local", "subject": "hello {subscription::name}", "textBody": "Hello, unsubscribe at {unsubscription_url}"},
				}, &posted); st != http.StatusOK {
					t.Fatalf("POST: %d", st)
				}
				var got notificationView
				waitFor(t, 2*time.Hour, "the broadcast to finish", func() bool {
					time.Sleep(time.Second)
					got = notificationView{}
					return p.do(t, "GET", "/notifications/"+posted.ID+`?filter={"fields":{"state":true}}`, nil, &got) == http.StatusOK && got.State == notify.StateSent
				})
				all := c.sink.deliveries()
				if len(all) != subscribers {
					t.Fatalf("%d mails, want %d", len(all), subscribers)
				}
				first, last := all[0].at, all[0].at
				for _, d := range all {
					first, last = minTime(first, d.at), maxTime(last, d.at)
				}
				var mem []string
				for _, n := range append([]*node{p}, nodes...) {
					mem = append(mem, fmt.Sprintf("%s %d MB", n.name, peakRSSOf(n.cmd.Process.Pid)>>20))
				}
				t.Logf("%d subscribers, %d secondaries: %.0f emails/s (first to last mail, %v), %v from POST to last mail; peak RSS %s",
					subscribers, secondaries, float64(subscribers)/last.Sub(first).Seconds(), last.Sub(first).Round(time.Millisecond),
					last.Sub(posted0).Round(time.Millisecond), strings.Join(mem, ", "))
			})
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// subscribeRange bulk-loads subscribers u{from}…u{to-1}, as the API stores
// them (confirmation request templates included).
func (c *cluster) subscribeRange(svc string, from, to int) {
	c.t.Helper()
	subs := make([]*notify.Subscription, 0, to-from)
	for i := from; i < to; i++ {
		subs = append(subs, &notify.Subscription{ServiceName: svc, Channel: notify.ChannelEmail, State: notify.StateConfirmed,
			UserChannelID: fmt.Sprintf("u%d@%s.test", i, svc), UnsubscriptionCode: "12345",
			ConfirmationRequest: notify.Fields{
				{Key: "confirmationCodeRegex", Value: `\d{5}`}, {Key: "sendRequest", Value: true},
				{Key: "from", Value: "no_reply@invalid.local"}, {Key: "subject", Value: "Subscription confirmation"},
				{Key: "textBody", Value: "Enter {subscription_confirmation_code} on screen"}, {Key: "confirmationCode", Value: "12345"},
			},
			Data: notify.Fields{{Key: "name", Value: fmt.Sprint("User ", i)}}})
	}
	if err := c.store.Subscriptions().InsertMany(context.Background(), subs); err != nil {
		c.t.Fatal(err)
	}
}

// resetPeakRSSOf resets the kernel's record of a process's peak resident
// memory (Linux).
func resetPeakRSSOf(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// peakRSSOf is a process's peak resident memory (VmHWM), 0 when unknown.
func peakRSSOf(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			_, _ = fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &kb)
			return kb << 10
		}
	}
	return 0
}
