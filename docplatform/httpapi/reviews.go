package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

type reviewView struct {
	ID          string           `json:"id"`
	DocumentID  string           `json:"documentId"`
	GroupID     string           `json:"groupId"`
	ReviewerID  string           `json:"reviewerId"`
	Status      string           `json:"status"`
	CreatedAt   time.Time        `json:"createdAt"`
	ExpiresAt   time.Time        `json:"expiresAt"`
	EndedAt     *time.Time       `json:"endedAt,omitempty"`
	Corrections []correctionView `json:"corrections,omitempty"`
}

type correctionView struct {
	ID            string    `json:"id"`
	Field         string    `json:"field"`
	OriginalValue string    `json:"originalValue"`
	Value         string    `json:"value"`
	CreatedAt     time.Time `json:"createdAt"`
}

func viewReview(s docplatform.ReviewSession, cs []docplatform.Correction) reviewView {
	v := reviewView{s.ID, s.DocumentID, s.GroupID, s.ReviewerID, string(s.Status), s.CreatedAt.UTC(), s.ExpiresAt.UTC(), s.EndedAt, nil}
	for _, c := range cs {
		v.Corrections = append(v.Corrections, correctionView{c.ID, c.Field, c.OriginalValue, c.Value, c.CreatedAt.UTC()})
	}
	return v
}

