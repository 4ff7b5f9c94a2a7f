package sqlstore

import (
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/testsvc"
)

// A PostgreSQL behind a proxy the test black-holes (it accepts bytes and
// answers nothing) or cuts: statements fail with ErrUnavailable instead
// of waiting for the kernel to give up on the connection, the watcher
// says so, and once the proxy forwards again the same Store works.
func TestAStatementToASilentDatabaseFailsAsUnavailable(t *testing.T) {
	pg := testsvc.RequirePostgres(t)
	u, err := url.Parse(pg)
	noErr(t, err)
	proxy := testsvc.NewFaultProxy(t, u.Host)
	s, err := Open(ctx, proxy.URL(pg), WithTimeout(time.Second))
	noErr(t, err)
	t.Cleanup(func() { s.Close() })
	s.Watch(50 * time.Millisecond)
	g := mkGroup(t, s)
	waitUntil(t, "the watcher's first answer", func() bool { return s.Unavailable() == nil })

	for _, fault := range []struct {
		name string
		fail func()
	}{{"black-holed", proxy.Blackhole}, {"refusing connections", proxy.Refuse}} {
		t.Run(fault.name, func(t *testing.T) {
			fault.fail()
			_, err := s.Group(ctx, g.ID)
			if !errors.Is(err, docplatform.ErrUnavailable) {
				t.Fatalf("a read: %v, want ErrUnavailable", err)
			}
			_, err = s.CreateGroup(ctx, "during", "", "")
			var ue *docplatform.UnavailableError
			if !errors.As(err, &ue) || ue.Part != "database" {
				t.Fatalf("a write: %v, want the database unavailable", err)
			}
			waitUntil(t, "the watcher to see the outage", func() bool { return errors.Is(s.Unavailable(), docplatform.ErrUnavailable) })
			proxy.Restore()
			waitUntil(t, "the watcher to see the database again", func() bool { return s.Unavailable() == nil })
			waitUntil(t, "a read to succeed on the same Store", func() bool { _, err := s.Group(ctx, g.ID); return err == nil })
			groups, err := s.ListGroups(ctx)
			noErr(t, err)
			for _, gr := range groups {
				if gr.Name == "during" {
					t.Fatal("the write made during the outage was kept")
				}
			}
		})
	}
}

// waitUntil polls cond (an event, not a time: the deadline only stops a
// test that would otherwise hang).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
