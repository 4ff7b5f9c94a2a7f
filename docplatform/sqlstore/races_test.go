package sqlstore

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
)

// fixedClock makes s's clock read at, for tests that need two stores on
// one database to disagree about the time (set before any use of s).
func fixedClock(s *Store, at time.Time) { s.now = func() time.Time { return at } }

// The review lock under concurrency, on both databases: an expired lock's
// take-over racing with the old reviewer's late submit never lets both
// win; completing after expiry is refused; many reviewers starting at
// once leave exactly one ACTIVE session.
func TestReviewLockRaces(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			url := b.url(t)
			s := openT(t, url)
			g := mkGroup(t, s)
			base := time.Now().UTC().Truncate(time.Microsecond)

			t.Run("a take-over racing the old reviewer's submit: never both", func(t *testing.T) {
				// alice's store reads one second before the lock's expiry,
				// bob's one second after: whichever commits first wins, the
				// other must see it.
				alice, bob := openT(t, url), openT(t, url)
				fixedClock(alice, base.Add(-time.Second))
				fixedClock(bob, base.Add(time.Second))
				both, total := 0, 0
				for i := range 40 {
					d := mkDoc(t, s, g, fmt.Sprintf("race-%d.pdf", i), time.Time{})
					fixedClock(s, base.Add(-time.Hour))
					sess, _, err := s.StartReview(ctx, d.ID, "alice", time.Hour) // expires at base
					noErr(t, err)
					var wg sync.WaitGroup
					var subErr, takeErr error
					wg.Go(func() {
						_, subErr = alice.AddCorrections(ctx, sess.ID, "alice", time.Hour, []docplatform.Correction{{Field: "f", Value: "v"}})
					})
					wg.Go(func() { _, _, takeErr = bob.StartReview(ctx, d.ID, "bob", time.Hour) })
					wg.Wait()
					for _, err := range []error{subErr, takeErr} {
						if err != nil && !errors.Is(err, docplatform.ErrLocked) && !errors.Is(err, docplatform.ErrNotActive) {
							t.Fatalf("unexpected %v", err)
						}
					}
					if subErr == nil && takeErr == nil {
						both++
					}
					total++
					active := 0
					list, err := s.DocumentReviews(ctx, d.ID)
					noErr(t, err)
					for _, r := range list {
						if r.Status == docplatform.ReviewActive {
							active++
						}
					}
					if active != 1 {
						t.Fatalf("round %d: %d active sessions", i, active)
					}
				}
				if both != 0 {
					t.Fatalf("%d of %d rounds let the late submit and the take-over both succeed", both, total)
				}
			})

			t.Run("completing after the lock lapsed is refused, with or without a take-over", func(t *testing.T) {
				d := mkDoc(t, s, g, "late.pdf", time.Time{})
				fixedClock(s, base)
				sess, _, err := s.StartReview(ctx, d.ID, "alice", time.Minute)
				noErr(t, err)
				fixedClock(s, base.Add(2*time.Minute))
				_, err = s.EndReview(ctx, sess.ID, "alice", docplatform.ReviewCompleted)
				wantErr(t, err, docplatform.ErrNotActive)
				_, err = s.AddCorrections(ctx, sess.ID, "alice", time.Minute, []docplatform.Correction{{Field: "f", Value: "v"}})
				wantErr(t, err, docplatform.ErrNotActive)
				// Abandoning a lapsed session is allowed: it only lets go.
				out, err := s.EndReview(ctx, sess.ID, "alice", docplatform.ReviewAbandoned)
				noErr(t, err)
				if out.Status != docplatform.ReviewAbandoned {
					t.Fatalf("%+v", out)
				}
			})

			t.Run("many reviewers taking over one expired lock: exactly one wins", func(t *testing.T) {
				d := mkDoc(t, s, g, "herd.pdf", time.Time{})
				fixedClock(s, base.Add(-time.Hour))
				_, _, err := s.StartReview(ctx, d.ID, "old", time.Minute)
				noErr(t, err)
				stores := make([]*Store, 6)
				for i := range stores {
					stores[i] = openT(t, url)
				}
				errs := make([]error, len(stores))
				var wg sync.WaitGroup
				for i, st := range stores {
					wg.Go(func() { _, _, errs[i] = st.StartReview(ctx, d.ID, fmt.Sprint("rev", i), time.Hour) })
				}
				wg.Wait()
				wins := 0
				for _, err := range errs {
					if err == nil {
						wins++
					} else if !errors.Is(err, docplatform.ErrLocked) {
						t.Fatalf("unexpected %v", err)
					}
				}
				if wins != 1 {
					t.Fatalf("%d winners", wins)
				}
			})
		})
	}
}

