package cron_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/cron"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/embeddedmongo"
	"github.com/govkit/govkit/notify/feed"
	"github.com/govkit/govkit/notify/mailcatcher"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/outbound"
	"github.com/govkit/govkit/notify/queue"
)

// storeURI is the embedded store the tests share; each test has a
// database of its own.
var storeURI string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "cron-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	srv, err := embeddedmongo.Start(context.Background(), embeddedmongo.Config{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	storeURI = srv.URI()
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// start is the manual clock's first reading in every test.
var start = time.Date(2026, 3, 4, 10, 0, 30, 0, time.UTC)

// fixture is a cron service on a fresh database, with a real dispatcher
// sending real SMTP to a mail catcher, all on one manual clock.
type fixture struct {
	t       *testing.T
	store   *mongostore.Store
	clock   *cron.ManualClock
	catcher *mailcatcher.Catcher
	d       *dispatch.Dispatcher
	svc     *cron.Service
	cfg     *config.Config

	// runs are the reported runs not yet waited for, by job.
	mu   sync.Mutex
	runs map[string][]cron.Run
}

type fixtureOption func(*cron.Options)

func newFixture(t *testing.T, overrides map[string]any, opts ...fixtureOption) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: cron.NewManualClock(start), runs: map[string][]cron.Run{}}
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	var err error
	f.store, err = mongostore.Open(ctx, storeURI, mongostore.Options{Database: "cron_" + hex.EncodeToString(b), Logger: quietLog(), Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.store.DropDatabase(context.Background())
		_ = f.store.Close(context.Background())
	})
	f.catcher = mailcatcher.New(mailcatcher.Options{Logger: quietLog()})
	addr, stop, err := f.catcher.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	sender, err := email.New(email.SMTPConfig{Host: host, Port: p, IgnoreTLS: true, Name: "localhost", MaxConnections: 2},
		email.Addressing{InboundDomain: "invalid.local", Bounce: true, ListUnsubscribeByEmail: true}, email.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sender.Close() })
	if overrides == nil {
		overrides = map[string]any{}
	}
	f.cfg, err = config.New(overrides)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := queue.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = backend.Close() })
	f.d, err = dispatch.New(dispatch.Options{
		Settings:   dispatch.SettingsFromConfig(f.cfg),
		Store:      dispatch.FromMongo(f.store),
		Backend:    backend,
		Email:      sender,
		RetryDelay: time.Millisecond,
		Logger:     quietLog(),
		Now:        f.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.d.StartWorkers()
	t.Cleanup(func() { _ = f.d.Close(context.Background()) })
	// Feeds are served on loopback, which the fetcher refuses unless
	// admitted.
	loopback, err := outbound.New(outbound.Policy{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	o := cron.Options{
		Feeds:      feed.NewFetcher(feed.Options{Client: loopback.Client(0)}),
		Config:     f.cfg,
		Store:      f.store,
		Dispatcher: f.d,
		Clock:      f.clock,
		Location:   time.UTC,
		Logger:     quietLog(),
		OnRun:      f.record,
	}
	for _, fn := range opts {
		fn(&o)
	}
	f.svc, err = cron.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.svc.Stop(context.Background()) })
	return f
}

func (f *fixture) record(r cron.Run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[r.Job] = append(f.runs[r.Job], r)
}

// waitRun waits for the next reported run of job and returns it.
func (f *fixture) waitRun(job string) cron.Run {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		if q := f.runs[job]; len(q) > 0 {
			f.runs[job] = q[1:]
			f.mu.Unlock()
			return q[0]
		}
		f.mu.Unlock()
		if time.Now().After(deadline) {
			f.t.Fatalf("no run of %s reported", job)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitRunAt waits for the run of job scheduled at t, passing over earlier
// ones.
func (f *fixture) waitRunAt(job string, t time.Time) cron.Run {
	f.t.Helper()
	for {
		r := f.waitRun(job)
		if !r.At.Before(t) {
			if !r.At.Equal(t) {
				f.t.Fatalf("%s ran at %s, not at %s", job, r.At, t)
			}
			return r
		}
	}
}

func (f *fixture) subscribe(sub notify.Subscription) *notify.Subscription {
	f.t.Helper()
	if sub.State == "" {
		sub.State = notify.StateConfirmed
	}
	if sub.Channel == "" {
		sub.Channel = notify.ChannelEmail
	}
	if sub.ServiceName == "" {
		sub.ServiceName = "myService"
	}
	if err := f.store.Subscriptions().Insert(context.Background(), &sub); err != nil {
		f.t.Fatal(err)
	}
	return &sub
}

func (f *fixture) insert(n notify.Notification) *notify.Notification {
	f.t.Helper()
	if n.ServiceName == "" {
		n.ServiceName = "myService"
	}
	if err := f.store.Notifications().Insert(context.Background(), &n); err != nil {
		f.t.Fatal(err)
	}
	return &n
}

func (f *fixture) load(id notify.ID) *notify.Notification {
	f.t.Helper()
	n, err := f.store.Notifications().FindByID(context.Background(), id.Hex())
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.LoadDispatch(context.Background(), n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// mailsTo returns the caught messages sent to rcpt.
func (f *fixture) mailsTo(rcpt string) []mailcatcher.Mail {
	var out []mailcatcher.Mail
	for _, m := range f.catcher.Mails() {
		for _, to := range m.Envelope.To {
			if strings.EqualFold(to, rcpt) {
				out = append(out, m)
			}
		}
	}
	return out
}

// eventually polls cond for up to 20 s, for work that runs in the
// background (asynchronous broadcasts). It asserts an outcome, not a speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settle waits for the background work the dispatcher started (the
// asynchronous broadcasts) to end.
func (f *fixture) settle() {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := f.d.Pending(context.Background())
		if err != nil {
			f.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%d broadcast jobs still queued", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// plan gives a broadcast what the dispatcher leaves in the store once it
// has started: its plan over the service's confirmed subscriptions (one
// chunk), and the outcomes recorded so far. The broadcast started now.
func (f *fixture) plan(n *notify.Notification, recorded ...notify.DispatchResult) {
	f.t.Helper()
	ctx := context.Background()
	if _, _, err := f.store.StartBroadcast(ctx, mongostore.Broadcast{NotificationID: n.ID, Run: "r1", HTTPHost: n.HTTPHost, Started: f.clock.Now()}); err != nil {
		f.t.Fatal(err)
	}
	chunks, cands, err := f.store.PlanChunks(ctx, n.ID, mongostore.Plan{ServiceName: n.ServiceName, Channel: n.Channel, Size: 1000})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.SetBroadcastPlanned(ctx, n.ID, "r1", chunks, cands); err != nil {
		f.t.Fatal(err)
	}
	if len(recorded) > 0 {
		if _, err := f.store.RecordChunk(ctx, n.ID, 0, 0, recorded); err != nil {
			f.t.Fatal(err)
		}
	}
}

func emailMessage(subject, text string) notify.Fields {
	return notify.Fields{{Key: "from", Value: "admin@foo.com"}, {Key: "subject", Value: subject}, {Key: "textBody", Value: text}}
}
