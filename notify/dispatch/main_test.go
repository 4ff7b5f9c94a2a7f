package dispatch_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"log/slog"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/embeddedmongo"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/queue"
)

// storeURI is the embedded store every test shares; each test has a
// database (one SQLite file) of its own.
var (
	storeURI string
	embedded *embeddedmongo.Server
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "dispatch-test-")
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
	storeURI, embedded = srv.URI(), srv
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return code
}

func openStore(t testing.TB) *mongostore.Store {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	ctx := context.Background()
	s, err := mongostore.Open(ctx, storeURI, mongostore.Options{Database: "dispatch_" + hex.EncodeToString(b), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := embedded.IndexIDs(ctx, s.Database()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.DropDatabase(context.Background())
		_ = s.Close(context.Background())
	})
	return s
}

func quietLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// sink is a real SMTP server on loopback (go-smtp) that keeps every
// message, or only counts them (benchmarks), and refuses the recipients
// named in reject with 550.
type sink struct {
	addr    string
	reject  map[string]bool
	discard bool
	count   atomic.Int64
	// delay holds each message before it is accepted, so that sends are
	// in flight long enough for a test to break something under them.
	delay atomic.Int64 // nanoseconds
	// inData counts the messages being received (their DATA under way).
	inData atomic.Int64

	mu   sync.Mutex
	msgs []sinkMsg
}

type sinkMsg struct {
	From   string // envelope sender (MAIL FROM)
	To     []string
	Header mail.Header
	Body   string
}

func startSink(t testing.TB, reject ...string) *sink {
	t.Helper()
	return serveSink(t, false, reject...)
}

// startCountingSink starts a sink that only counts messages.
func startCountingSink(t testing.TB) *sink {
	t.Helper()
	return serveSink(t, true)
}

func serveSink(t testing.TB, discard bool, reject ...string) *sink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{addr: l.Addr().String(), reject: map[string]bool{}, discard: discard}
	for _, r := range reject {
		s.reject[r] = true
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &sinkSession{s: s}, nil }))
	srv.Domain = "sink.test"
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func splitHostPort(t testing.TB, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	return host, port
}

// sender returns a pooled email sender to the sink.
func (s *sink) sender(t testing.TB, addr email.Addressing) *email.Sender {
	t.Helper()
	host, p, _ := net.SplitHostPort(s.addr)
	port, _ := strconv.Atoi(p)
	es, err := email.New(email.SMTPConfig{Host: host, Port: port, MaxConnections: 5, MaxMessages: -1}, addr, email.WithLogger(quietLog()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = es.Close() })
	return es
}

func (s *sink) messages() []sinkMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sinkMsg(nil), s.msgs...)
}

// to returns the messages received for rcpt.
func (s *sink) to(rcpt string) []sinkMsg {
	var out []sinkMsg
	for _, m := range s.messages() {
		for _, r := range m.To {
			if strings.EqualFold(r, rcpt) {
				out = append(out, m)
			}
		}
	}
	return out
}

type sinkSession struct {
	s   *sink
	cur sinkMsg
}

func (ss *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	ss.cur = sinkMsg{From: from}
	return nil
}

func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if ss.s.reject[to] {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	ss.cur.To = append(ss.cur.To, to)
	return nil
}

func (ss *sinkSession) Data(r io.Reader) error {
	ss.s.inData.Add(1)
	defer ss.s.inData.Add(-1)
	time.Sleep(time.Duration(ss.s.delay.Load()))
	if ss.s.discard {
		_, err := io.Copy(io.Discard, r)
		ss.s.count.Add(1)
		return err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	msg, err := mail.ReadMessage(bytes.NewReader(b))
	if err != nil {
		return err
	}
	var body []byte
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body, _ = io.ReadAll(quotedprintable.NewReader(msg.Body))
	} else {
		body, _ = io.ReadAll(msg.Body)
	}
	ss.cur.Header = msg.Header
	ss.cur.Body = string(body)
	ss.s.mu.Lock()
	ss.s.msgs = append(ss.s.msgs, ss.cur)
	ss.s.mu.Unlock()
	ss.s.count.Add(1)
	return nil
}

