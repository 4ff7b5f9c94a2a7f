package filestore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestStage(t *testing.T) {
	ctx := context.Background()
	pdf := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("x"), 1000)...)
	cases := []struct {
		name     string
		body     []byte
		max      int64
		wantErr  error
		wantType string
	}{
		{"a PDF is sniffed as a PDF", pdf, 4096, nil, "application/pdf"},
		{"plain text is sniffed as text", []byte("hello"), 10, nil, "text/plain; charset=utf-8"},
		{"exactly the limit is accepted", []byte("12345"), 5, nil, "text/plain; charset=utf-8"},
		{"one byte over the limit is refused", []byte("123456"), 5, ErrTooLarge, ""},
		{"an empty file is refused", nil, 5, ErrEmpty, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			st, err := s.Stage(ctx, bytes.NewReader(tc.body), tc.max)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if c, tmp, _ := s.Files(); c+tmp != 0 {
					t.Fatalf("a failed stage left %d files", c+tmp)
				}
				return
			}
			if st.ContentType != tc.wantType || st.Size != int64(len(tc.body)) {
				t.Fatalf("%+v", st)
			}
			if err := st.Complete(ctx); err != nil {
				t.Fatal(err)
			}
			f, err := s.Open(ctx, st.Key, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(f)
			f.Close()
			if !bytes.Equal(got, tc.body) {
				t.Fatal("bytes differ")
			}
			if c, tmp, _ := s.Files(); c != 1 || tmp != 0 {
				t.Fatalf("committed %d temporary %d", c, tmp)
			}
		})
	}
}

func TestDiscardLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := Open(t.TempDir())
	st, err := s.Stage(ctx, strings.NewReader("data"), 10)
	if err != nil {
		t.Fatal(err)
	}
	st.Abort()
	if c, tmp, _ := s.Files(); c+tmp != 0 {
		t.Fatalf("%d files left", c+tmp)
	}
}

type failing struct{ n int }

func (f *failing) Read(p []byte) (int, error) {
	if f.n > 0 {
		f.n--
		return copy(p, "abc"), nil
	}
	return 0, errors.New("connection reset")
}

func TestReadErrorLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := Open(t.TempDir())
	if _, err := s.Stage(ctx, &failing{n: 3}, 100); err == nil {
		t.Fatal("no error")
	}
	if c, tmp, _ := s.Files(); c+tmp != 0 {
		t.Fatalf("%d files left", c+tmp)
	}
}

func TestKeysCannotEscapeTheDirectory(t *testing.T) {
	ctx := context.Background()
	s, _ := Open(t.TempDir())
	for _, k := range []string{"../../etc/passwd", "", "zz" + strings.Repeat("0", 30)} {
		if _, err := s.Open(ctx, k, 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("%q: %v", k, err)
		}
	}
}
