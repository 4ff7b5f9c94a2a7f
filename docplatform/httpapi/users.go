package httpapi

import (
	"net/http"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

type userView struct {
	ID                string    `json:"id"`
	Email             string    `json:"email"`
	Name              string    `json:"name"`
	PreferredUsername string    `json:"preferred_username"`
	IsSystemAdmin     bool      `json:"isSystemAdmin"`
	CreatedAt         time.Time `json:"createdAt"`
}

// listUsers: GET /api/admin/users (system admin).
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	us, err := rs.ListUsers(r.Context())
	if err != nil {
		s.internalError(w, r, "list users", err)
		return
	}
	out := make([]userView, len(us))
	for i, u := range us {
		out[i] = userView{u.ID, u.Email, u.Name, u.PreferredUsername, u.IsSystemAdmin, u.CreatedAt.UTC()}
	}
	writeJSON(w, http.StatusOK, map[string]any{"users": out})
}

func (s *Server) promoteUser(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	s.setAdmin(w, r, rs, true)
}

func (s *Server) demoteUser(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	s.setAdmin(w, r, rs, false)
}

// setAdmin: POST /api/admin/users/{id}/promote|demote (system admin). A
// system admin cannot demote themselves: the platform must never be left
// without one by a slip (another admin, or grant-admin, can).
func (s *Server) setAdmin(w http.ResponseWriter, r *http.Request, rs ResourceStore, admin bool) {
	uid := r.PathValue("id")
	me := IdentityFrom(r.Context())
	if !admin && uid == me.UserID {
		httperr.Write(w, http.StatusConflict, "System admins cannot demote themselves")
		return
	}
	if err := rs.SetSystemAdmin(r.Context(), uid, admin); err != nil {
		s.storeErr(w, r, "User", err)
		return
	}
	action := docplatform.AuditAdminRevoked
	if admin {
		action = docplatform.AuditAdminGranted
	}
	s.audit(r, action, docplatform.OutcomeSuccess, me.UserID, "", uid)
	writeJSON(w, http.StatusOK, map[string]any{"id": uid, "isSystemAdmin": admin})
}

// deleteUser: DELETE /api/admin/users/{id} → 204 (system admin): the user
// and their memberships go; what they uploaded stays with its group. A
// system admin cannot delete themselves.
func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	uid := r.PathValue("id")
	me := IdentityFrom(r.Context())
	if uid == me.UserID {
		httperr.Write(w, http.StatusConflict, "System admins cannot delete themselves")
		return
	}
	if err := rs.DeleteUser(r.Context(), uid); err != nil {
		s.storeErr(w, r, "User", err)
		return
	}
	s.audit(r, docplatform.AuditUserDeleted, docplatform.OutcomeSuccess, me.UserID, "", uid)
	w.WriteHeader(http.StatusNoContent)
}
