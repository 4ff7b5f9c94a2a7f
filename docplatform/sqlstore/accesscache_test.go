package sqlstore

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/govkit/govkit/docplatform"
)

// dataVersion reads the watch connection's data_version as a check does.
func dataVersion(t *testing.T, s *Store) int64 {
	t.Helper()
	s.ac.watch.mu.Lock()
	defer s.ac.watch.mu.Unlock()
	v, err := s.ac.watch.version()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// cachedUser reports whether userID's access is in the cache, valid now.
func cachedUser(s *Store, userID string) bool {
	s.ac.mu.RLock()
	defer s.ac.mu.RUnlock()
	e := s.ac.users[userID]
	return e != nil && e.gen == s.ac.gen.Load()
}

func cachedKey(s *Store, hash []byte) bool {
	s.ac.mu.RLock()
	defer s.ac.mu.RUnlock()
	e := s.ac.keys[string(hash)]
	return e != nil && e.gen == s.ac.gen.Load()
}

// The cache rests on this: in WAL mode, PRAGMA data_version on the watch
// connection changes when any other connection commits — this Store's
// writer, another Store's, a plain database/sql handle on the file — and
// stays put while nothing is committed (reads included), or the cache
// would never hit.
func TestDataVersionSeesEveryOtherConnectionsCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "platform.db")
	s := openT(t, path)
	var mode string
	noErr(t, s.r.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode))
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
	u := mkUser(t, s)

	v0 := dataVersion(t, s)
	if _, err := s.Access(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if v := dataVersion(t, s); v != v0 {
		t.Fatalf("data_version moved from %d to %d with no commit", v0, v)
	}

	noErr(t, s.SetSystemAdmin(ctx, u.ID, true))
	v1 := dataVersion(t, s)
	if v1 == v0 {
		t.Fatal("data_version did not change after a commit by this Store's writer")
	}

	other := openT(t, path)
	noErr(t, other.SetSystemAdmin(ctx, u.ID, false))
	v2 := dataVersion(t, s)
	if v2 == v1 {
		t.Fatal("data_version did not change after a commit by a second Store on the file")
	}

	db, err := sql.Open("sqlite", path)
	noErr(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, `UPDATE users SET name = 'renamed' WHERE id = ?`, u.ID)
	noErr(t, err)
	if v := dataVersion(t, s); v == v2 {
		t.Fatal("data_version did not change after a commit by a plain database/sql connection")
	}
}

