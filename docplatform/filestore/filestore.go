// Package filestore keeps uploaded documents' bytes in a directory (the
// default DOCUMENT_STORAGE), and defines what every document store offers
// package upload, which moves an upload through its life: this package's
// Store and s3store (S3-compatible object storage,
// DOCUMENT_STORAGE=s3://bucket/prefix) stage, complete, finish and discard
// bytes the same way, return the same errors and describe staged bytes
// with the same Upload.
//
// Bytes reach their key in two steps, so that they are readable only once
// whole: Stage streams the body where nobody can read it (here the
// temporary file .upload-<key> in the same directory; in object storage an
// unfinished multipart upload), hashing it and sniffing its type on the
// way with a Meter, never holding the whole file in memory, and enforcing
// the size limit; Upload.Complete then makes it readable under its key
// (here an atomic rename). What happens between and around the two steps
// (the document's row, a crash, a sweep) is package upload's.
//
// For the sweeper, a store also finishes what a crash left (Finish:
// complete staged bytes that are whole), discards everything under a key
// (Discard: staged bytes first, then the readable file, so a completion
// racing with it cannot leave a file behind), and lists its staged bytes
// (Staged) and its readable keys (Stored).
package filestore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrTooLarge is returned by Stage when the bytes exceed the limit.
var ErrTooLarge = errors.New("filestore: file exceeds the size limit")

// ErrEmpty is returned by Stage for a file of no bytes.
var ErrEmpty = errors.New("filestore: file is empty")

// ErrNotFound is returned for a key with no file.
var ErrNotFound = errors.New("filestore: no such file")

// ErrStorage wraps failures of the storage itself (a full disk, an object
// store that refuses or cannot be reached), as opposed to the client's
// body failing: callers answer it with a 5xx, not a 4xx.
var ErrStorage = errors.New("filestore: storage failed")

const tempPrefix = ".upload-"

// Upload is bytes staged under Key: stored, but not readable yet.
// Complete makes them readable; Abort, before that, throws them away.
// Abort after Complete does nothing, so `defer u.Abort()` is always safe.
type Upload struct {
	Key         string
	Size        int64
	SHA256      string
	ContentType string // from http.DetectContentType on the first 512 bytes

	complete func(context.Context) error
	abort    func()
	done     bool
}

// NewUpload is how a store hands out staged bytes: complete makes them
// readable under key, abort throws them away.
func NewUpload(m *Meter, key string, complete func(context.Context) error, abort func()) *Upload {
	return &Upload{Key: key, Size: m.Size(), SHA256: m.SHA256(), ContentType: m.ContentType(), complete: complete, abort: abort}
}

// Complete makes the staged bytes readable under Key, whole, at once. It
// may be called once. When it fails the bytes are left as they are —
// still staged or, if the store completed them but its answer was lost,
// readable — for the caller to discard by key (the store's Discard copes
// with either).
func (u *Upload) Complete(ctx context.Context) error {
	if u.done {
		return errors.New("filestore: upload already completed or aborted")
	}
	u.done = true
	return u.complete(ctx)
}

// Abort throws the staged bytes away; after Complete it does nothing.
func (u *Upload) Abort() {
	if !u.done {
		u.done = true
		u.abort()
	}
}

// Trace observes a Stage in progress, as net/http/httptrace observes a
// request: a caller puts it in the context with WithTrace. Tests use it
// to stop a process at a chosen moment of an upload.
type Trace struct {
	// PartStaged is called each time a part of the body has been written
	// to the staging area (here each write to the temporary file; in
	// object storage each uploaded part), with the bytes staged so far.
	PartStaged func(staged int64)
}

type traceKey struct{}

// WithTrace returns ctx carrying t for the stores' Stage.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// PartStaged tells ctx's Trace, if any, that staged bytes are in the
// staging area.
func PartStaged(ctx context.Context, staged int64) {
	if t, _ := ctx.Value(traceKey{}).(*Trace); t != nil && t.PartStaged != nil {
		t.PartStaged(staged)
	}
}

// Meter watches bytes on their way to storage: it counts them, hashes them
// (SHA-256) and keeps the first 512 for type sniffing. Write never fails.
type Meter struct {
	n    int64
	h    hash.Hash
	head []byte
}

// NewMeter returns an empty Meter.
func NewMeter() *Meter { return &Meter{h: sha256.New(), head: make([]byte, 0, 512)} }

func (m *Meter) Write(p []byte) (int, error) {
	if n := min(cap(m.head)-len(m.head), len(p)); n > 0 {
		m.head = append(m.head, p[:n]...)
	}
	m.h.Write(p)
	m.n += int64(len(p))
	return len(p), nil
}

// Size is the number of bytes written.
func (m *Meter) Size() int64 { return m.n }

// SHA256 is the hex SHA-256 of the bytes written.
func (m *Meter) SHA256() string { return hex.EncodeToString(m.h.Sum(nil)) }

// ContentType is http.DetectContentType of the first bytes written.
func (m *Meter) ContentType() string { return http.DetectContentType(m.head) }

// Check applies the size rules to what was written: more than max bytes
// is ErrTooLarge, none is ErrEmpty. Stores read at most max+1 bytes: one
// byte over the limit is enough to know it is too large.
func (m *Meter) Check(max int64) error {
	switch {
	case m.n > max:
		return ErrTooLarge
	case m.n == 0:
		return ErrEmpty
	}
	return nil
}

// Store is a directory of files named by random keys.
type Store struct {
	dir string
}

// Open uses dir (created if missing) for files.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("filestore: empty directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	return &Store{dir: abs}, nil
}

