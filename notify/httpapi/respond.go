package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/govkit/govkit/internal/httperr"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/access"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/jmesfilter"
)

// StatusError is an error with the HTTP status and the message the caller
// sees. Domain packages may return their own errors with a StatusCode
// method; writeError honours both.
type StatusError struct {
	Status  int
	Message string // "" means the reason phrase
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return http.StatusText(e.Status)
	}
	return e.Message
}

// StatusCode returns the HTTP status.
func (e *StatusError) StatusCode() int { return e.Status }

// Errorf-free constructors for the common answers.
func httpError(status int, message string) error { return &StatusError{status, message} }

var (
	errNotFound = httpError(http.StatusNotFound, "")
	// errForbiddenResource is the guard's refusal, worded as NestJS's.
	errForbiddenResource = httpError(http.StatusForbidden, "Forbidden resource")
	errForbidden         = httpError(http.StatusForbidden, "")
	errInternal          = httpError(http.StatusInternalServerError, "")
)

type statusCoder interface{ StatusCode() int }

// writeError answers err. Errors that carry a status (StatusError,
// query.Error, …) are shown with their message; store errors map to 404
// (unknown id) and 400 (duplicate key, bad field); anything else is a 500
// whose details go to the log only.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := classify(err)
	if status >= 500 {
		slog.Default().ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	var ra retryAfter
	if errors.As(err, &ra) {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(ra.RetryAfter().Seconds())))))
	} else if status == http.StatusServiceUnavailable {
		// A part is down: a client should come back, and not at once.
		w.Header().Set("Retry-After", strconv.Itoa(outageRetryAfter))
	}
	httperr.Write(w, status, msg)
}

// outageRetryAfter is the Retry-After, in seconds, of a 503 for a part
// that is down.
const outageRetryAfter = 5

// retryAfter is a refusal that ends after a while (429).
type retryAfter interface{ RetryAfter() time.Duration }

func classify(err error) (int, string) {
	var sc statusCoder
	var fe *notify.FieldError
	var se *jmesfilter.SyntaxError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge, "request body too large"
	case errors.As(err, &sc):
		// errors that carry a status are made to be shown (their text names
		// the field or what failed, never internal detail)
		st := sc.StatusCode()
		var se *StatusError
		if errors.As(err, &se) {
			return st, se.Message
		}
		if ce, ok := sc.(error); ok {
			return st, ce.Error()
		}
		return st, err.Error()
	case errors.Is(err, notify.ErrNotFound):
		return http.StatusNotFound, ""
	case errors.Is(err, notify.ErrDuplicate):
		return http.StatusBadRequest, err.Error()
	case errors.As(err, &fe):
		return http.StatusBadRequest, fe.Error()
	case errors.Is(err, notify.ErrTimeFormat):
		return http.StatusBadRequest, err.Error()
	case errors.As(err, &se):
		return http.StatusBadRequest, se.Error()
	case errors.Is(err, dispatch.ErrQueueUnavailable):
		// The notification stays in state sending; the stale-broadcast
		// cron job sends it once the queue is back.
		return http.StatusServiceUnavailable, "the queue backend (queue.connection) is unavailable; the broadcast will be sent when it is back"
	case errors.Is(err, dispatch.ErrClosed):
		return http.StatusServiceUnavailable, "the service is shutting down"
	case errors.Is(err, notify.ErrUnavailable):
		// Never a 401 or 403 for it (nobody is refused or signed out for
		// the database's outage), nor a bare 500.
		return http.StatusServiceUnavailable, "the database (MongoDB, datasource uri) is unavailable; try again in a few seconds"
	}
	if msg, ok := rejectedWrite(err); ok {
		return http.StatusBadRequest, msg
	}
	if msg, ok := rejectedQuery(err); ok {
		return http.StatusBadRequest, msg
	}
	return http.StatusInternalServerError, ""
}

// badQueryCodes are the database's answers to a query that cannot run as
// written: BadValue (a $mod by 0, …), FailedToParse, TypeMismatch, and an
// invalid $regex pattern or options.
var badQueryCodes = map[int32]bool{2: true, 9: true, 14: true, 51091: true, 51108: true}

// rejectedQuery recognises a where or filter the database refused; the
// caller wrote it, so it is 400 with the database's reason, as the original
// answers any database error.
func rejectedQuery(err error) (string, bool) {
	var ce mongo.CommandError
	if !errors.As(err, &ce) || !badQueryCodes[ce.Code] {
		return "", false
	}
	return "the database refused the query: " + shorten(ce.Message), true
}

func shorten(msg string) string {
	if r := []rune(msg); len(r) > 200 {
		return string(r[:200]) + "…"
	}
	return msg
}

// rejectedWrite recognises a document the database refused to store (MongoDB:
// nesting over 100 levels, a key it forbids; the embedded store: an array
// directly inside an array, which FerretDB v1 cannot hold). That is the
// caller's input, and the original answers it 400 with the database's
// message, as we do; the message is cut short because the embedded store
// quotes the whole document in it.
func rejectedWrite(err error) (string, bool) {
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) == 0 {
		return "", false
	}
	return "the database refused the record: " + shorten(we.WriteErrors[0].Message), true
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		httperr.Write(w, http.StatusInternalServerError, "")
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeText answers a text/plain body, as the original's verify,
// unsubscribe and undo do.
func writeText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text)
}

// noContent answers 204.
func noContent(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

// readFields reads a JSON object body, keeping key order.
func readFields(r *http.Request) (notify.Fields, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, httpError(http.StatusBadRequest, "cannot read the request body")
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return notify.Fields{}, nil
	}
	if b[0] != '{' {
		return nil, httpError(http.StatusBadRequest, "the request body must be a JSON object")
	}
	// One pass, linear in the body and bounded in depth, on every route:
	// anonymous callers send bodies too.
	v, err := notify.DecodeJSONValue(b)
	switch {
	case errors.Is(err, notify.ErrTooDeep):
		return nil, httpError(http.StatusBadRequest, "the request body is nested too deeply: "+err.Error())
	case errors.Is(err, notify.ErrTooManyKeys):
		return nil, httpError(http.StatusBadRequest, "the request body has too many keys in one object: "+err.Error())
	case err != nil:
		return nil, httpError(http.StatusBadRequest, "the request body is not valid JSON: "+err.Error())
	}
	f, ok := v.(notify.Fields)
	if !ok {
		return nil, httpError(http.StatusBadRequest, "the request body must be a JSON object")
	}
	return f, nil
}

// caller returns who is calling.
func caller(r *http.Request) notify.UserProfile { return access.Caller(r.Context()) }

// isAdmin reports whether the caller is SuperAdmin or Admin.
func isAdmin(r *http.Request) bool { return access.IsAdmin(caller(r)) }

// toFields turns a record into its API form as an ordered document, for
// stripping or projecting fields. Records give it directly (their JSON form
// is their Fields); anything else goes through JSON.
func toFields(v any) (notify.Fields, error) {
	if r, ok := v.(interface{ Fields() notify.Fields }); ok {
		return r.Fields(), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var f notify.Fields
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	return f, nil
}
