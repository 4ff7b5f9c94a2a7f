package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

type ocrView struct {
	DocumentID string          `json:"documentId"`
	GroupID    string          `json:"groupId"`
	Engine     string          `json:"engine"`
	Result     json.RawMessage `json:"result"`
	WrittenBy  string          `json:"writtenBy"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
}

func viewOCR(o docplatform.OCRResult) ocrView {
	return ocrView{o.DocumentID, o.GroupID, o.Engine, o.Result, o.WrittenBy, o.CreatedAt.UTC(), o.UpdatedAt.UTC()}
}

// putOCR: PUT /api/documents/{id}/ocr {"engine"?, "result": {…}} → 201
// the first time, 200 when replacing. Only a machine client writes OCR
// results: the request must come with the document's group's API key
// (people get 403, another group's key 403).
func (s *Server) putOCR(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	id := IdentityFrom(r.Context())
	if !id.ViaAPIKey() {
		httperr.Write(w, http.StatusForbidden, "OCR results are written with the group's API key")
		return
	}
	d, ok := s.document(w, r, rs, "")
	if !ok {
		return
	}
	var b struct {
		Engine string          `json:"engine"`
		Result json.RawMessage `json:"result"`
	}
	if !decodeBody(w, r, &b) {
		return
	}
	if t := strings.TrimSpace(string(b.Result)); t == "" || t[0] != '{' {
		httperr.Write(w, http.StatusBadRequest, "result must be a JSON object")
		return
	}
	if len(b.Engine) > 100 {
		httperr.Write(w, http.StatusBadRequest, "engine must be at most 100 characters")
		return
	}
	o, created, err := rs.PutOCRResult(r.Context(), docplatform.OCRResult{DocumentID: d.ID, Engine: b.Engine, Result: b.Result, WrittenBy: actor(id)})
	if err != nil {
		s.storeErr(w, r, "Document", err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, viewOCR(o))
}

// getOCR: GET /api/documents/{id}/ocr (members, or the group's key).
func (s *Server) getOCR(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	d, ok := s.document(w, r, rs, "")
	if !ok {
		return
	}
	o, err := rs.OCRResult(r.Context(), d.ID)
	if errors.Is(err, docplatform.ErrNotFound) {
		httperr.Write(w, http.StatusNotFound, "The document has no OCR result yet")
		return
	}
	if err != nil {
		s.internalError(w, r, "OCR result", err)
		return
	}
	writeJSON(w, http.StatusOK, viewOCR(o))
}