// Every change that decides access takes effect on the very next call,
// whether this Store made it or another one on the same file did (as an
// operator's command next to a running server does). Each step first
// warms the cache and checks that the answer is indeed cached.
func TestAccessCacheSeesEveryChangeOnTheNextCall(t *testing.T) {
	for _, by := range []string{"same store", "second store on the file"} {
		t.Run(by, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "platform.db")
			s := openT(t, path)
			w := s
			if by != "same store" {
				w = openT(t, path)
			}
			u, keeper := mkUser(t, s), mkUser(t, s)
			g := mkGroup(t, s)
			member(t, s, keeper, g, docplatform.RoleAdmin)

			access := func(want string) {
				t.Helper()
				// Twice: the first call may fill the cache, the second
				// must be answered from it.
				for i := range 2 {
					a, err := s.Access(ctx, u.ID)
					noErr(t, err)
					got := fmt.Sprintf("admin=%v roles=%v groups=%d", a.User.IsSystemAdmin, a.Roles, len(a.Groups))
					if got != want {
						t.Fatalf("call %d: Access = %s, want %s", i+1, got, want)
					}
				}
				if !cachedUser(s, u.ID) {
					t.Fatal("Access is not cached after two calls with no change")
				}
			}
			grant := func(hash []byte, ok bool) {
				t.Helper()
				for i := range 2 {
					gr, err := s.APIKeyGrant(ctx, hash)
					if ok && (err != nil || gr.GroupID != g.ID || gr.Roles[g.ID] != docplatform.RoleMember) {
						t.Fatalf("call %d: APIKeyGrant = %+v, %v; want the group's grant", i+1, gr, err)
					}
					if !ok && !errors.Is(err, docplatform.ErrNotFound) {
						t.Fatalf("call %d: APIKeyGrant = %+v, %v; want ErrNotFound", i+1, gr, err)
					}
				}
				if cachedKey(s, hash) != ok {
					t.Fatalf("key cached = %v, want %v (only keys found are cached)", !ok, ok)
				}
			}

			access("admin=false roles=map[] groups=0")
			noErr(t, w.SetMembership(ctx, docplatform.Membership{UserID: u.ID, GroupID: g.ID, Role: docplatform.RoleAdmin}))
			access(fmt.Sprintf("admin=false roles=map[%s:ADMIN] groups=1", g.ID))
			// Demotion.
			_, err := w.ChangeMembership(ctx, g.ID, u.ID, docplatform.RoleMember)
			noErr(t, err)
			access(fmt.Sprintf("admin=false roles=map[%s:MEMBER] groups=1", g.ID))
			// Removed membership.
			_, err = w.ChangeMembership(ctx, g.ID, u.ID, "")
			noErr(t, err)
			access("admin=false roles=map[] groups=0")
			// The system-admin flag, granted and withdrawn.
			noErr(t, w.SetSystemAdmin(ctx, u.ID, true))
			access("admin=true roles=map[] groups=0")
			noErr(t, w.SetSystemAdmin(ctx, u.ID, false))
			access("admin=false roles=map[] groups=0")

			// A key, regenerated: the old secret fails at once, the new
			// one works.
			k := mkKey(t, w, g)
			grant(k.Hash, true)
			fresh := randHash()
			_, err = w.RegenerateAPIKey(ctx, g.ID, "gk_new", fresh)
			noErr(t, err)
			grant(k.Hash, false)
			grant(fresh, true)
			// Deleted, then made again.
			noErr(t, w.DeleteAPIKey(ctx, g.ID))
			grant(fresh, false)
			k = mkKey(t, w, g)
			grant(k.Hash, true)

			// A soft-deleted group: its member and its key lose it.
			member(t, w, u, g, docplatform.RoleMember)
			access(fmt.Sprintf("admin=false roles=map[%s:MEMBER] groups=1", g.ID))
			noErr(t, w.SoftDeleteGroup(ctx, g.ID))
			access("admin=false roles=map[] groups=0")
			grant(k.Hash, false)
		})
	}
}

