package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/filestore"
	"github.com/govkit/govkit/docplatform/upload"
	"github.com/govkit/govkit/internal/httperr"
)

type documentView struct {
	ID          string    `json:"id"`
	GroupID     string    `json:"groupId"`
	FileName    string    `json:"fileName"`
	ContentType string    `json:"contentType"`
	Size        int64     `json:"size"`
	SHA256      string    `json:"sha256"`
	UploadedBy  string    `json:"uploadedBy"`
	CreatedAt   time.Time `json:"createdAt"`
	HasOCR      bool      `json:"hasOcr"`
}

func viewDocument(d docplatform.Document) documentView {
	return documentView{d.ID, d.GroupID, d.FileName, d.ContentType, d.Size, d.SHA256, d.UploadedBy, d.CreatedAt.UTC(), d.HasOCR}
}

// maxFileName bounds a stored file name in bytes (common file systems'
// limit, and what Content-Disposition will carry back).
const maxFileName = 255

// SanitizeFileName turns a client's file name into one safe to store and
// send back: only the last path element (either slash), no control or
// format characters, no leading dots, spaces trimmed, at most 255 bytes
// cut at a character boundary; empty becomes "document".
func SanitizeFileName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base(name)
	name = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimLeftFunc(name, func(r rune) bool { return r == '.' || unicode.IsSpace(r) })
	for len(name) > maxFileName {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	name = strings.TrimRightFunc(name, unicode.IsSpace)
	if name == "" || name == "/" {
		return "document"
	}
	return name
}

// uploadDocument: POST /api/documents?groupId= with a multipart body whose
// one part "file" is the document (a member's token or the group's API
// key); other parts are ignored, a second "file" part is 400. A "file"
// part without a filename is taken as a file named "document" (curl's
// -F 'file=<x' sends one so).
// The group id is a query parameter because the body is not JSON. The
// part is streamed to a staged file (never held in memory), its type is
// sniffed from its bytes, and only when the row is recorded is the file
// committed; any failure leaves neither row nor file. Larger than
// MaxUpload: 413.
func (s *Server) uploadDocument(w http.ResponseWriter, r *http.Request, rs ResourceStore, res Resources) {
	ctx := r.Context()
	if res.Files == nil || res.Uploads == nil {
		httperr.Write(w, http.StatusServiceUnavailable, "Document storage is not configured")
		return
	}
	gid := r.URL.Query().Get("groupId")
	if _, ok := s.liveGroup(w, r, rs, gid); !ok {
		return
	}
	mr, err := r.MultipartReader()
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, "The body must be multipart/form-data with a part named file")
		return
	}
	var up *upload.Upload
	var name string
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			// Whatever NextPart fails on came from the client: a broken or
			// cut-short body, or one over the body limit.
			var mbe *http.MaxBytesError
			s.metrics.upload("refused", 0)
			if errors.As(err, &mbe) {
				httperr.Write(w, http.StatusRequestEntityTooLarge, "The document exceeds the size limit")
			} else {
				httperr.Write(w, http.StatusBadRequest, "Malformed multipart body")
			}
			return
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		if up != nil {
			// Taking the first and dropping the rest would store a
			// document the client may not have meant; say so instead.
			part.Close()
			httperr.Write(w, http.StatusBadRequest, "The multipart body must carry exactly one part named file")
			return
		}
		name = SanitizeFileName(part.FileName())
		up, err = res.Uploads.Receive(ctx, part, res.MaxUpload)
		part.Close()
		if err != nil {
			s.uploadFailed(w, r, err)
			return
		}
		defer up.Abandon()
	}
	if up == nil {
		httperr.Write(w, http.StatusBadRequest, "The multipart body has no part named file")
		return
	}
	// Keeping it runs to its end even if the client has gone: a step cut
	// short would leave the upload to the sweeper.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	d, err := up.Keep(kctx, docplatform.Document{GroupID: gid, FileName: name, UploadedBy: actor(IdentityFrom(ctx))})
	if err != nil {
		// The group deleted meanwhile (404), or the store or the database
		// failing.
		s.metrics.upload("failed", 0)
		s.storeErr(w, r, "Group", err)
		return
	}
	s.metrics.upload("stored", d.Size)
	s.audit(r, docplatform.AuditDocumentUploaded, docplatform.OutcomeSuccess, d.UploadedBy, gid, docDetail(d))
	writeJSON(w, http.StatusCreated, viewDocument(d))
}