func (ss *sinkSession) Reset()        { ss.cur = sinkMsg{} }
func (ss *sinkSession) Logout() error { return nil }

// fixture is a dispatcher on a fresh database and queue, working on its
// own broadcasts and sending to a sink.
type fixture struct {
	t     testing.TB
	store *mongostore.Store
	queue *queue.Backend
	sink  *sink
	d     *dispatch.Dispatcher
	opts  dispatch.Options
}

// openQueue starts an embedded queue backend for one test.
func openQueue(t testing.TB) *queue.Backend {
	t.Helper()
	b, err := queue.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

type fixtureOpt func(*dispatch.Options)

var addressing = email.Addressing{InboundDomain: "invalid.local", Bounce: true, ListUnsubscribeByEmail: true}

func newFixture(t testing.TB, opts ...fixtureOpt) *fixture {
	t.Helper()
	f := &fixture{t: t, store: openStore(t), queue: openQueue(t), sink: startSink(t, "bar2@invalid", "reject@invalid.local")}
	o := dispatch.Options{
		Settings: dispatch.Settings{
			RestAPIRoot: "/api",
			ChunkSize:   1000,
			Guaranteed:  true,
			Bounce:      true,
		},
		Store:      dispatch.FromMongo(f.store),
		Backend:    f.queue,
		Email:      f.sink.sender(t, addressing),
		RetryDelay: time.Millisecond,
		JobBackoff: 10 * time.Millisecond,
		Logger:     quietLog(),
	}
	for _, fn := range opts {
		fn(&o)
	}
	f.opts = o
	f.d = f.node(true)
	return f
}

// node returns another dispatcher on the fixture's store and queue, as
// another node of a cluster would have; workers says whether it works on
// queued broadcasts.
func (f *fixture) node(workers bool) *dispatch.Dispatcher {
	f.t.Helper()
	d, err := dispatch.New(f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	if workers {
		d.StartWorkers()
	}
	f.t.Cleanup(func() { _ = d.Close(context.Background()) })
	return d
}

// subscribe stores a subscription (confirmed unless the state is given).
func (f *fixture) subscribe(sub notify.Subscription) *notify.Subscription {
	f.t.Helper()
	if sub.State == "" {
		sub.State = notify.StateConfirmed
	}
	if sub.Channel == "" {
		sub.Channel = notify.ChannelEmail
	}
	if err := f.store.Subscriptions().Insert(context.Background(), &sub); err != nil {
		f.t.Fatal(err)
	}
	return &sub
}

// post does what the API does with a new notification: check, store,
// dispatch.
func (f *fixture) post(n notify.Notification) (*notify.Notification, error) {
	f.t.Helper()
	ctx := context.Background()
	sub, err := f.d.Check(ctx, &n)
	if err != nil {
		return nil, err
	}
	if err := f.store.Notifications().Insert(ctx, &n); err != nil {
		f.t.Fatal(err)
	}
	return f.d.Dispatch(ctx, &n, sub, dispatch.Request{Host: "http://127.0.0.1:3000"})
}

func (f *fixture) mustPost(n notify.Notification) *notify.Notification {
	f.t.Helper()
	got, err := f.post(n)
	if err != nil {
		f.t.Fatal(err)
	}
	return got
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

func emailMessage(text string) notify.Fields {
	return fields("from", "no_reply@invalid.local", "subject", "test", "textBody", text)
}

// eventually polls cond for up to 20 s: for work that runs in the
// background (asynchronous broadcasts). It asserts an outcome, not a speed.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fields builds a document from alternating keys and values.
func fields(kv ...any) notify.Fields {
	f := make(notify.Fields, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		f = append(f, notify.Field{Key: kv[i].(string), Value: kv[i+1]})
	}
	return f
}
