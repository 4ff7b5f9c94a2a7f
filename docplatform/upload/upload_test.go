package upload_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/filestore"
	"github.com/govkit/govkit/docplatform/s3store"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/docplatform/upload"
	"github.com/govkit/govkit/internal/testsvc"
)

// store is a document store as the platform uses it.
type store interface {
	upload.Files
	Open(ctx context.Context, key string, size int64) (io.ReadSeekCloser, error)
}

// world is one pairing of a database and a document store, as a
// deployment has: SQLite with a directory, PostgreSQL with S3.
type world struct {
	rows  *sqlstore.Store
	files store
	group string
	// staging counts the staging areas and readable objects in the store.
	count func(t *testing.T) (objects, staging int)
}

var ctx = context.Background()

// worlds are the pairings, each made for a test (PostgreSQL and S3 skip
// when the test services are not configured).
var worlds = []struct {
	name string
	make func(t *testing.T) world
}{
	{"sqlite+disk", func(t *testing.T) world {
		dir := t.TempDir()
		disk, err := filestore.Open(filepath.Join(dir, "documents"))
		must(t, err)
		return newWorld(t, openRows(t, filepath.Join(dir, "p.db")), disk, func(t *testing.T) (int, int) {
			c, s, err := disk.Files()
			must(t, err)
			return c, s
		})
	}},
	{"postgres+s3", func(t *testing.T) world {
		pg := testsvc.RequirePostgres(t)
		s3 := testsvc.RequireS3(t)
		obj, err := s3store.Open(ctx, s3store.Config{Bucket: s3.Bucket, Prefix: "docs/", Endpoint: s3.Endpoint, Region: s3.Region,
			AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey})
		must(t, err)
		return newWorld(t, openRows(t, pg), obj, func(t *testing.T) (int, int) {
			c, s, err := obj.Files(ctx)
			must(t, err)
			return c, s
		})
	}},
}

func newWorld(t *testing.T, rows *sqlstore.Store, files store, count func(t *testing.T) (int, int)) world {
	g, err := rows.CreateGroup(ctx, "uploads", "", "")
	must(t, err)
	return world{rows: rows, files: files, group: g.ID, count: count}
}