// commitTimeout bounds keeping a received upload: recording its row,
// completing its bytes (an object store's CompleteMultipartUpload can
// take a while for a large file) and committing the row.
const commitTimeout = time.Minute

func (s *Server) uploadFailed(w http.ResponseWriter, r *http.Request, err error) {
	var mbe *http.MaxBytesError
	outcome := "refused"
	if errors.Is(err, filestore.ErrStorage) {
		outcome = "failed"
	}
	s.metrics.upload(outcome, 0)
	switch {
	case errors.Is(err, filestore.ErrTooLarge), errors.As(err, &mbe):
		httperr.Write(w, http.StatusRequestEntityTooLarge, "The document exceeds the size limit")
	case errors.Is(err, filestore.ErrEmpty):
		httperr.Write(w, http.StatusBadRequest, "The document is empty")
	case errors.Is(err, filestore.ErrStorage):
		// The disk or the object store failed, not the client's body.
		s.internalError(w, r, "upload", err)
	default:
		httperr.Write(w, http.StatusBadRequest, "Malformed multipart body")
	}
}

// encodeCursor and decodeCursor make the listing's opaque page cursor.
func encodeCursor(d docplatform.Document) string {
	return base64.RawURLEncoding.EncodeToString([]byte(d.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + d.ID))
}

func decodeCursor(s string) (*docplatform.DocumentCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, false
	}
	ts, id, ok := strings.Cut(string(b), "|")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if !ok || err != nil || !isUUID(id) || t.Year() < 1 {
		return nil, false
	}
	return &docplatform.DocumentCursor{CreatedAt: t, ID: id}, true
}

// listDocuments: GET /api/documents, newest first, restricted to the
// caller's groups (an API key: its group; a system admin: every group).
// Filters: groupId (403 outside the caller's groups), contentType, q
// (file name contains, ignoring case), createdAfter / createdBefore (RFC
// 3339), hasOcr and reviewed (true|false; hasOcr=true&reviewed=false is
// the review queue: OCR done, no completed review). Paging: limit (1-200, default 50) and
// cursor (nextCursor of the previous page; null on the last page).
func (s *Server) listDocuments(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	id := IdentityFrom(r.Context())
	q := r.URL.Query()
	var f docplatform.DocumentFilter
	f.GroupIDs, f.AllGroups = id.GroupIDs()
	f.AllGroups = !f.AllGroups
	if gid := q.Get("groupId"); gid != "" {
		if !s.allowGroupFilter(w, r, rs, gid, "") {
			return
		}
		f.GroupID = gid
	}
	f.ContentType = q.Get("contentType")
	f.NameContains = q.Get("q")
	var ok bool
	if f.CreatedAfter, f.CreatedBefore, ok = timeRange(w, r, "createdAfter", "createdBefore"); !ok {
		return
	}
	for _, p := range []struct {
		name string
		dst  **bool
	}{{"hasOcr", &f.HasOCR}, {"reviewed", &f.Reviewed}} {
		if v := q.Get(p.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				httperr.Write(w, http.StatusBadRequest, p.name+" must be true or false")
				return
			}
			*p.dst = &b
		}
	}
	limit, ok := intParam(w, r, "limit", 50, 1, 200)
	if !ok {
		return
	}
	f.Limit = limit + 1
	if v := q.Get("cursor"); v != "" {
		c, ok := decodeCursor(v)
		if !ok {
			httperr.Write(w, http.StatusBadRequest, "cursor is not one this server gave out")
			return
		}
		f.After = c
	}
	docs, err := rs.ListDocuments(r.Context(), f)
	if err != nil {
		s.internalError(w, r, "list documents", err)
		return
	}
	var next *string
	if len(docs) > limit {
		docs = docs[:limit]
		c := encodeCursor(docs[limit-1])
		next = &c
	}
	out := make([]documentView, len(docs))
	for i, d := range docs {
		out[i] = viewDocument(d)
	}
	// A struct, not a map: no map to build and no keys to sort per page.
	writeJSON(w, http.StatusOK, struct {
		Documents  []documentView `json:"documents"`
		NextCursor *string        `json:"nextCursor"`
	}{out, next})
}

// document loads the document named by the path and applies the group
// check; unknown: 404.
func (s *Server) document(w http.ResponseWriter, r *http.Request, rs ResourceStore, minRole docplatform.Role) (docplatform.Document, bool) {
	if !validID(w, "id", r.PathValue("id")) {
		return docplatform.Document{}, false
	}
	d, err := rs.Document(r.Context(), r.PathValue("id"))
	if errors.Is(err, docplatform.ErrNotFound) {
		httperr.Write(w, http.StatusNotFound, "Document not found")
		return d, false
	}
	if err != nil {
		s.internalError(w, r, "load document", err)
		return d, false
	}
	return d, s.allow(w, r, d.GroupID, minRole)
}