// Workflow versions under concurrent saves from separate connections:
// numbers unique and gapless, every earlier version unchanged.
func TestWorkflowVersionsConcurrentSaves(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			url := b.url(t)
			s := openT(t, url)
			g := mkGroup(t, s)
			w, _, err := s.CreateWorkflow(ctx, docplatform.Workflow{GroupID: g.ID, Name: "Concurrent"}, []byte(`{"n":0}`))
			noErr(t, err)
			stores := []*Store{s, openT(t, url), openT(t, url)}
			const saves = 30
			got := make([]int, saves)
			var wg sync.WaitGroup
			for i := range saves {
				wg.Go(func() {
					v, err := stores[i%len(stores)].AddWorkflowVersion(ctx, w.ID, fmt.Appendf(nil, `{"n":%d}`, i+1), "u")
					if err != nil {
						t.Error(err)
						return
					}
					got[i] = v.Version
				})
			}
			wg.Wait()
			sort.Ints(got)
			for i, n := range got {
				if n != i+2 {
					t.Fatalf("version numbers %v are not 2..%d without gaps", got, saves+1)
				}
			}
			vs, err := s.WorkflowVersions(ctx, w.ID)
			noErr(t, err)
			if len(vs) != saves+1 || string(vs[len(vs)-1].Config) != `{"n":0}` {
				t.Fatalf("%d versions, first %s", len(vs), vs[len(vs)-1].Config)
			}
			// Each save's config sits under the number it was told.
			seen := map[string]bool{}
			for _, v := range vs {
				if seen[string(v.Config)] {
					t.Fatalf("config %s saved twice", v.Config)
				}
				seen[string(v.Config)] = true
			}
			wf, err := s.Workflow(ctx, w.ID)
			noErr(t, err)
			if wf.Latest != saves+1 {
				t.Fatalf("latest %d", wf.Latest)
			}
		})
	}
}

// Two ADMINs demoting (or removing) each other at once: one wins, the
// group always keeps an ADMIN.
func TestLastAdminRace(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			url := b.url(t)
			s := openT(t, url)
			other := openT(t, url)
			for _, u := range []string{"ann", "ben"} {
				_, err := s.UpsertUser(ctx, docplatform.User{ID: u})
				noErr(t, err)
			}
			for round := range 20 {
				g := mkGroup(t, s)
				for _, u := range []string{"ann", "ben"} {
					_, err := s.ChangeMembership(ctx, g.ID, u, docplatform.RoleAdmin)
					noErr(t, err)
				}
				role := docplatform.RoleMember
				if round%2 == 1 {
					role = "" // removal
				}
				var wg sync.WaitGroup
				errs := make([]error, 2)
				wg.Go(func() { _, errs[0] = s.ChangeMembership(ctx, g.ID, "ann", role) })
				wg.Go(func() { _, errs[1] = other.ChangeMembership(ctx, g.ID, "ben", role) })
				wg.Wait()
				ms, err := s.Memberships(ctx, g.ID)
				noErr(t, err)
				admins := 0
				for _, m := range ms {
					if m.Role == docplatform.RoleAdmin {
						admins++
					}
				}
				if admins != 1 || (errs[0] == nil) == (errs[1] == nil) {
					t.Fatalf("round %d: %d admins left, errors %v", round, admins, errs)
				}
				for _, err := range errs {
					if err != nil && !errors.Is(err, docplatform.ErrLastAdmin) {
						t.Fatalf("unexpected %v", err)
					}
				}
			}
			_, err := s.ChangeMembership(ctx, mkGroup(t, s).ID, "ann", "")
			wantErr(t, err, docplatform.ErrNotFound)
		})
	}
}