// startReview: POST /api/documents/{id}/reviews → 201 with a new session
// (the document's exclusive lock for ReviewLock), or 200 with the caller's
// own active session, its lock renewed. Another reviewer's unexpired lock:
// 409; an expired one is taken over. People review: API keys get 403 at
// the chain.
func (s *Server) startReview(w http.ResponseWriter, r *http.Request, rs ResourceStore, res Resources) {
	d, ok := s.document(w, r, rs, "")
	if !ok {
		return
	}
	id := IdentityFrom(r.Context())
	sess, created, err := rs.StartReview(r.Context(), d.ID, id.UserID, res.ReviewLock)
	if errors.Is(err, docplatform.ErrLocked) {
		httperr.Write(w, http.StatusConflict, "The document is being reviewed by someone else")
		return
	}
	if err != nil {
		s.storeErr(w, r, "Document", err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		s.audit(r, docplatform.AuditReviewStarted, docplatform.OutcomeSuccess, id.UserID, d.GroupID, docDetail(d))
	}
	writeJSON(w, status, viewReview(sess, nil))
}

// listDocumentReviews: GET /api/documents/{id}/reviews, newest first.
func (s *Server) listDocumentReviews(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	d, ok := s.document(w, r, rs, "")
	if !ok {
		return
	}
	list, err := rs.DocumentReviews(r.Context(), d.ID)
	if err != nil {
		s.internalError(w, r, "document reviews", err)
		return
	}
	out := make([]reviewView, len(list))
	for i, x := range list {
		out[i] = viewReview(x, nil)
	}
	writeJSON(w, http.StatusOK, map[string]any{"reviews": out})
}

// review loads the session named by the path and applies the group check
// on its document's group.
func (s *Server) review(w http.ResponseWriter, r *http.Request, rs ResourceStore) (docplatform.ReviewSession, bool) {
	if !validID(w, "sessionId", r.PathValue("sessionId")) {
		return docplatform.ReviewSession{}, false
	}
	sess, err := rs.ReviewSession(r.Context(), r.PathValue("sessionId"))
	if errors.Is(err, docplatform.ErrNotFound) {
		httperr.Write(w, http.StatusNotFound, "Review session not found")
		return sess, false
	}
	if err != nil {
		s.internalError(w, r, "load review", err)
		return sess, false
	}
	return sess, s.allow(w, r, sess.GroupID, "")
}

// getReview: GET /api/reviews/{sessionId} → the session with its
// corrections (members of the document's group).
func (s *Server) getReview(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	sess, ok := s.review(w, r, rs)
	if !ok {
		return
	}
	cs, err := rs.Corrections(r.Context(), sess.ID)
	if err != nil {
		s.internalError(w, r, "corrections", err)
		return
	}
	writeJSON(w, http.StatusOK, viewReview(sess, cs))
}

// ownReview loads a session the caller may act on: it must be theirs
// (403 otherwise, even for a system admin: a lock belongs to a person).
func (s *Server) ownReview(w http.ResponseWriter, r *http.Request, rs ResourceStore) (docplatform.ReviewSession, bool) {
	sess, ok := s.review(w, r, rs)
	if !ok {
		return sess, false
	}
	if sess.ReviewerID != IdentityFrom(r.Context()).UserID {
		httperr.Write(w, http.StatusForbidden, "Only the session's reviewer can act on it")
		return sess, false
	}
	return sess, true
}

// addCorrections: POST /api/reviews/{sessionId}/corrections
// {"corrections": [{"field", "originalValue"?, "value"}]} → 201 (the
// session's reviewer, while the lock holds; the lock is renewed). A
// session that ended or whose lock lapsed: 409.
func (s *Server) addCorrections(w http.ResponseWriter, r *http.Request, rs ResourceStore, res Resources) {
	sess, ok := s.ownReview(w, r, rs)
	if !ok {
		return
	}
	var b struct {
		Corrections []struct {
			Field         string `json:"field"`
			OriginalValue string `json:"originalValue"`
			Value         string `json:"value"`
		} `json:"corrections"`
	}
	if !decodeBody(w, r, &b) {
		return
	}
	if len(b.Corrections) == 0 || len(b.Corrections) > 500 {
		httperr.Write(w, http.StatusBadRequest, "corrections must hold 1 to 500 entries")
		return
	}
	cs := make([]docplatform.Correction, len(b.Corrections))
	for i, c := range b.Corrections {
		if strings.TrimSpace(c.Field) == "" || len(c.Field) > 200 {
			httperr.Write(w, http.StatusBadRequest, "corrections["+strconv.Itoa(i)+"].field must be 1 to 200 characters")
			return
		}
		cs[i] = docplatform.Correction{Field: c.Field, OriginalValue: c.OriginalValue, Value: c.Value}
	}
	cs, err := rs.AddCorrections(r.Context(), sess.ID, sess.ReviewerID, res.ReviewLock, cs)
	if errors.Is(err, docplatform.ErrNotActive) {
		httperr.Write(w, http.StatusConflict, "The review session has ended or its lock has expired")
		return
	}
	if err != nil {
		s.storeErr(w, r, "Review session", err)
		return
	}
	out := make([]correctionView, len(cs))
	for i, c := range cs {
		out[i] = correctionView{c.ID, c.Field, c.OriginalValue, c.Value, c.CreatedAt.UTC()}
	}
	writeJSON(w, http.StatusCreated, map[string]any{"corrections": out})
}

func (s *Server) completeReview(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	s.endReview(w, r, rs, docplatform.ReviewCompleted)
}

func (s *Server) abandonReview(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	s.endReview(w, r, rs, docplatform.ReviewAbandoned)
}

// endReview: POST /api/reviews/{sessionId}/complete|abandon (the
// reviewer) releases the lock. Completing after the lock lapsed, or ending
// a session twice: 409.
func (s *Server) endReview(w http.ResponseWriter, r *http.Request, rs ResourceStore, status docplatform.ReviewStatus) {
	sess, ok := s.ownReview(w, r, rs)
	if !ok {
		return
	}
	out, err := rs.EndReview(r.Context(), sess.ID, sess.ReviewerID, status)
	if errors.Is(err, docplatform.ErrNotActive) {
		httperr.Write(w, http.StatusConflict, "The review session has ended or its lock has expired")
		return
	}
	if err != nil {
		s.storeErr(w, r, "Review session", err)
		return
	}
	action := docplatform.AuditReviewCompleted
	if status == docplatform.ReviewAbandoned {
		action = docplatform.AuditReviewAbandoned
	}
	detail := "document " + sess.DocumentID
	if d, err := rs.Document(r.Context(), sess.DocumentID); err == nil {
		detail = docDetail(d)
	}
	s.audit(r, action, docplatform.OutcomeSuccess, sess.ReviewerID, sess.GroupID, detail)
	writeJSON(w, http.StatusOK, viewReview(out, nil))
}
