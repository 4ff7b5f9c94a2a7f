package spa_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"

	"github.com/govkit/govkit/internal/spa"
)

func TestHandlerServesTheBuild(t *testing.T) {
	h, err := spa.New(fstest.MapFS{
		"index.html":            {Data: []byte("<!doctype html><title>app</title>")},
		"assets/main-ABC123.js": {Data: []byte("console.log(1)")},
		"favicon.svg":           {Data: []byte("<svg/>")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path         string
		status             int
		contentType, cache string
		body               string
	}{
		{"a hashed bundle is cached for good", "/assets/main-ABC123.js", 200, "text/javascript; charset=utf-8", "public, max-age=31536000, immutable", "console.log(1)"},
		{"an unknown bundle is 404, not the page", "/assets/main-OLD.js", 404, "application/json; charset=utf-8", "no-store", ""},
		{"a fixed file is revalidated", "/favicon.svg", 200, "image/svg+xml", "no-cache", "<svg/>"},
		{"the root is the page", "/", 200, "text/html; charset=utf-8", "no-cache", "<!doctype html><title>app</title>"},
		{"a client-side route is the page", "/documents/42", 200, "text/html; charset=utf-8", "no-cache", "<!doctype html><title>app</title>"},
		{"dot segments stay inside the build", "/assets/../index.html", 200, "text/html; charset=utf-8", "no-cache", "<!doctype html><title>app</title>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", c.path, nil))
			if rec.Code != c.status || rec.Header().Get("Content-Type") != c.contentType || rec.Header().Get("Cache-Control") != c.cache {
				t.Fatalf("%d %q %q, want %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"), c.status, c.contentType, c.cache)
			}
			if c.body != "" && rec.Body.String() != c.body {
				t.Errorf("body %q", rec.Body.String())
			}
		})
	}

	t.Run("a repeated request with the ETag is 304", func(t *testing.T) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		req := httptest.NewRequest("GET", "/groups", nil)
		req.Header.Set("If-None-Match", rec.Header().Get("ETag"))
		rec2 := httptest.NewRecorder()
		h.ServeHTTP(rec2, req)
		if rec2.Code != http.StatusNotModified {
			t.Errorf("%d, want 304", rec2.Code)
		}
	})
}

func TestNewRefusesABuildWithoutIndex(t *testing.T) {
	if _, err := spa.New(fstest.MapFS{"assets/a.js": {Data: []byte("x")}}); err == nil {
		t.Fatal("a build without index.html was accepted")
	}
}
