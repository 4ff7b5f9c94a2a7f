// Package filestore keeps uploaded documents' bytes on local disk, under
// the directory DOCUMENT_STORAGE names.
//
// An upload is written in two steps so that a failed upload leaves nothing
// behind: Stage streams the bytes into a temporary file in the same
// directory (hashing them and sniffing their type on the way, never holding
// the whole file in memory) and enforces the size limit; the caller then
// records the document's row and either Commits the staged file (an atomic
// rename to its key) or Discards it. A crash between the two leaves only a
// temporary file, which Sweep removes at the next start.
package filestore

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

const tempPrefix = ".upload-"

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

// Staged is an upload written to a temporary file, not yet under its key.
type Staged struct {
	Key         string
	Size        int64
	SHA256      string
	ContentType string // from http.DetectContentType on the first 512 bytes
	s           *Store
	temp        string
	done        bool
}

// Stage streams r into a temporary file. More than max bytes: ErrTooLarge;
// none: ErrEmpty. On any error nothing is left on disk.
func (s *Store) Stage(r io.Reader, max int64) (st *Staged, err error) {
	f, err := os.CreateTemp(s.dir, tempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	head := make([]byte, 0, 512)
	sniff := writerFunc(func(p []byte) (int, error) {
		if n := min(cap(head)-len(head), len(p)); n > 0 {
			head = append(head, p[:n]...)
		}
		return len(p), nil
	})
	// One byte over the limit is enough to know it is too large.
	n, err := io.Copy(io.MultiWriter(f, h, sniff), io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("filestore: write: %w", err)
	}
	if n > max {
		return nil, ErrTooLarge
	}
	if n == 0 {
		return nil, ErrEmpty
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("filestore: sync: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("filestore: close: %w", err)
	}
	return &Staged{Key: newKey(), Size: n, SHA256: hex.EncodeToString(h.Sum(nil)), ContentType: http.DetectContentType(head), s: s, temp: f.Name()}, nil
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// Commit moves the staged file under its key (an atomic rename in the same
// directory tree).
func (st *Staged) Commit() error {
	if st.done {
		return errors.New("filestore: staged file already committed or discarded")
	}
	st.done = true
	p := st.s.path(st.Key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		os.Remove(st.temp)
		return fmt.Errorf("filestore: %w", err)
	}
	if err := os.Rename(st.temp, p); err != nil {
		os.Remove(st.temp)
		return fmt.Errorf("filestore: %w", err)
	}
	return nil
}

// Discard removes the staged file; after Commit it does nothing.
func (st *Staged) Discard() {
	if !st.done {
		st.done = true
		os.Remove(st.temp)
	}
}

// Open opens the file under key for reading.
func (s *Store) Open(key string) (*os.File, error) {
	if !validKey(key) {
		return nil, ErrNotFound
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	return f, err
}

// Remove deletes the file under key; a missing file is not an error.
func (s *Store) Remove(key string) error {
	if !validKey(key) {
		return ErrNotFound
	}
	err := os.Remove(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Sweep removes temporary files older than age: uploads a crash cut short.
func (s *Store) Sweep(age time.Duration) (int, error) {
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

// newKey is 16 random bytes in hex: unguessable and safe as a file name.
func newKey() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func validKey(k string) bool {
	if len(k) != 32 {
		return false
	}
	_, err := hex.DecodeString(k)
	return err == nil
}

// path spreads files over 256 subdirectories by the key's first byte.
func (s *Store) path(key string) string { return filepath.Join(s.dir, key[:2], key) }