// Under -race: readers hammer Access and APIKeyGrant while a writer renames
// the user and regenerates the key. A reader that starts after a write
// returned must see it: never a name or a key older than that write.
func TestAccessCacheNeverStaleUnderConcurrentWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "platform.db")
	s := openT(t, path)
	w := openT(t, path) // writes from another connection too: half the steps
	u, g := mkUser(t, s), mkGroup(t, s)
	k := mkKey(t, s, g)

	const steps = 150
	hashes := make([][]byte, steps+1)
	hashes[0] = k.Hash
	for i := 1; i <= steps; i++ {
		hashes[i] = randHash()
	}
	// Step i renames the user "v<i>" and regenerates the key to
	// hashes[i]; started and done count the steps begun and returned.
	var started, done atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				before := done.Load()
				a, err := s.Access(ctx, u.ID)
				if err != nil {
					errs <- err
					return
				}
				n, _ := strconv.Atoi(strings.TrimPrefix(a.User.Name, "v"))
				if a.User.Name != "" && int64(n) < before {
					errs <- fmt.Errorf("Access returned name %q after write %d had returned", a.User.Name, before)
					return
				}
				if before > 0 {
					if _, err := s.APIKeyGrant(ctx, hashes[before-1]); !errors.Is(err, docplatform.ErrNotFound) {
						errs <- fmt.Errorf("key of step %d still works after write %d returned: %v", before-1, before, err)
						return
					}
				}
				_, err = s.APIKeyGrant(ctx, hashes[before])
				if err != nil && started.Load() == before {
					errs <- fmt.Errorf("key of step %d refused with no write begun since: %v", before, err)
					return
				}
			}
		})
	}
	for i := 1; i <= steps; i++ {
		st := s
		if i%2 == 0 {
			st = w
		}
		started.Store(int64(i))
		if _, err := st.UpsertUser(ctx, docplatform.User{ID: u.ID, Name: "v" + strconv.Itoa(i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.RegenerateAPIKey(ctx, g.ID, "gk_x", hashes[i]); err != nil {
			t.Fatal(err)
		}
		done.Store(int64(i))
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Each map is bounded; a full one is cleared rather than grown, and keys
// that are not found are never stored.
func TestAccessCacheIsBounded(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "platform.db"))
	s.ac.max = 3
	var users []docplatform.User
	for range 7 {
		users = append(users, mkUser(t, s))
	}
	for _, u := range users {
		a, err := s.Access(ctx, u.ID)
		noErr(t, err)
		if !a.Exists || a.User.ID != u.ID {
			t.Fatalf("Access = %+v", a)
		}
		if n := len(s.ac.users); n > 3 {
			t.Fatalf("%d users cached, bound 3", n)
		}
	}
	if !cachedUser(s, users[len(users)-1].ID) {
		t.Fatal("the last user read is not cached")
	}
	for range 5 {
		_, err := s.APIKeyGrant(ctx, randHash())
		wantErr(t, err, docplatform.ErrNotFound)
	}
	if n := len(s.ac.keys); n != 0 {
		t.Fatalf("%d unknown keys cached", n)
	}
	var keys []docplatform.APIKey
	for range 5 {
		keys = append(keys, mkKey(t, s, mkGroup(t, s)))
	}
	for _, k := range keys {
		gr, err := s.APIKeyGrant(ctx, k.Hash)
		if err != nil || gr.KeyID != k.ID {
			t.Fatal(gr, err)
		}
		if n := len(s.ac.keys); n > 3 {
			t.Fatalf("%d keys cached, bound 3", n)
		}
	}
	if !cachedKey(s, keys[len(keys)-1].Hash) {
		t.Fatal("the last key read is not cached")
	}
}

// When data_version cannot be read the cache is neither used nor filled:
// calls read the database, so a change made meanwhile is seen; once the
// watch works again, nothing from before the failure is served.
func TestAccessCacheStepsAsideWhenTheCheckFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "platform.db")
	s := openT(t, path)
	w := openT(t, path)
	u, g := mkUser(t, s), mkGroup(t, s)
	member(t, s, u, g, docplatform.RoleAdmin)
	if _, err := s.Access(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if !cachedUser(s, u.ID) {
		t.Fatal("not cached")
	}

	s.ac.watch.mu.Lock()
	open := s.ac.watch.open
	s.ac.watch.drop()
	s.ac.watch.open = func() (driver.Conn, error) { return nil, errors.New("watch broken by the test") }
	s.ac.watch.mu.Unlock()

	noErr(t, w.SetSystemAdmin(ctx, u.ID, true))
	for range 2 {
		a, err := s.Access(ctx, u.ID)
		noErr(t, err)
		if !a.User.IsSystemAdmin {
			t.Fatal("a call with a failed check answered from the cache")
		}
		if len(s.ac.users) != 0 {
			t.Fatal("a call with a failed check filled the cache")
		}
	}

	s.ac.watch.mu.Lock()
	s.ac.watch.open = open
	s.ac.watch.mu.Unlock()
	noErr(t, w.SetSystemAdmin(ctx, u.ID, false))
	a, err := s.Access(ctx, u.ID)
	noErr(t, err)
	if a.User.IsSystemAdmin {
		t.Fatal("stale flag after the watch came back")
	}
	if !cachedUser(s, u.ID) {
		t.Fatal("the cache is not used again once the check works")
	}
}

// A hit allocates nothing of its own: Access and APIKeyGrant answered from
// the cache cost exactly the allocations of the data_version check (the
// driver's, for its rows), and the lookups none.
func TestAccessCacheHitAllocatesNothing(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "platform.db"))
	u, g := mkUser(t, s), mkGroup(t, s)
	member(t, s, u, g, docplatform.RoleMember)
	k := mkKey(t, s, g)
	if _, err := s.Access(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.APIKeyGrant(ctx, k.Hash); err != nil {
		t.Fatal(err)
	}
	gen, err := s.ac.check()
	noErr(t, err)
	if n := testing.AllocsPerRun(100, func() {
		if _, ok := s.ac.access(u.ID, gen); !ok {
			t.Fatal("miss")
		}
		if _, ok := s.ac.grant(k.Hash, gen); !ok {
			t.Fatal("miss")
		}
	}); n != 0 {
		t.Errorf("cache lookups: %v allocations, want 0", n)
	}
	check := testing.AllocsPerRun(100, func() { s.ac.check() })
	hit := testing.AllocsPerRun(100, func() {
		if a, err := s.Access(ctx, u.ID); err != nil || len(a.Roles) != 1 {
			t.Fatal(a, err)
		}
	})
	key := testing.AllocsPerRun(100, func() {
		if _, err := s.APIKeyGrant(ctx, k.Hash); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations: check %v, Access hit %v, APIKeyGrant hit %v", check, hit, key)
	// With nothing committed the check answers from the WAL-index header:
	// no statement, so nothing allocated anywhere on a hit.
	if check != 0 || hit != 0 || key != 0 {
		t.Errorf("a hit allocates %v (Access) and %v (APIKeyGrant), the check %v; want 0", hit, key, check)
	}
}

// With nothing committed, checks answer from the WAL-index header and run
// no statement; a commit by any connection — this Store's writer, a
// second Store, a plain handle on the file — makes the next check ask
// SQLite, which then sees it and drops the cache.
func TestWALHeaderAnswersChecksUntilACommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "platform.db")
	s := openT(t, path)
	other := openT(t, path)
	db, err := sql.Open("sqlite", path)
	noErr(t, err)
	defer db.Close()
	u := mkUser(t, s)
	if _, err := s.ac.check(); err != nil {
		t.Fatal(err)
	}
	if s.ac.watch.hdr == nil {
		t.Fatal("the WAL-index header is not mapped on a WAL database")
	}
	reads := func() uint64 {
		s.ac.watch.mu.Lock()
		defer s.ac.watch.mu.Unlock()
		return s.ac.watch.reads
	}
	check := func() uint64 {
		t.Helper()
		gen, err := s.ac.check()
		noErr(t, err)
		return gen
	}
	gen := check()
	before := reads()
	for range 10 {
		if _, err := s.Access(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		if g := check(); g != gen {
			t.Fatalf("generation moved from %d to %d with no commit", gen, g)
		}
	}
	if n := reads() - before; n != 0 {
		t.Fatalf("%d data_version statements for checks with nothing committed, want 0", n)
	}
	for _, c := range []struct {
		by    string
		write func() error
	}{
		{"this Store's writer", func() error { return s.SetSystemAdmin(ctx, u.ID, true) }},
		{"a second Store", func() error { return other.SetSystemAdmin(ctx, u.ID, false) }},
		{"a plain handle", func() error {
			_, err := db.ExecContext(ctx, `UPDATE users SET name = 'renamed' WHERE id = ?`, u.ID)
			return err
		}},
	} {
		noErr(t, c.write())
		before := reads()
		g := check()
		if reads() == before {
			t.Fatalf("after a commit by %s the check did not ask SQLite", c.by)
		}
		if g == gen {
			t.Fatalf("after a commit by %s the cache was not dropped", c.by)
		}
		gen = g
		if check() != gen || reads() != before+1 {
			t.Fatalf("after a commit by %s, the next check without a commit asked SQLite again or moved", c.by)
		}
	}
}

// A mapping whose file shrank under it faults on read; read reports it
// instead of the fault ending the process.
func TestWALHeaderFaultIsReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x-shm")
	noErr(t, os.WriteFile(path, make([]byte, 4096), 0o600))
	h, err := mapWALHeader(path)
	if err != nil {
		t.Skip("no shared mapping here:", err)
	}
	defer h.close()
	if _, ok := h.read(); !ok {
		t.Fatal("read of a mapped file failed")
	}
	noErr(t, os.Truncate(path, 0))
	if _, ok := h.read(); ok {
		t.Fatal("read past the end of a truncated file reported no fault")
	}
}
