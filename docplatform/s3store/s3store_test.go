package s3store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/govkit/govkit/docplatform/filestore"
	"github.com/govkit/govkit/docplatform/s3store"
	"github.com/govkit/govkit/internal/testsvc"
)

func TestParseURL(t *testing.T) {
	cases := []struct {
		in, bucket, prefix string
		ok                 bool
	}{
		{"s3://docs", "docs", "", true},
		{"s3://docs/", "docs", "", true},
		{"s3://docs/govkit/prod", "docs", "govkit/prod/", true},
		{"s3://docs/govkit/prod/", "docs", "govkit/prod/", true},
		{"s3://my.bucket-1/p", "my.bucket-1", "p/", true},
		{"s3://Docs/p", "", "", false},                            // upper case
		{"s3://ab", "", "", false},                                // too short
		{"s3://-docs", "", "", false},                             // starts with a hyphen
		{"s3://a..b", "", "", false},                              // two dots
		{"s3://docs/../x", "", "", false},                         // dot-dot segment
		{"s3://docs/a?b", "", "", false},                          // query
		{"s3://docs/a\nb", "", "", false},                         // control character
		{"https://docs/x", "", "", false},                         // not s3://
		{"s3://", "", "", false},                                  // no bucket
		{"s3://docs/" + strings.Repeat("p", 1000), "", "", false}, // too long
	}
	for _, c := range cases {
		b, p, err := s3store.ParseURL(c.in)
		if (err == nil) != c.ok || b != c.bucket || p != c.prefix {
			t.Errorf("ParseURL(%q) = %q, %q, %v", c.in, b, p, err)
		}
	}
}

// open returns a store on a fresh bucket of the test S3 server.
func open(t *testing.T, prefix string) (*s3store.Store, testsvc.S3) {
	t.Helper()
	s3 := testsvc.RequireS3(t)
	s, err := s3store.Open(context.Background(), s3store.Config{
		Bucket: s3.Bucket, Prefix: prefix, Endpoint: s3.Endpoint, Region: s3.Region,
		AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, s3
}

func files(t *testing.T, s *s3store.Store) (committed, incomplete int) {
	t.Helper()
	c, i, err := s.Files(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c, i
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func TestUploadsRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, "docs/")
	pdf := append([]byte("%PDF-1.7\n"), randomBytes(3000)...)
	cases := []struct {
		name     string
		body     []byte
		wantType string
	}{
		{"a small PDF is one part, sniffed as a PDF", pdf, "application/pdf"},
		{"plain text is sniffed as text", []byte("hello"), "text/plain; charset=utf-8"},
		{"exactly one part", randomBytes(s3store.MinPartSize), "application/octet-stream"},
		{"two and a half parts", randomBytes(s3store.MinPartSize*5/2 + 3), "application/octet-stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := s.Stage(ctx, bytes.NewReader(tc.body), 64<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer u.Abort()
			if u.Size != int64(len(tc.body)) || u.SHA256 != sum(tc.body) || u.ContentType != tc.wantType {
				t.Fatalf("staged %+v", u)
			}
			// Staged is not readable yet.
			if _, err := s.Open(ctx, u.Key, u.Size); !errors.Is(err, filestore.ErrNotFound) {
				t.Fatalf("staged object readable before commit: %v", err)
			}
			if err := u.Complete(ctx); err != nil {
				t.Fatal(err)
			}
			r, err := s.Open(ctx, u.Key, u.Size)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Equal(got, tc.body) {
				t.Fatalf("read back %d bytes (%v), want %d", len(got), err, len(tc.body))
			}
		})
	}
	if c, i := files(t, s); c != len(cases) || i != 0 {
		t.Fatalf("%d objects, %d unfinished uploads; want %d, 0", c, i, len(cases))
	}
}

// failingReader delivers n bytes, then fails like a client that went away.
type failingReader struct {
	r io.Reader
	n int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("connection reset by peer")
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func TestFailedUploadsLeaveNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, "")
	big := randomBytes(s3store.MinPartSize*2 + 10)
	cases := []struct {
		name    string
		r       io.Reader
		max     int64
		wantErr error
	}{
		{"one byte over the limit after two parts", bytes.NewReader(big), int64(len(big)) - 1, filestore.ErrTooLarge},
		{"over the limit within the first part", strings.NewReader("123456"), 5, filestore.ErrTooLarge},
		{"an empty file", strings.NewReader(""), 5, filestore.ErrEmpty},
		{"a body cut short after a part was stored", &failingReader{bytes.NewReader(big), s3store.MinPartSize + 100}, 64 << 20, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := s.Stage(ctx, tc.r, tc.max)
			if err == nil {
				u.Abort()
				t.Fatal("no error")
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if errors.Is(err, filestore.ErrStorage) {
				t.Fatalf("a client's failure reported as the store's: %v", err)
			}
			if c, i := files(t, s); c+i != 0 {
				t.Fatalf("%d objects, %d unfinished uploads left", c, i)
			}
		})
	}
	t.Run("an aborted upload leaves nothing", func(t *testing.T) {
		u, err := s.Stage(ctx, bytes.NewReader(big), 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		if _, i := files(t, s); i != 1 {
			t.Fatalf("%d unfinished uploads while staged, want 1", i)
		}
		u.Abort()
		if c, i := files(t, s); c+i != 0 {
			t.Fatalf("%d objects, %d unfinished uploads left", c, i)
		}
	})
	t.Run("a completion that fails leaves the bytes for Discard", func(t *testing.T) {
		u, err := s.Stage(ctx, strings.NewReader("data"), 10)
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := u.Complete(cctx); !errors.Is(err, filestore.ErrStorage) {
			t.Fatalf("completion with a dead context: %v", err)
		}
		if err := s.Discard(ctx, u.Key); err != nil {
			t.Fatal(err)
		}
		if c, i := files(t, s); c+i != 0 {
			t.Fatalf("%d objects, %d unfinished uploads left", c, i)
		}
	})
}

// partWatcher is a body that, once it has delivered three parts' worth,
// asks the store what it holds: parts already stored show the upload is
// streamed, not gathered in memory first.
type partWatcher struct {
	t       *testing.T
	r       io.Reader
	read    int
	s3      testsvc.S3
	checked bool
	stored  int
}

func (w *partWatcher) Read(p []byte) (int, error) {
	if !w.checked && w.read >= 3*s3store.MinPartSize {
		w.checked = true
		core := minio.Core{Client: w.s3.Client}
		res, err := core.ListMultipartUploads(context.Background(), w.s3.Bucket, "", "", "", "", 10)
		if err != nil || len(res.Uploads) != 1 {
			w.t.Errorf("uploads in progress: %v %v", res.Uploads, err)
			return 0, errors.New("stop")
		}
		u := res.Uploads[0]
		parts, err := core.ListObjectParts(context.Background(), w.s3.Bucket, u.Key, u.UploadID, 0, 100)
		if err != nil {
			w.t.Error(err)
		}
		w.stored = len(parts.ObjectParts)
	}
	n, err := w.r.Read(p)
	w.read += n
	return n, err
}

func TestUploadsAreStreamedPartByPart(t *testing.T) {
	ctx := context.Background()
	s, s3 := open(t, "")
	body := randomBytes(5 * s3store.MinPartSize)
	w := &partWatcher{t: t, r: bytes.NewReader(body), s3: s3}
	u, err := s.Stage(ctx, w, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if w.stored < 2 {
		t.Fatalf("after reading 3 parts' worth, %d parts were stored; want at least 2", w.stored)
	}
	if u.SHA256 != sum(body) {
		t.Fatal("hash differs")
	}
}

func TestDownloadsSeekAndServeRanges(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, "p/")
	body := randomBytes(s3store.MinPartSize + 1000)
	u, err := s.Stage(ctx, bytes.NewReader(body), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := s.Open(r.Context(), u.Key, u.Size)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer f.Close()
		http.ServeContent(w, r, "", time.Time{}, f)
	}))
	defer srv.Close()
	cases := []struct {
		rng        string
		status     int
		start, end int // end exclusive
	}{
		{"", 200, 0, len(body)},
		{"bytes=10-19", 206, 10, 20},
		{"bytes=-100", 206, len(body) - 100, len(body)},
		{"bytes=" + "5242870-5242889", 206, 5242870, 5242890}, // across the part boundary
	}
	for _, c := range cases {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if c.rng != "" {
			req.Header.Set("Range", c.rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !bytes.Equal(got, body[c.start:c.end]) {
			t.Errorf("Range %q: %s, %d bytes", c.rng, resp.Status, len(got))
		}
	}

	r, err := s.Open(ctx, u.Key, u.Size)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n, _ := r.Seek(0, io.SeekEnd); n != u.Size {
		t.Fatalf("seek to end: %d", n)
	}
	if _, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read at end: %v", err)
	}
	r.Seek(-3, io.SeekEnd)
	tail, _ := io.ReadAll(r)
	if !bytes.Equal(tail, body[len(body)-3:]) {
		t.Fatal("tail differs")
	}
}

