// Package spa serves a single-page web UI built by internal/uibuild (the
// platform's web UI, notify's console) from the file system its package
// embeds.
//
// The build's layout is the contract: index.html at the root, content-hashed
// bundles under assets/, and a few fixed files beside index.html (icons,
// licenses.txt). So:
//
//   - assets/<name>-<hash>.<ext> never changes under its name and is cached
//     for a year (immutable); an unknown asset is 404, never the page, so a
//     stale bundle name fails loudly instead of running HTML as script;
//   - the fixed files are revalidated on every use (ETag, no-cache);
//   - every other GET is a client-side route: it gets index.html, whose
//     links to the current bundles are revalidated the same way.
//
// The caller decides which paths reach the handler (the API's own paths
// stay with the API) and sets the security headers; the handler sets only
// Content-Type, Cache-Control and ETag.
package spa

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/govkit/govkit/internal/httperr"
)

type file struct {
	body        []byte
	contentType string
	etag        string
	immutable   bool
}

// Handler serves dist. It reads every file once, at construction; it
// fails when dist has no index.html.
type Handler struct {
	files map[string]*file // by path without the leading slash
}

// contentTypes are the types of what a build holds; anything else is
// served as bytes.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".ico":  "image/x-icon",
	".png":  "image/png",
	".txt":  "text/plain; charset=utf-8",
	".json": "application/json",
	".map":  "application/json",
}

// New reads dist (a build's output directory, as embedded).
func New(dist fs.FS) (*Handler, error) {
	h := &Handler{files: map[string]*file{}}
	err := fs.WalkDir(dist, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(dist, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			ct = "application/octet-stream"
		}
		h.files[p] = &file{
			body: b, contentType: ct,
			etag:      `"` + hex.EncodeToString(sum[:16]) + `"`,
			immutable: strings.HasPrefix(p, "assets/"),
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h.files["index.html"] == nil {
		return nil, fs.ErrNotExist
	}
	return h, nil
}

// ServeHTTP answers GET and HEAD; the route it is mounted on decides the
// methods.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	f := h.files[name]
	if f == nil {
		if strings.HasPrefix(name, "assets/") {
			httperr.Write(w, http.StatusNotFound, "Cannot GET "+r.URL.Path)
			return
		}
		f = h.files["index.html"]
	}
	hd := w.Header()
	hd.Set("Content-Type", f.contentType)
	hd.Set("ETag", f.etag)
	if f.immutable {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}