// Ping reports whether the directory is there (for the health endpoint).
func (s *Store) Ping(context.Context) error {
	if _, err := os.Stat(s.dir); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return nil
}

// String names the directory, for start-up logs.
func (s *Store) String() string { return s.dir }

// Stage streams r into the temporary file of a new key. More than max
// bytes: ErrTooLarge; none: ErrEmpty; a read error of r is returned as it
// is; the disk failing is ErrStorage. On any error nothing is left on
// disk.
func (s *Store) Stage(ctx context.Context, r io.Reader, max int64) (u *Upload, err error) {
	key := NewKey()
	temp := s.temp(key)
	f, err := os.OpenFile(temp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(temp)
		}
	}()
	m := NewMeter()
	if _, err := io.Copy(io.MultiWriter(&diskWriter{ctx: ctx, f: f}, m), io.LimitReader(r, max+1)); err != nil {
		return nil, err
	}
	if err := m.Check(max); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("%w: sync: %w", ErrStorage, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("%w: close: %w", ErrStorage, err)
	}
	complete := func(context.Context) error { return s.rename(key) }
	return NewUpload(m, key, complete, func() { os.Remove(temp) }), nil
}

// rename moves key's temporary file to its place.
func (s *Store) rename(key string) error {
	p := s.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	if err := os.Rename(s.temp(key), p); err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return nil
}

// diskWriter marks write errors as the storage's, so that they are not
// mistaken for the client's body failing, and reports each write to the
// context's Trace.
type diskWriter struct {
	ctx context.Context
	f   *os.File
	n   int64
}

func (w *diskWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		return n, fmt.Errorf("%w: write: %w", ErrStorage, err)
	}
	w.n += int64(n)
	PartStaged(w.ctx, w.n)
	return n, nil
}

// Open opens the file under key for reading (size, the size recorded for
// it, is not needed on disk).
func (s *Store) Open(_ context.Context, key string, _ int64) (io.ReadSeekCloser, error) {
	if !ValidKey(key) {
		return nil, ErrNotFound
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	return f, nil
}

// Finish makes key readable if a crash left its bytes staged and whole
// (size bytes), and then checks that key holds size bytes: ErrNotFound
// when it does not (nothing staged and nothing readable, or bytes of
// another size).
func (s *Store) Finish(_ context.Context, key string, size int64) error {
	if !ValidKey(key) {
		return ErrNotFound
	}
	if fi, err := os.Stat(s.temp(key)); err == nil && fi.Size() == size {
		// Another process finishing it at the same moment renames first:
		// then the file is in place, which the check below sees.
		if err := s.rename(key); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	fi, err := os.Stat(s.path(key))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("%w: %w", ErrStorage, err)
	case fi.Size() != size:
		return fmt.Errorf("%w: %s holds %d bytes, not %d", ErrNotFound, key, fi.Size(), size)
	}
	return nil
}

// Discard removes everything under key: its staged bytes first, then its
// readable file, so that a completion racing with it finds nothing to
// complete or is undone. Nothing there is not an error.
func (s *Store) Discard(_ context.Context, key string) error {
	if !ValidKey(key) {
		return ErrNotFound
	}
	for _, p := range []string{s.temp(key), s.path(key)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %w", ErrStorage, err)
		}
	}
	return nil
}

// Staged calls fn with the key of each temporary file last written
// before t: uploads cut short, or in progress if t is recent. Temporary
// files not named after a key (written by versions before keys named
// them) are removed here, since no row can name them.
func (s *Store) Staged(_ context.Context, before time.Time, fn func(key string) error) error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStorage, err)
	}
	for _, e := range entries {
		key, ok := strings.CutPrefix(e.Name(), tempPrefix)
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(before) {
			continue
		}
		if !ValidKey(key) {
			os.Remove(filepath.Join(s.dir, e.Name()))
			continue
		}
		if err := fn(key); err != nil {
			return err
		}
	}
	return nil
}

// Stored calls fn with the keys of the readable files, up to batch at a
// time.
func (s *Store) Stored(_ context.Context, batch int, fn func(keys []string) error) error {
	var keys []string
	err := filepath.WalkDir(s.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != s.dir && d.IsDir() && filepath.Dir(p) != s.dir {
			return filepath.SkipDir
		}
		if d.IsDir() || !ValidKey(d.Name()) || filepath.Base(filepath.Dir(p)) != d.Name()[:2] {
			return nil
		}
		if keys = append(keys, d.Name()); len(keys) == batch {
			err := fn(keys)
			keys = keys[:0]
			return err
		}
		return nil
	})
	if err == nil && len(keys) > 0 {
		err = fn(keys)
	}
	return err
}

// Files counts the committed files and temporary files on disk (for tests
// and operators checking that failed uploads left nothing).
func (s *Store) Files() (committed, temporary int, err error) {
	err = filepath.WalkDir(s.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasPrefix(d.Name(), tempPrefix) {
			temporary++
		} else {
			committed++
		}
		return nil
	})
	return committed, temporary, err
}

// NewKey is 16 random bytes in hex: unguessable, and safe as a file or
// object name.
func NewKey() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ValidKey reports whether k has NewKey's shape; anything else names no
// file (so a key can never reach outside the store).
func ValidKey(k string) bool {
	if len(k) != 32 {
		return false
	}
	_, err := hex.DecodeString(k)
	return err == nil
}

// path spreads files over 256 subdirectories by the key's first byte.
func (s *Store) path(key string) string { return filepath.Join(s.dir, key[:2], key) }

// temp is where key's bytes are staged.
func (s *Store) temp(key string) string { return filepath.Join(s.dir, tempPrefix+key) }