// getDocument: GET /api/documents/{id} → metadata.
func (s *Server) getDocument(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	if d, ok := s.document(w, r, rs, ""); ok {
		writeJSON(w, http.StatusOK, viewDocument(d))
	}
}

// activeTypes could run in a browser that ignored the attachment
// disposition; they are served as opaque bytes.
func safeContentType(ct string) string {
	mt, _, _ := mime.ParseMediaType(ct)
	switch mt {
	case "text/html", "text/xml", "application/xml", "image/svg+xml", "application/xhtml+xml", "text/javascript", "application/javascript", "":
		return "application/octet-stream"
	}
	return ct
}

// ContentDisposition is an RFC 6266 attachment header for name: an ASCII
// fallback in filename (quotes, backslashes and non-ASCII replaced) and
// the exact name in filename* (RFC 8187, UTF-8, percent-encoded).
func ContentDisposition(name string) string {
	fallback := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, name)
	var enc strings.Builder
	for _, b := range []byte(name) {
		if isAttrChar(b) {
			enc.WriteByte(b)
		} else {
			enc.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(b)>>4, 16)+strconv.FormatUint(uint64(b)&15, 16)))
		}
	}
	return `attachment; filename="` + fallback + `"; filename*=UTF-8''` + enc.String()
}

// isAttrChar is RFC 8187's attr-char.
func isAttrChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", b) >= 0
}

// downloadDocument: GET /api/documents/{id}/content → the bytes as an
// attachment, never rendered inline (nosniff, a sandboxing CSP, active
// types sent as application/octet-stream). Ranges and conditional
// requests are served by http.ServeContent.
func (s *Server) downloadDocument(w http.ResponseWriter, r *http.Request, rs ResourceStore, res Resources) {
	if res.Files == nil {
		httperr.Write(w, http.StatusServiceUnavailable, "Document storage is not configured")
		return
	}
	d, ok := s.document(w, r, rs, "")
	if !ok {
		return
	}
	f, err := res.Files.Open(r.Context(), d.StorageKey, d.Size)
	if errors.Is(err, filestore.ErrNotFound) {
		s.o.Logger.ErrorContext(r.Context(), "document row without its file", slog.String("document", d.ID))
		httperr.Write(w, http.StatusNotFound, "Document content not found")
		return
	}
	if err != nil {
		s.internalError(w, r, "open document", err)
		return
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", safeContentType(d.ContentType))
	h.Set("Content-Disposition", ContentDisposition(d.FileName))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-store")
	h.Set("ETag", `"`+d.SHA256+`"`)
	// One entry per download: a range request of a download already
	// under way, or a cache's revalidation, reads nothing new.
	if r.Header.Get("Range") == "" && r.Header.Get("If-None-Match") == "" {
		s.audit(r, docplatform.AuditDocumentDownloaded, docplatform.OutcomeSuccess, actor(IdentityFrom(r.Context())), d.GroupID, docDetail(d))
	}
	http.ServeContent(w, r, "", d.CreatedAt, f)
}

// docDetail names a document in an audit entry: its file name, then its
// id, which stays unique when names repeat.
func docDetail(d docplatform.Document) string {
	return d.FileName + " (" + d.ID + ")"
}

// deleteDocument: DELETE /api/documents/{id} → 204 (a member or the
// group's API key). The row leaves the listing first and its bytes go
// after (upload.Manager.Delete); bytes a failed removal leaves are
// removed by the sweeper.
func (s *Server) deleteDocument(w http.ResponseWriter, r *http.Request, rs ResourceStore, res Resources) {
	d, ok := s.document(w, r, rs, "")
	if !ok {
		return
	}
	if res.Uploads == nil {
		httperr.Write(w, http.StatusServiceUnavailable, "Document storage is not configured")
		return
	}
	if err := res.Uploads.Delete(r.Context(), d); err != nil {
		s.storeErr(w, r, "Document", err)
		return
	}
	s.audit(r, docplatform.AuditDocumentDeleted, docplatform.OutcomeSuccess, actor(IdentityFrom(r.Context())), d.GroupID, docDetail(d))
	w.WriteHeader(http.StatusNoContent)
}
