// Package filestore keeps uploaded documents' bytes, and defines the
// contract every document store keeps: this package's Store (a directory,
// the default DOCUMENT_STORAGE) and s3store (S3-compatible object storage,
// DOCUMENT_STORAGE=s3://bucket/prefix) both stage, commit and discard
// uploads the same way, return the same errors and describe a staged file
// with the same Upload.
//
// An upload is written in two steps so that a failed upload leaves nothing
// behind: Stage streams the bytes where nobody can read them yet (here a
// temporary file in the same directory; in object storage an unfinished
// multipart upload), hashing them and sniffing their type on the way with a
// Meter, never holding the whole file in memory, and enforces the size
// limit; the caller then records the document's row and either Commits the
// upload (here an atomic rename to its key) or Discards it. A crash between
// the two leaves only staged bytes, which Sweep removes at the next start.
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

// Upload is a staged file: its bytes are stored but not yet readable
// under Key. Exactly one of Commit or Discard makes it final; Discard after
// Commit does nothing, so `defer u.Discard()` is always safe.
type Upload struct {
	Key         string
	Size        int64
	SHA256      string
	ContentType string // from http.DetectContentType on the first 512 bytes

	commit  func(context.Context) error
	discard func()
	done    bool
}

// NewUpload is how a store hands out a staged file: commit makes it
// readable under m's key, discard throws its bytes away.
func NewUpload(m *Meter, key string, commit func(context.Context) error, discard func()) *Upload {
	return &Upload{Key: key, Size: m.Size(), SHA256: m.SHA256(), ContentType: m.ContentType(), commit: commit, discard: discard}
}

// Commit makes the staged bytes readable under Key. When it fails the
// staged bytes are discarded.
func (u *Upload) Commit(ctx context.Context) error {
	if u.done {
		return errors.New("filestore: upload already committed or discarded")
	}
	u.done = true
	if err := u.commit(ctx); err != nil {
		u.discard()
		return err
	}
	return nil
}

// Discard throws the staged bytes away; after Commit it does nothing.
func (u *Upload) Discard() {
	if !u.done {
		u.done = true
		u.discard()
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

// String names the directory, for start-up logs.
func (s *Store) String() string { return s.dir }

// Stage streams r into a temporary file. More than max bytes: ErrTooLarge;
// none: ErrEmpty; a read error of r is returned as it is; the disk failing
// is ErrStorage. On any error nothing is left on disk.
func (s *Store) Stage(_ context.Context, r io.Reader, max int64) (u *Upload, err error) {
	f, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	m := NewMeter()
	if _, err := io.Copy(io.MultiWriter(diskWriter{f}, m), io.LimitReader(r, max+1)); err != nil {
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
	temp, key := f.Name(), NewKey()
	commit := func(context.Context) error {
		p := s.path(key)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("%w: %w", ErrStorage, err)
		}
		if err := os.Rename(temp, p); err != nil {
			return fmt.Errorf("%w: %w", ErrStorage, err)
		}
		return nil
	}
	return NewUpload(m, key, commit, func() { os.Remove(temp) }), nil
}

// diskWriter marks write errors as the storage's, so that they are not
// mistaken for the client's body failing.
type diskWriter struct{ f *os.File }

func (w diskWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = fmt.Errorf("%w: write: %w", ErrStorage, err)
	}
	return n, err
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
		return nil, err
	}
	return f, nil
}

// Remove deletes the file under key; a missing file is not an error.
func (s *Store) Remove(_ context.Context, key string) error {
	if !ValidKey(key) {
		return ErrNotFound
	}
	err := os.Remove(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Sweep removes temporary files older than age: uploads a crash cut short.
func (s *Store) Sweep(_ context.Context, age time.Duration) (int, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > age {
			if os.Remove(filepath.Join(s.dir, e.Name())) == nil {
				n++
			}
		}
	}
	return n, nil
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
