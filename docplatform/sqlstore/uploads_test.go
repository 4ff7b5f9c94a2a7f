package sqlstore

import (
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
)

// TestUploadRows runs the upload rows' transitions on both databases:
// each moves a row only from the state it names, so of two processes
// moving one upload exactly one wins.
func TestUploadRows(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openT(t, b.url(t))
			g := mkGroup(t, s)
			record := func(t *testing.T) docplatform.Document {
				t.Helper()
				d, err := s.RecordUpload(ctx, docplatform.Document{GroupID: g.ID, FileName: "a.pdf", ContentType: "application/pdf", Size: 3, SHA256: "abc", StorageKey: uniq("key"), UploadedBy: "u"})
				noErr(t, err)
				return d
			}
			listed := func(t *testing.T, id string) bool {
				t.Helper()
				_, err := s.Document(ctx, id)
				if err != nil {
					wantErr(t, err, docplatform.ErrNotFound)
				}
				return err == nil
			}
			t.Run("a stored upload is not listed until committed, then it is listed once", func(t *testing.T) {
				d := record(t)
				if listed(t, d.ID) {
					t.Fatal("a stored upload is listed")
				}
				got, err := s.CommitUpload(ctx, d.StorageKey)
				noErr(t, err)
				if got.ID != d.ID || got.CreatedAt.IsZero() || !listed(t, d.ID) {
					t.Fatalf("committed %+v", got)
				}
				again, err := s.CommitUpload(ctx, d.StorageKey)
				noErr(t, err)
				if again.ID != d.ID || !again.CreatedAt.Equal(got.CreatedAt) {
					t.Fatalf("committing twice gave %+v, want %+v", again, got)
				}
				committed, err := s.DiscardUpload(ctx, d.StorageKey)
				noErr(t, err)
				if !committed || !listed(t, d.ID) {
					t.Fatal("a committed upload was discarded")
				}
			})
			t.Run("a discarded upload cannot be committed, and is forgotten", func(t *testing.T) {
				d := record(t)
				committed, err := s.DiscardUpload(ctx, d.StorageKey)
				noErr(t, err)
				if committed {
					t.Fatal("reported committed")
				}
				_, err = s.CommitUpload(ctx, d.StorageKey)
				wantErr(t, err, docplatform.ErrConflict)
				known, err := s.KnownKeys(ctx, []string{d.StorageKey, "nobody"})
				noErr(t, err)
				if !known[d.StorageKey] || known["nobody"] {
					t.Fatalf("known %v", known)
				}
				noErr(t, s.ForgetUpload(ctx, d.StorageKey))
				known, err = s.KnownKeys(ctx, []string{d.StorageKey})
				noErr(t, err)
				if known[d.StorageKey] || listed(t, d.ID) {
					t.Fatal("a forgotten upload is still named")
				}
			})
			t.Run("a deleted document's key stays named until its bytes are forgotten", func(t *testing.T) {
				d := record(t)
				_, err := s.CommitUpload(ctx, d.StorageKey)
				noErr(t, err)
				noErr(t, s.DeleteDocument(ctx, d.ID))
				wantErr(t, s.DeleteDocument(ctx, d.ID), docplatform.ErrNotFound)
				if listed(t, d.ID) {
					t.Fatal("a deleted document is listed")
				}
				stale, err := s.StaleUploads(ctx, time.Now().Add(time.Minute), 1000)
				noErr(t, err)
				found := false
				for _, u := range stale {
					if u.Document.StorageKey == d.StorageKey {
						found = u.Discarding && u.Document.ID == d.ID && u.Document.Size == 3
					}
				}
				if !found {
					t.Fatalf("the deleted document's bytes are not waiting to be discarded: %+v", stale)
				}
				noErr(t, s.ForgetUpload(ctx, d.StorageKey))
			})
			t.Run("a group deleted before the commit stops it, leaving the upload stored", func(t *testing.T) {
				g2 := mkGroup(t, s)
				d, err := s.RecordUpload(ctx, docplatform.Document{GroupID: g2.ID, FileName: "b.pdf", Size: 1, StorageKey: uniq("key")})
				noErr(t, err)
				noErr(t, s.SoftDeleteGroup(ctx, g2.ID))
				_, err = s.CommitUpload(ctx, d.StorageKey)
				wantErr(t, err, docplatform.ErrNotFound)
				_, err = s.RecordUpload(ctx, docplatform.Document{GroupID: g2.ID, FileName: "c.pdf", Size: 1, StorageKey: uniq("key")})
				wantErr(t, err, docplatform.ErrNotFound)
				committed, err := s.DiscardUpload(ctx, d.StorageKey)
				noErr(t, err)
				if committed {
					t.Fatal("reported committed")
				}
			})
			t.Run("of two sweepers that saw an upload at the same time, one claims it", func(t *testing.T) {
				d := record(t)
				stale, err := s.StaleUploads(ctx, time.Now().Add(time.Minute), 1000)
				noErr(t, err)
				var since time.Time
				for _, u := range stale {
					if u.Document.StorageKey == d.StorageKey {
						since = u.Since
					}
				}
				first, err := s.ClaimUpload(ctx, d.StorageKey, since)
				noErr(t, err)
				second, err := s.ClaimUpload(ctx, d.StorageKey, since)
				noErr(t, err)
				if !first || second {
					t.Fatalf("claims %v, %v; want only the first", first, second)
				}
			})
			t.Run("a commit and a discard racing: exactly one wins", func(t *testing.T) {
				for range 20 {
					d := record(t)
					var wg sync.WaitGroup
					var commitErr, discardErr error
					var committed bool
					wg.Add(2)
					go func() { defer wg.Done(); _, commitErr = s.CommitUpload(ctx, d.StorageKey) }()
					go func() { defer wg.Done(); committed, discardErr = s.DiscardUpload(ctx, d.StorageKey) }()
					wg.Wait()
					noErr(t, discardErr)
					if commitErr == nil {
						if !committed || !listed(t, d.ID) {
							t.Fatalf("the commit won but the discard says committed=%v", committed)
						}
						continue
					}
					wantErr(t, commitErr, docplatform.ErrConflict)
					if committed || listed(t, d.ID) {
						t.Fatal("the discard won but the document is listed")
					}
				}
			})
		})
	}
}
