package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/mongostore"
)

// A real `govkit notify serve` process whose parts the test fails for
// real: the store, a FerretDB server process of the test's own (on the
// test's PostgreSQL database) that it freezes with SIGSTOP (bytes are
// accepted and nothing answers) and kills with SIGKILL (a server that is
// down), and a Redis of the test's own (the queue) that it freezes. API
// calls that need the part are answered 503 with Retry-After and a
// message naming it — never 401, 403 or a bare 500 — within the
// datasource's apiTimeoutMS (2 s here; how long each took is logged, not
// asserted), /api/health says which part is down, what was refused is not
// half-written, and when the part is back the same process serves again.
func TestNotifyAnswersOutagesAsOutages(t *testing.T) {
	fdb := testsvc.OwnFerretDB(t)
	ferret := strings.TrimSuffix(fdb.URI, "/")
	rd := testsvc.OwnRedis(t)
	c := &cluster{t: t, dir: t.TempDir(), uri: ferret + "/notify", sink: startClusterSink(t, 0)}
	redisHost, redisPort, _ := net.SplitHostPort(rd.Addr)
	sinkHost, sinkPort, _ := net.SplitHostPort(c.sink.addr)
	write := func(name, content string) {
		p := filepath.Join(c.dir, "src", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config.local.js", fmt.Sprintf(`module.exports = {
  host: '127.0.0.1',
  port: 0,
  adminIps: ['127.0.0.1'],
  email: {smtp: {host: %q, port: %s}, inboundSmtpServer: {enabled: false}},
  queue: {connection: {host: %q, port: %s}},
};
`, sinkHost, sinkPort, redisHost, redisPort))
	write("datasources/db.datasource.local.json", fmt.Sprintf(`{"uri": %q, "apiTimeoutMS": 2000}`, c.uri))
	ctx := context.Background()
	var err error
	c.store, err = mongostore.Open(ctx, c.uri, mongostore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.store.Close(context.Background()) })
	c.putRSAKey()
	n := c.start("n", "").serving(t)

	// timed sends a request as a super admin and logs how long it took.
	timed := func(what, method, path string, body any) answerOf {
		t.Helper()
		start := time.Now()
		a := n.answer(t, method, path, body)
		t.Logf("%s: %d in %v", what, a.status, time.Since(start).Round(time.Millisecond))
		return a
	}
	outage := func(a answerOf, part string) {
		t.Helper()
		if a.status != http.StatusServiceUnavailable || a.retryAfter == "" || !strings.Contains(a.body, part) {
			t.Fatalf("%d (Retry-After %q) %s; want 503 naming %q with Retry-After", a.status, a.retryAfter, a.body, part)
		}
	}
	subscribe := func(addr string) answerOf {
		return n.answer(t, "POST", "/subscriptions", map[string]any{"serviceName": "svc", "channel": "email", "userChannelId": addr, "state": "confirmed"})
	}
	count := func() int64 {
		t.Helper()
		k, err := c.store.Subscriptions().Count(ctx, map[string]any{"serviceName": "svc"})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if a := subscribe("before@svc.test"); a.status != http.StatusOK {
		t.Fatalf("subscribe: %d %s", a.status, a.body)
	}

	for _, fault := range []struct {
		name       string
		fail, heal func()
	}{
		{"frozen (SIGSTOP)", fdb.Pause, fdb.Resume},
		{"killed (SIGKILL) and started again", fdb.Kill, fdb.Start},
	} {
		t.Run("the store "+fault.name, func(t *testing.T) {
			before := count()
			fault.fail()
			outage(timed("list subscriptions", "GET", "/subscriptions", nil), "database")
			outage(timed("subscribe", "POST", "/subscriptions", map[string]any{"serviceName": "svc", "channel": "email", "userChannelId": "during@svc.test", "state": "confirmed"}), "database")
			outage(timed("list notifications", "GET", "/notifications", nil), "database")
			outage(timed("broadcast", "POST", "/notifications", map[string]any{
				"serviceName": "svc", "channel": "email", "isBroadcast": true,
				"message": map[string]any{"from": "no_reply@invalid.local", "subject": "hello", "textBody": "hi"},
			}), "database")
			outage(timed("unicast", "POST", "/notifications", map[string]any{
				"serviceName": "svc", "channel": "email", "userChannelId": "before@svc.test",
				"message": map[string]any{"from": "no_reply@invalid.local", "subject": "hello", "textBody": "hi"},
			}), "database")
			h := timed("health", "GET", "/health", nil)
			if h.status != http.StatusServiceUnavailable || !strings.Contains(h.body, `"MongoDB":{"status":"down"`) {
				t.Fatalf("health: %d %s", h.status, h.body)
			}
			fault.heal()
			waitFor(t, time.Minute, "the service to answer again", func() bool { return n.answer(t, "GET", "/subscriptions", nil).status == http.StatusOK })
			if k := count(); k != before {
				t.Fatalf("%d subscriptions after the outage, want %d: a refused call was kept", k, before)
			}
			if a := subscribe(fmt.Sprintf("after-%d@svc.test", before)); a.status != http.StatusOK {
				t.Fatalf("subscribe after the outage: %d %s", a.status, a.body)
			}
			if h := n.answer(t, "GET", "/health", nil); h.status != http.StatusOK {
				t.Fatalf("health after the outage: %d %s", h.status, h.body)
			}
		})
	}

	t.Run("the queue's Redis frozen (SIGSTOP)", func(t *testing.T) {
		rd.Pause()
		outage(timed("broadcast", "POST", "/notifications", map[string]any{
			"serviceName": "svc", "channel": "email", "isBroadcast": true, "asyncBroadcastPushNotification": true,
			"message": map[string]any{"from": "no_reply@invalid.local", "subject": "hello", "textBody": "hi"},
		}), "queue")
		h := timed("health", "GET", "/health", nil)
		if h.status != http.StatusServiceUnavailable || !strings.Contains(h.body, `"redis":{"status":"down"`) {
			t.Fatalf("health: %d %s", h.status, h.body)
		}
		// The API's other calls are served meanwhile.
		if a := timed("list subscriptions", "GET", "/subscriptions", nil); a.status != http.StatusOK {
			t.Fatalf("list while the queue is down: %d %s", a.status, a.body)
		}
		rd.Resume()
		waitFor(t, time.Minute, "health to see the queue again", func() bool { return n.answer(t, "GET", "/health", nil).status == http.StatusOK })
	})
}

// answerOf is a node's answer with what an outage test looks at.
type answerOf struct {
	status     int
	body       string
	retryAfter string
}

// answer sends a request as a super admin (from 127.0.0.1).
func (n *node) answer(t *testing.T, method, path string, body any) answerOf {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, n.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answerOf{resp.StatusCode, string(b), resp.Header.Get("Retry-After")}
}