func openRows(t *testing.T, url string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(ctx, url)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// listed is the group's documents by id.
func (w world) listed(t *testing.T) map[string]docplatform.Document {
	t.Helper()
	docs, err := w.rows.ListDocuments(ctx, docplatform.DocumentFilter{GroupIDs: []string{w.group}, Limit: 1000})
	must(t, err)
	m := map[string]docplatform.Document{}
	for _, d := range docs {
		m[d.ID] = d
	}
	return m
}

// read is the bytes of d, or an error.
func (w world) read(d docplatform.Document) ([]byte, error) {
	r, err := w.files.Open(ctx, d.StorageKey, d.Size)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// expect checks that the group lists exactly want, each readable with
// its bytes, and that the store holds their objects and nothing else.
func (w world) expect(t *testing.T, want map[string][]byte) {
	t.Helper()
	got := w.listed(t)
	if len(got) != len(want) {
		t.Fatalf("%d documents listed, want %d", len(got), len(want))
	}
	for id, data := range want {
		d, ok := got[id]
		if !ok {
			t.Fatalf("document %s is not listed", id)
		}
		if b, err := w.read(d); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("document %s: %d bytes, %v", id, len(b), err)
		}
	}
	if objects, staging := w.count(t); objects != len(want) || staging != 0 {
		t.Fatalf("the store holds %d objects and %d staged uploads; want %d and 0", objects, staging, len(want))
	}
}

func (w world) manager(observe func(context.Context, upload.State)) *upload.Manager {
	return upload.New(w.files, w.rows, upload.Options{Observe: observe})
}

// TestLife takes uploads through every path of their life on both
// pairings of database and store.
func TestLife(t *testing.T) {
	for _, wm := range worlds {
		t.Run(wm.name, func(t *testing.T) {
			w := wm.make(t)
			kept := map[string][]byte{}
			var seen []upload.State
			m := w.manager(func(_ context.Context, s upload.State) {
				if len(seen) == 0 || seen[len(seen)-1] != s {
					seen = append(seen, s)
				}
			})
			keep := func(t *testing.T, data []byte) docplatform.Document {
				t.Helper()
				u, err := m.Receive(ctx, bytes.NewReader(data), 64<<20)
				must(t, err)
				defer u.Abandon()
				d, err := u.Keep(ctx, docplatform.Document{GroupID: w.group, FileName: "f.bin", UploadedBy: "u"})
				must(t, err)
				return d
			}

			t.Run("an upload goes receiving, stored, completed, committed, and is then listed whole", func(t *testing.T) {
				seen = nil
				data := randomBytes(s3store.MinPartSize + 10)
				d := keep(t, data)
				want := []upload.State{upload.Receiving, upload.Stored, upload.Completed, upload.Committed}
				if !equalStates(seen, want) {
					t.Fatalf("states %v, want %v", seen, want)
				}
				if d.Size != int64(len(data)) || d.CreatedAt.IsZero() {
					t.Fatalf("%+v", d)
				}
				kept[d.ID] = data
				w.expect(t, kept)
			})
			t.Run("an upload abandoned before Keep leaves nothing", func(t *testing.T) {
				u, err := m.Receive(ctx, strings.NewReader("abandoned"), 100)
				must(t, err)
				u.Abandon()
				u.Abandon()
				w.expect(t, kept)
			})
			t.Run("an upload to a deleted group is refused and leaves nothing", func(t *testing.T) {
				g, err := w.rows.CreateGroup(ctx, "gone", "", "")
				must(t, err)
				must(t, w.rows.SoftDeleteGroup(ctx, g.ID))
				u, err := m.Receive(ctx, strings.NewReader("late"), 100)
				must(t, err)
				defer u.Abandon()
				if _, err := u.Keep(ctx, docplatform.Document{GroupID: g.ID, FileName: "f"}); !errors.Is(err, docplatform.ErrNotFound) {
					t.Fatalf("keep: %v", err)
				}
				w.expect(t, kept)
			})
			t.Run("an upload whose staging a sweeper removed fails at its completion and leaves nothing", func(t *testing.T) {
				u, err := m.Receive(ctx, strings.NewReader("stalled"), 100)
				must(t, err)
				defer u.Abandon()
				must(t, w.files.Discard(ctx, u.Key()))
				if _, err := u.Keep(ctx, docplatform.Document{GroupID: w.group, FileName: "f"}); err == nil {
					t.Fatal("kept an upload whose bytes are gone")
				}
				if u.State() != upload.Gone {
					t.Fatalf("state %s, want gone", u.State())
				}
				w.expect(t, kept)
			})
			t.Run("a deleted document leaves the listing and the store", func(t *testing.T) {
				d := keep(t, []byte("short-lived"))
				must(t, m.Delete(ctx, d))
				if err := m.Delete(ctx, d); !errors.Is(err, docplatform.ErrNotFound) {
					t.Fatalf("second delete: %v", err)
				}
				w.expect(t, kept)
			})
		})
	}
}

func equalStates(a, b []upload.State) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSweepTakesOverWhatAProcessLeft leaves uploads in each state, as a
// process killed there would, and sweeps: stored and completed uploads
// are committed, discarding ones and staged bytes that no row names are
// removed, and so are objects no row names; young leftovers are left
// alone.
func TestSweepTakesOverWhatAProcessLeft(t *testing.T) {
	for _, wm := range worlds {
		t.Run(wm.name, func(t *testing.T) {
			w := wm.make(t)
			kept := map[string][]byte{}
			// stopAt makes an upload stop (as its process would die) on
			// reaching state at.
			stopAt := func(at upload.State, data []byte) {
				t.Helper()
				errStop := errors.New("stop")
				m := w.manager(func(ctx context.Context, s upload.State) {
					if s == at {
						panic(errStop)
					}
				})
				defer func() {
					if r := recover(); r != errStop {
						t.Fatalf("did not stop at %s: %v", at, r)
					}
				}()
				u, err := m.Receive(ctx, bytes.NewReader(data), 64<<20)
				must(t, err)
				u.Keep(ctx, docplatform.Document{GroupID: w.group, FileName: at.String() + ".bin", UploadedBy: "u"})
			}
			big := randomBytes(s3store.MinPartSize + 100)
			stopAt(upload.Receiving, big)
			stopAt(upload.Stored, big)
			stopAt(upload.Completed, []byte("completed"))
			stopAt(upload.Committed, []byte("committed"))

			m := w.manager(nil)
			// An orphan: readable bytes that no row names.
			u, err := w.files.Stage(ctx, strings.NewReader("orphan"), 100)
			must(t, err)
			must(t, u.Complete(ctx))
			// A deleted document whose bytes were not removed.
			doomed := func() docplatform.Document {
				up, err := m.Receive(ctx, strings.NewReader("doomed"), 100)
				must(t, err)
				d, err := up.Keep(ctx, docplatform.Document{GroupID: w.group, FileName: "doomed"})
				must(t, err)
				must(t, w.rows.DeleteDocument(ctx, d.ID))
				return d
			}()

			listed := w.listed(t)
			if len(listed) != 1 {
				t.Fatalf("before the sweep %d documents are listed, want only the committed one", len(listed))
			}
			for id, d := range listed {
				b, err := w.read(d)
				must(t, err)
				kept[id] = b
			}

			// Young leftovers are left alone.
			n, err := m.Sweep(ctx, time.Now().Add(-time.Hour), false)
			must(t, err)
			if n != (upload.Swept{}) {
				t.Fatalf("a sweep of hour-old leftovers did %+v", n)
			}

			// Two sweepers at once, as two replicas starting together.
			var wg sync.WaitGroup
			var total upload.Swept
			var mu sync.Mutex
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n, err := w.manager(nil).Sweep(ctx, time.Now().Add(time.Minute), true)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					total.Committed += n.Committed
					total.Discarded += n.Discarded
					total.Staged += n.Staged
					total.Orphans += n.Orphans
					mu.Unlock()
				}()
			}
			wg.Wait()
			// Both may act on one leftover (each move is conditional, so
			// the second finds it done): the counts are at least.
			if total.Committed < 2 || total.Discarded < 1 || total.Staged < 1 || total.Orphans < 1 {
				t.Fatalf("swept %+v; want the stored and completed uploads committed, the deleted document's bytes discarded, the staged body and the orphan removed", total)
			}
			for id, d := range w.listed(t) {
				if _, ok := kept[id]; ok {
					continue
				}
				switch d.FileName {
				case "stored.bin":
					kept[id] = big
				case "completed.bin":
					kept[id] = []byte("completed")
				default:
					t.Fatalf("%s appeared", d.FileName)
				}
			}
			if _, err := w.files.Open(ctx, doomed.StorageKey, doomed.Size); !errors.Is(err, filestore.ErrNotFound) {
				t.Fatalf("the deleted document's bytes: %v", err)
			}
			w.expect(t, kept)
		})
	}
}