func TestOpenRefusesKeysThatAreNotKeys(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, "x/")
	for _, k := range []string{"../../etc/passwd", "", filestore.NewKey()} {
		if _, err := s.Open(ctx, k, 10); !errors.Is(err, filestore.ErrNotFound) {
			t.Errorf("Open(%q): %v", k, err)
		}
	}
}

func TestOpenRefusesAMissingBucketAndBadSettings(t *testing.T) {
	s3 := testsvc.RequireS3(t)
	ctx := context.Background()
	base := s3store.Config{Endpoint: s3.Endpoint, Region: s3.Region, AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey}
	cases := map[string]func(*s3store.Config){
		"a bucket that does not exist": func(c *s3store.Config) { c.Bucket = "govkit-no-such-bucket" },
		"wrong credentials":            func(c *s3store.Config) { c.Bucket = s3.Bucket; c.SecretAccessKey = "wrong" },
		"an endpoint with a path":      func(c *s3store.Config) { c.Bucket = s3.Bucket; c.Endpoint += "/x" },
		"an unknown addressing style":  func(c *s3store.Config) { c.Bucket = s3.Bucket; c.AddressingStyle = "dns" },
	}
	for name, mod := range cases {
		c := base
		mod(&c)
		if _, err := s3store.Open(ctx, c); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
}

// BenchmarkUploadAndDownload stages, commits and reads back a 12 MiB
// document (three parts) against the test S3 server on loopback.
func BenchmarkUploadAndDownload(b *testing.B) {
	ctx := context.Background()
	s3 := testsvc.RequireS3(b)
	s, err := s3store.Open(ctx, s3store.Config{Bucket: s3.Bucket, Endpoint: s3.Endpoint, Region: s3.Region,
		AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey})
	if err != nil {
		b.Fatal(err)
	}
	body := randomBytes(12 << 20)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		u, err := s.Stage(ctx, bytes.NewReader(body), 64<<20)
		if err != nil {
			b.Fatal(err)
		}
		if err := u.Complete(ctx); err != nil {
			b.Fatal(err)
		}
		r, err := s.Open(ctx, u.Key, u.Size)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, r); err != nil || n != u.Size {
			b.Fatal(n, err)
		}
		r.Close()
		s.Discard(ctx, u.Key)
	}
}
