package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/filestore"
	"github.com/govkit/govkit/internal/httperr"
)

// OutageRetryAfter is the Retry-After of a 503 for a part's outage: the
// database's watcher asks every second, so a few seconds is when trying
// again can first meet a different answer.
const OutageRetryAfter = 5

// Part is a dependency /api/health reports (Options.Parts).
type Part struct {
	// Name is the field /api/health reports it under.
	Name string
	// Check reports whether it answers now; /api/health gives it a few
	// seconds.
	Check func(ctx context.Context) error
}

// down is Options.Unavailable's verdict for r: API requests (but the
// health check and CORS preflights) wait for no part that is known to be
// down.
func (s *Server) down(r *http.Request) error {
	if s.o.Unavailable == nil || r.Method == http.MethodOptions || !strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api/health" {
		return nil
	}
	return s.o.Unavailable()
}

// outage answers 503 with Retry-After, naming the part that failed: never
// a 401 or 403, which would sign the caller out or refuse what they may
// do, and never a bare 500.
func (s *Server) outage(w http.ResponseWriter, _ *http.Request, err error) {
	part := outagePart(err)
	if part == "" {
		part = "database"
	}
	w.Header().Set("Retry-After", strconv.Itoa(OutageRetryAfter))
	httperr.Write(w, http.StatusServiceUnavailable, "The "+part+" is unavailable; try again in a few seconds")
}

// outagePart names the part whose failure err is, or is "" when err is
// not an outage.
func outagePart(err error) string {
	var ue *docplatform.UnavailableError
	switch {
	case errors.As(err, &ue):
		return ue.Part
	case errors.Is(err, filestore.ErrStorage):
		return "document storage"
	}
	return ""
}
