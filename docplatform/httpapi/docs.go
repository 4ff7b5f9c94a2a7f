package httpapi

import (
	"bytes"
	"embed"
	"io"
	"net/http"
	"path"
	"time"

	"github.com/govkit/govkit/internal/httperr"
	"github.com/govkit/govkit/ui"
)

// docsFS holds the API documentation page: a small self-written renderer
// of /api/openapi.json, with no third-party origin and no inline script or
// style, so the platform's Content-Security-Policy applies to it unchanged.
// Its style sheet, docs.css, is the web UIs' own (package ui), so the page
// looks like the rest of the platform.
//
//go:embed docs
var docsFS embed.FS

// built is when the binary started; embedded files have no modification
// time of their own.
var built = time.Now()

var docsTypes = map[string]string{
	"index.html": "text/html; charset=utf-8",
	"docs.js":    "text/javascript; charset=utf-8",
	"docs.css":   "text/css; charset=utf-8",
}

// docsPage: GET /api/docs.
func (s *Server) docsPage(w http.ResponseWriter, r *http.Request) { s.serveDoc(w, r, "index.html") }

// docsAsset: GET /api/docs/{file} (the page's script and style sheet).
func (s *Server) docsAsset(w http.ResponseWriter, r *http.Request) {
	s.serveDoc(w, r, path.Base(r.PathValue("file")))
}

func (s *Server) serveDoc(w http.ResponseWriter, r *http.Request, name string) {
	ct, ok := docsTypes[name]
	if !ok {
		httperr.Write(w, http.StatusNotFound, "Cannot GET "+r.URL.Path)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	if name == "docs.css" {
		http.ServeContent(w, r, name, built, bytes.NewReader(ui.Stylesheet))
		return
	}
	f, err := docsFS.Open("docs/" + name)
	if err != nil {
		s.internalError(w, r, "docs asset", err)
		return
	}
	defer f.Close()
	http.ServeContent(w, r, name, built, f.(io.ReadSeeker))
}
