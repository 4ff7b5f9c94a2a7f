package platform_test

import (
	"bytes"
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/internal/testsvc"
)

// TestOutagesAreAnsweredAsOutages runs a real `docplatform serve` process
// against parts the test fails for real: PostgreSQL behind a TCP proxy
// the test black-holes (a silent network) and cuts (a server that is
// down), a Redis and a versitygw of the test's own that it freezes
// (SIGSTOP) and stops. While a part is down, requests that need it are
// answered 503 with Retry-After and a message naming it — never 401, 403
// or 500 — and those that do not need it are served; /api/health says
// which part is down; nothing is half-written; and when the part is back
// everything works again without a restart. How long each answer took is
// logged, not asserted (machines are noisy): the bound is
// DEPENDENCY_TIMEOUT_MS, 2 s here.
func TestOutagesAreAnsweredAsOutages(t *testing.T) {
	pg := testsvc.RequirePostgres(t)
	pgURL, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	db := testsvc.NewFaultProxy(t, pgURL.Host)
	rd := testsvc.OwnRedis(t)
	s3 := testsvc.OwnS3(t)
	c := newCluster(t, "DATABASE_URL="+db.URL(pg), "REDIS_URL=redis://"+rd.Addr,
		"DOCUMENT_STORAGE=s3://"+s3.Bucket+"/documents", "AWS_ENDPOINT_URL="+s3.Endpoint, "AWS_REGION="+s3.Region,
		"AWS_ACCESS_KEY_ID="+s3.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+s3.SecretAccessKey,
		"DEPENDENCY_TIMEOUT_MS=2000", "THROTTLE_GLOBAL_LIMIT=100000", "THROTTLE_AUTH_LIMIT=1000",
		"THROTTLE_AUTH_REFRESH_LIMIT=3")
	c.replicas = []*replica{c.start()}
	admin := devidp.DemoUsers()[0]
	grantAdmin(t, c, admin.Subject)
	ab := c.browser("")
	ab.signIn(0, admin.Username, admin.Password)
	g := ab.do("POST", "/api/groups", strings.NewReader(`{"name":"Outages"}`), nil)
	if g.status != 201 {
		t.Fatalf("create group: %d %s", g.status, g.body)
	}
	group := g.json(t)["id"].(string)
	data := randomData(t, 3000)
	up := ab.upload(group, "before.bin", data, nil)
	if up.status != 201 {
		t.Fatalf("upload: %d %s", up.status, up.body)
	}
	doc := up.json(t)["id"].(string)
	expectHealth(t, ab, 200, "ok", nil)

	// timed sends a request and logs how long its answer took.
	timed := func(what string, send func() answer) answer {
		t.Helper()
		start := time.Now()
		a := send()
		t.Logf("%s: %d in %v", what, a.status, time.Since(start).Round(time.Millisecond))
		return a
	}
	get := func(path string) func() answer { return func() answer { return ab.do("GET", path, nil, nil) } }
	put := func(data []byte) func() answer {
		return func() answer { return ab.upload(group, "during.bin", data, nil) }
	}
	outage := func(a answer, part string) {
		t.Helper()
		msg, _ := a.json(t)["message"].(string)
		if a.status != 503 || a.retryAfter == "" || !strings.Contains(msg, "The "+part+" is unavailable") {
			t.Fatalf("%d (Retry-After %q) %s; want 503 naming the %s with Retry-After", a.status, a.retryAfter, a.body, part)
		}
	}
	served := func(a answer, status int) {
		t.Helper()
		if a.status != status {
			t.Fatalf("%d %s; want %d", a.status, a.body, status)
		}
	}
	documents := func() int {
		t.Helper()
		a := ab.do("GET", "/api/documents?groupId="+group, nil, nil)
		served(a, 200)
		return len(a.json(t)["documents"].([]any))
	}

	for _, fault := range []struct {
		name       string
		fail, heal func()
	}{
		{"frozen (SIGSTOP)", s3.Pause, s3.Resume},
		{"stopped", s3.Stop, s3.Start},
	} {
		t.Run("object store "+fault.name, func(t *testing.T) {
			fault.fail()
			outage(timed("upload", put(randomData(t, 7<<20))), "document storage")
			outage(timed("download", get("/api/documents/"+doc+"/content")), "document storage")
			served(timed("list", get("/api/documents?groupId="+group)), 200)
			expectHealth(t, ab, 200, "degraded", map[string]string{"documentStorage": "down", "database": "up"})
			fault.heal()
			if n := documents(); n != 1 {
				t.Fatalf("%d documents after the outage, want 1: a failed upload was kept", n)
			}
			served(ab.upload(group, "after.bin", data, nil), 201)
			if a := ab.do("GET", "/api/documents/"+doc+"/content", nil, nil); a.status != 200 || !bytes.Equal(a.body, data) {
				t.Fatalf("download after the outage: %d", a.status)
			}
			expectHealth(t, ab, 200, "ok", nil)
			deleteAllBut(t, ab, group, doc)
		})
	}

	for i, fault := range []struct {
		name       string
		fail, heal func()
	}{
		{"frozen (SIGSTOP)", rd.Pause, rd.Resume},
		{"stopped", rd.Stop, rd.Start},
	} {
		t.Run("Redis "+fault.name, func(t *testing.T) {
			fault.fail()
			// Nobody is signed out, refused or let through unlimited:
			// requests are served, and each replica keeps the budgets.
			served(timed("me", get("/api/auth/me")), 200)
			served(timed("list", get("/api/documents?groupId="+group)), 200)
			visitor := c.browser("203.0.113." + strconv.Itoa(50+i))
			for i := range 3 {
				if a := visitor.do("POST", "/api/auth/refresh", nil, nil); a.status == 429 || a.status >= 500 {
					t.Fatalf("refresh %d of the budget: %d %s", i+1, a.status, a.body)
				}
			}
			if a := visitor.do("POST", "/api/auth/refresh", nil, nil); a.status != 429 {
				t.Fatalf("a refresh over the budget while Redis is down: %d %s, want 429", a.status, a.body)
			}
			expectHealth(t, ab, 200, "degraded", map[string]string{"rateLimitCounters": "down"})
			fault.heal()
			expectHealth(t, ab, 200, "ok", nil)
			served(ab.do("GET", "/api/auth/me", nil, nil), 200)
		})
	}

	for _, fault := range []struct {
		name string
		fail func()
	}{
		{"black-holed (a silent network)", db.Blackhole},
		{"refusing connections (down)", db.Refuse},
	} {
		t.Run("PostgreSQL "+fault.name, func(t *testing.T) {
			before := documents()
			fault.fail()
			// A signed-in user is not signed out (401) nor refused (403);
			// neither is a machine with its key.
			outage(timed("me", get("/api/auth/me")), "database")
			outage(timed("list", get("/api/documents?groupId="+group)), "database")
			outage(timed("upload", put(data)), "database")
			outage(timed("create group", func() answer {
				return ab.do("POST", "/api/groups", strings.NewReader(`{"name":"During"}`), nil)
			}), "database")
			expectHealth(t, ab, 503, "unavailable", map[string]string{"database": "down", "documentStorage": "up"})
			db.Restore()
			waitHealthy(t, ab)
			served(ab.do("GET", "/api/auth/me", nil, nil), 200)
			if n := documents(); n != before {
				t.Fatalf("%d documents after the outage, want %d", n, before)
			}
			served(ab.upload(group, "after.bin", data, nil), 201)
			deleteAllBut(t, ab, group, doc)
		})
	}

	// Nothing half-written: no upload row is left waiting, and the store
	// holds exactly the listed document (after a sweep of what the failed
	// uploads may have staged).
	st, err := sqlstore.Open(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	left, err := st.StaleUploads(context.Background(), time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range left {
		if !u.Discarding {
			t.Fatalf("an upload answered 503 was left stored: %+v", u)
		}
	}
	docs, err := st.ListDocuments(context.Background(), docplatform.DocumentFilter{GroupIDs: []string{group}, Limit: 10})
	if err != nil || len(docs) != 1 {
		t.Fatalf("documents at the end: %v %v", docs, err)
	}
}

// expectHealth checks /api/health's status and the parts named in want.
func expectHealth(t *testing.T, b *browser, status int, overall string, want map[string]string) {
	t.Helper()
	a := b.do("GET", "/api/health", nil, nil)
	h := a.json(t)
	if a.status != status || h["status"] != overall {
		t.Fatalf("health: %d %s; want %d %s", a.status, a.body, status, overall)
	}
	for k, v := range want {
		if h[k] != v {
			t.Fatalf("health: %s; want %s %s", a.body, k, v)
		}
	}
}

// waitHealthy waits until /api/health answers 200: the database's watcher
// has seen it answer again (it asks every second).
func waitHealthy(t *testing.T, b *browser) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for b.do("GET", "/api/health", nil, nil).status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("the platform did not become healthy again")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for b.do("GET", "/api/auth/me", nil, nil).status == 503 {
		if time.Now().After(deadline) {
			t.Fatal("requests are still refused after the database is back")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deleteAllBut deletes the group's documents other than keep.
func deleteAllBut(t *testing.T, b *browser, group, keep string) {
	t.Helper()
	a := b.do("GET", "/api/documents?groupId="+group, nil, nil)
	for _, d := range a.json(t)["documents"].([]any) {
		id := d.(map[string]any)["id"].(string)
		if id == keep {
			continue
		}
		if a := b.do("DELETE", "/api/documents/"+id, nil, nil); a.status != 204 {
			t.Fatalf("delete %s: %d %s", id, a.status, a.body)
		}
	}
}
