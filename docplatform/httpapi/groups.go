package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

type groupView struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	CreatedBy   string     `json:"createdBy"`
	CreatedAt   time.Time  `json:"createdAt"`
	DeletedAt   *time.Time `json:"deletedAt,omitempty"`
	Role        string     `json:"role,omitempty"`
}

func viewGroup(g docplatform.Group, role docplatform.Role) groupView {
	return groupView{g.ID, g.Name, g.Description, g.CreatedBy, g.CreatedAt.UTC(), g.DeletedAt, string(role)}
}

type groupBodyFields struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
}

// groupFields validates a group body: name 1-100 characters after
// trimming, description at most 1000.
func groupFields(w http.ResponseWriter, b groupBodyFields, create bool) bool {
	if b.Name != nil {
		*b.Name = strings.TrimSpace(*b.Name)
	}
	switch {
	case create && b.Name == nil:
		httperr.Write(w, http.StatusBadRequest, "name is required")
	case b.Name != nil && (*b.Name == "" || len([]rune(*b.Name)) > 100):
		httperr.Write(w, http.StatusBadRequest, "name must be 1 to 100 characters")
	case b.Description != nil && len([]rune(*b.Description)) > 1000:
		httperr.Write(w, http.StatusBadRequest, "description must be at most 1000 characters")
	default:
		return true
	}
	return false
}

// listMyGroups: GET /api/groups → the caller's live groups with roles.
func (s *Server) listMyGroups(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	id := IdentityFrom(r.Context())
	grs, err := rs.UserGroups(r.Context(), id.UserID)
	if err != nil {
		s.internalError(w, r, "list my groups", err)
		return
	}
	out := make([]groupView, 0, len(grs))
	for _, gr := range grs {
		out = append(out, viewGroup(gr.Group, gr.Role))
	}
	writeJSON(w, http.StatusOK, map[string]any{"groups": out})
}

// listAllGroups: GET /api/admin/groups → every live group (system admin).
func (s *Server) listAllGroups(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	gs, err := rs.ListGroups(r.Context())
	if err != nil {
		s.internalError(w, r, "list groups", err)
		return
	}
	out := make([]groupView, 0, len(gs))
	for _, g := range gs {
		out = append(out, viewGroup(g, ""))
	}
	writeJSON(w, http.StatusOK, map[string]any{"groups": out})
}

// createGroup: POST /api/groups {"name", "description"} → 201 (system
// admin). A name a live group has, ignoring case: 409.
func (s *Server) createGroup(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	var b groupBodyFields
	if !decodeBody(w, r, &b) || !groupFields(w, b, true) {
		return
	}
	desc := ""
	if b.Description != nil {
		desc = *b.Description
	}
	id := IdentityFrom(r.Context())
	g, err := rs.CreateGroup(r.Context(), *b.Name, desc, id.UserID)
	if errors.Is(err, docplatform.ErrConflict) {
		httperr.Write(w, http.StatusConflict, "A group with this name exists")
		return
	}
	if err != nil {
		s.storeErr(w, r, "create group", err)
		return
	}
	s.audit(r, docplatform.AuditGroupCreated, docplatform.OutcomeSuccess, id.UserID, g.ID, "")
	writeJSON(w, http.StatusCreated, viewGroup(g, ""))
}

// liveGroup loads a group and answers 404 for an unknown or soft-deleted
// one (a soft-deleted group is gone for everyone, system admins included;
// its former members already get 403 from the chain, their identity
// holding live groups only), 400 for an id that is not a UUID.
func (s *Server) liveGroup(w http.ResponseWriter, r *http.Request, rs ResourceStore, gid string) (docplatform.Group, bool) {
	if !validID(w, "groupId", gid) {
		return docplatform.Group{}, false
	}
	g, err := rs.Group(r.Context(), gid)
	if errors.Is(err, docplatform.ErrNotFound) || (err == nil && g.DeletedAt != nil) {
		httperr.Write(w, http.StatusNotFound, "Group not found")
		return g, false
	}
	if err != nil {
		s.internalError(w, r, "load group", err)
		return g, false
	}
	return g, true
}

// getGroup: GET /api/groups/{groupId} (members).
func (s *Server) getGroup(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	g, ok := s.liveGroup(w, r, rs, r.PathValue("groupId"))
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, viewGroup(g, IdentityFrom(r.Context()).GroupRoles[g.ID]))
}

// updateGroup: PUT /api/groups/{groupId} {"name"?, "description"?} (group
// ADMIN): the group's settings. Fields left out keep their value.
func (s *Server) updateGroup(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	var b groupBodyFields
	if !decodeBody(w, r, &b) || !groupFields(w, b, false) {
		return
	}
	g, ok := s.liveGroup(w, r, rs, r.PathValue("groupId"))
	if !ok {
		return
	}
	if b.Name != nil {
		g.Name = *b.Name
	}
	if b.Description != nil {
		g.Description = *b.Description
	}
	if err := rs.UpdateGroup(r.Context(), g); errors.Is(err, docplatform.ErrConflict) {
		httperr.Write(w, http.StatusConflict, "A group with this name exists")
		return
	} else if err != nil {
		s.storeErr(w, r, "group", err)
		return
	}
	id := IdentityFrom(r.Context())
	s.audit(r, docplatform.AuditGroupUpdated, docplatform.OutcomeSuccess, id.UserID, g.ID, "")
	writeJSON(w, http.StatusOK, viewGroup(g, id.GroupRoles[g.ID]))
}

// deleteGroup: DELETE /api/groups/{groupId} → 204 (system admin). The
// group is soft-deleted: its rows stay, and it grants nothing from now on.
func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	gid := r.PathValue("groupId")
	if !validID(w, "groupId", gid) {
		return
	}
	if err := rs.SoftDeleteGroup(r.Context(), gid); err != nil {
		s.storeErr(w, r, "Group", err)
		return
	}
	s.audit(r, docplatform.AuditGroupDeleted, docplatform.OutcomeSuccess, IdentityFrom(r.Context()).UserID, gid, "")
	w.WriteHeader(http.StatusNoContent)
}
