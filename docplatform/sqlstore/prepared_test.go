package sqlstore

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/testsvc"
)

// The request path's SQLite reads run without their context's
// cancellation (which costs two goroutines per statement), but keep any
// deadline a caller set.
func TestUncancellable(t *testing.T) {
	bg := context.Background()
	if got := uncancellable(bg); got != bg {
		t.Fatal("a context that cannot be cancelled should be used as it is")
	}

	ctx, cancel := context.WithCancel(bg)
	u := uncancellable(ctx)
	cancel()
	if u.Done() != nil || u.Err() != nil {
		t.Fatalf("cancellation should be dropped: Done %v, Err %v", u.Done(), u.Err())
	}

	dctx, dcancel := context.WithTimeout(bg, time.Hour)
	defer dcancel()
	if got := uncancellable(dctx); got != dctx {
		t.Fatal("a context with a deadline should keep it")
	}
}

// A hot-path read on SQLite completes even when the request's context is
// cancelled while it runs (a client that hung up): it is bounded and in
// process. One whose deadline has passed still fails, as asked.
func TestSQLiteReadsIgnoreCancelButNotDeadlines(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "platform.db"))
	u := mkUser(t, s)
	g := mkGroup(t, s)
	if err := s.SetMembership(context.Background(), docplatform.Membership{UserID: u.ID, GroupID: g.ID, Role: docplatform.RoleMember}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a, err := s.Access(ctx, u.ID)
	if err != nil {
		t.Fatalf("Access with a cancelled request context: %v", err)
	}
	if !a.Exists || len(a.Groups) != 1 || a.Groups[0].GroupID != g.ID {
		t.Fatalf("Access = %+v, want the user and its one group", a)
	}

	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	if _, err := s.Access(dctx, u.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Access past its deadline: %v, want context.DeadlineExceeded", err)
	}
}

// The PostgreSQL pool keeps what it opened: requests that come in bursts
// reuse connections instead of closing one when they finish and opening
// another (a new backend each time) on the next burst.
func TestPostgresPoolKeepsItsConnections(t *testing.T) {
	s := openT(t, testsvc.RequirePostgres(t))
	u := mkUser(t, s)
	for range 5 {
		var wg sync.WaitGroup
		for range postgresConns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Hold a connection while the others take theirs, so the
				// burst opens as many as the pool allows.
				tx, err := s.r.BeginTx(context.Background(), nil)
				if err != nil {
					t.Error(err)
					return
				}
				defer tx.Rollback()
				if _, err := tx.ExecContext(context.Background(), "SELECT pg_sleep(0.05)"); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if _, err := s.Access(context.Background(), u.ID); err != nil {
			t.Fatal(err)
		}
	}
	st := s.r.Stats()
	if st.MaxIdleClosed != 0 {
		t.Fatalf("the pool closed %d connections for being idle beyond its bound (open %d, idle %d)", st.MaxIdleClosed, st.OpenConnections, st.Idle)
	}
	if st.OpenConnections < 2 {
		t.Fatalf("the bursts opened %d connections, want several", st.OpenConnections)
	}
}
