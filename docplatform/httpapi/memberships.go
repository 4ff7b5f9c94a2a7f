package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

type memberView struct {
	UserID            string    `json:"userId"`
	Email             string    `json:"email"`
	Name              string    `json:"name"`
	PreferredUsername string    `json:"preferred_username"`
	Role              string    `json:"role"`
	Since             time.Time `json:"since"`
}

type requestView struct {
	ID        string     `json:"id"`
	UserID    string     `json:"userId"`
	GroupID   string     `json:"groupId"`
	Message   string     `json:"message"`
	Status    string     `json:"status"`
	CreatedAt time.Time  `json:"createdAt"`
	DecidedBy string     `json:"decidedBy,omitempty"`
	DecidedAt *time.Time `json:"decidedAt,omitempty"`
}

func viewRequest(m docplatform.MembershipRequest) requestView {
	return requestView{m.ID, m.UserID, m.GroupID, m.Message, string(m.Status), m.CreatedAt.UTC(), m.DecidedBy, m.DecidedAt}
}

// listMembers: GET /api/groups/{groupId}/members (members), with each
// member's profile.
func (s *Server) listMembers(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	ctx := r.Context()
	g, ok := s.liveGroup(w, r, rs, r.PathValue("groupId"))
	if !ok {
		return
	}
	ms, err := rs.Memberships(ctx, g.ID)
	if err != nil {
		s.internalError(w, r, "list members", err)
		return
	}
	out := make([]memberView, 0, len(ms))
	for _, m := range ms {
		u, err := rs.User(ctx, m.UserID)
		if err != nil && !errors.Is(err, docplatform.ErrNotFound) {
			s.internalError(w, r, "list members: user", err)
			return
		}
		out = append(out, memberView{m.UserID, u.Email, u.Name, u.PreferredUsername, string(m.Role), m.CreatedAt.UTC()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": out})
}

// setMemberRole: PUT /api/groups/{groupId}/members/{userId} {"role"}
// (group ADMIN): sets a user's role in the group, adding the user when not
// yet a member (how a system admin gives a new group its first ADMIN, and
// how an admin adds someone without waiting for a request). An unknown
// user: 404; demoting the last ADMIN: 409, checked in the same transaction
// as the change (two admins demoting each other at once: one wins).
func (s *Server) setMemberRole(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	var b struct {
		Role string `json:"role"`
	}
	if !decodeBody(w, r, &b) {
		return
	}
	role := docplatform.Role(b.Role)
	if !role.Valid() {
		httperr.Write(w, http.StatusBadRequest, "role must be MEMBER or ADMIN")
		return
	}
	ctx := r.Context()
	gid, uid := r.PathValue("groupId"), r.PathValue("userId")
	if _, ok := s.liveGroup(w, r, rs, gid); !ok {
		return
	}
	if _, err := rs.User(ctx, uid); errors.Is(err, docplatform.ErrNotFound) {
		httperr.Write(w, http.StatusNotFound, "User not found")
		return
	} else if err != nil {
		s.internalError(w, r, "load user", err)
		return
	}
	from, err := rs.ChangeMembership(ctx, gid, uid, role)
	if errors.Is(err, docplatform.ErrLastAdmin) {
		httperr.Write(w, http.StatusConflict, "The group's last ADMIN cannot be demoted")
		return
	}
	if err != nil {
		s.storeErr(w, r, "Membership", err)
		return
	}
	detail := uid + ": " + string(from) + " -> " + string(role)
	if from == "" {
		detail = uid + ": added as " + string(role)
	}
	s.audit(r, docplatform.AuditMembershipRole, docplatform.OutcomeSuccess, IdentityFrom(ctx).UserID, gid, detail)
	writeJSON(w, http.StatusOK, map[string]any{"userId": uid, "groupId": gid, "role": role})
}

// removeMember: DELETE /api/groups/{groupId}/members/{userId} → 204
// (group ADMIN). Removing the last ADMIN: 409.
func (s *Server) removeMember(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	gid, uid := r.PathValue("groupId"), r.PathValue("userId")
	if _, ok := s.liveGroup(w, r, rs, gid); !ok {
		return
	}
	_, err := rs.ChangeMembership(r.Context(), gid, uid, "")
	if errors.Is(err, docplatform.ErrLastAdmin) {
		httperr.Write(w, http.StatusConflict, "The group's last ADMIN cannot be removed")
		return
	}
	if errors.Is(err, docplatform.ErrNotFound) {
		httperr.Write(w, http.StatusNotFound, "Membership not found")
		return
	}
	if err != nil {
		s.storeErr(w, r, "Membership", err)
		return
	}
	s.audit(r, docplatform.AuditMembershipRemoved, docplatform.OutcomeSuccess, IdentityFrom(r.Context()).UserID, gid, uid)
	w.WriteHeader(http.StatusNoContent)
}

// requestMembership: POST /api/groups/{groupId}/requests {"message"?} →
// 201 (any signed-in user). Already a member, or a request already open:
// 409; an unknown or soft-deleted group: 404.
func (s *Server) requestMembership(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	var b struct {
		Message string `json:"message"`
	}
	if !decodeOptionalBody(w, r, &b) {
		return
	}
	if len([]rune(b.Message)) > 500 {
		httperr.Write(w, http.StatusBadRequest, "message must be at most 500 characters")
		return
	}
	id := IdentityFrom(r.Context())
	gid := r.PathValue("groupId")
	if _, ok := s.liveGroup(w, r, rs, gid); !ok {
		return
	}
	if _, member := id.GroupRoles[gid]; member {
		httperr.Write(w, http.StatusConflict, "Already a member of the group")
		return
	}
	if _, err := rs.User(r.Context(), id.UserID); errors.Is(err, docplatform.ErrNotFound) {
		// A valid token whose holder never completed a login has no row.
		httperr.Write(w, http.StatusForbidden, "Sign in through the platform before requesting membership")
		return
	}
	m, err := rs.CreateMembershipRequest(r.Context(), id.UserID, gid, b.Message)
	if errors.Is(err, docplatform.ErrConflict) {
		httperr.Write(w, http.StatusConflict, "A request for this group is already open")
		return
	}
	if err != nil {
		s.storeErr(w, r, "Group", err)
		return
	}
	s.audit(r, docplatform.AuditMembershipRequested, docplatform.OutcomeSuccess, id.UserID, gid, "")
	writeJSON(w, http.StatusCreated, viewRequest(m))
}

// listGroupRequests: GET /api/groups/{groupId}/requests?status= (group
// ADMIN); status defaults to PENDING, "ALL" lists every request.
func (s *Server) listGroupRequests(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	status, ok := requestStatus(w, r)
	if !ok {
		return
	}
	if _, ok := s.liveGroup(w, r, rs, r.PathValue("groupId")); !ok {
		return
	}
	list, err := rs.MembershipRequests(r.Context(), r.PathValue("groupId"), "", status)
	if err != nil {
		s.internalError(w, r, "list requests", err)
		return
	}
	out := make([]requestView, len(list))
	for i, m := range list {
		out[i] = viewRequest(m)
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": out})
}

// listMyRequests: GET /api/membership-requests?status= → the caller's own
// requests (default every status).
func (s *Server) listMyRequests(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	q := r.URL.Query()
	if q.Get("status") == "" {
		q.Set("status", "ALL")
		r.URL.RawQuery = q.Encode()
	}
	status, ok := requestStatus(w, r)
	if !ok {
		return
	}
	list, err := rs.MembershipRequests(r.Context(), "", IdentityFrom(r.Context()).UserID, status)
	if err != nil {
		s.internalError(w, r, "list my requests", err)
		return
	}
	out := make([]requestView, len(list))
	for i, m := range list {
		out[i] = viewRequest(m)
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": out})
}

func requestStatus(w http.ResponseWriter, r *http.Request) (docplatform.RequestStatus, bool) {
	switch v := r.URL.Query().Get("status"); v {
	case "", "PENDING":
		return docplatform.RequestPending, true
	case "ALL":
		return "", true
	case "APPROVED", "REJECTED":
		return docplatform.RequestStatus(v), true
	}
	httperr.Write(w, http.StatusBadRequest, "status must be PENDING, APPROVED, REJECTED or ALL")
	return "", false
}

func (s *Server) approveRequest(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	s.decideRequest(w, r, rs, true)
}

func (s *Server) rejectRequest(w http.ResponseWriter, r *http.Request, rs ResourceStore, _ Resources) {
	s.decideRequest(w, r, rs, false)
}

// decideRequest: POST …/requests/{requestId}/approve|reject (group
// ADMIN). A request of another group, or of a soft-deleted group (a
// system admin gets that far): 404; already decided: 409.
// Approval makes the requester a MEMBER.
func (s *Server) decideRequest(w http.ResponseWriter, r *http.Request, rs ResourceStore, approve bool) {
	ctx := r.Context()
	gid := r.PathValue("groupId")
	if _, ok := s.liveGroup(w, r, rs, gid); !ok || !validID(w, "requestId", r.PathValue("requestId")) {
		return
	}
	m, err := rs.MembershipRequest(ctx, r.PathValue("requestId"))
	if errors.Is(err, docplatform.ErrNotFound) || (err == nil && m.GroupID != gid) {
		httperr.Write(w, http.StatusNotFound, "Membership request not found")
		return
	}
	if err != nil {
		s.internalError(w, r, "membership request", err)
		return
	}
	id := IdentityFrom(ctx)
	m, err = rs.DecideMembershipRequest(ctx, m.ID, approve, id.UserID)
	if errors.Is(err, docplatform.ErrConflict) {
		httperr.Write(w, http.StatusConflict, "The request has already been decided")
		return
	}
	if err != nil {
		s.storeErr(w, r, "Membership request", err)
		return
	}
	action := docplatform.AuditMembershipRejected
	if approve {
		action = docplatform.AuditMembershipApproved
	}
	s.audit(r, action, docplatform.OutcomeSuccess, id.UserID, gid, m.UserID)
	writeJSON(w, http.StatusOK, viewRequest(m))
}
