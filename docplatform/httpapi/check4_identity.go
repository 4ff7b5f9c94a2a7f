package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

// identityCheck is check 4: it resolves who the request acts as and
// enforces the route's access level. A token's identity comes from the
// database (a user without a row yet has no groups and is not an admin);
// an API key's is its group as MEMBER, with no further query.
func (s *Server) identityCheck(rt *Route) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if rt.Access.Level == LevelPublic {
			return next
		}
		a := rt.Access
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := state(r)
			switch st.cred {
			case credAPIKey:
				// Check 3 set the identity from the key's grant: its group
				// as MEMBER, in the store's shared roles map.
			case credCookie, credBearer:
				a, err := s.o.Store.Access(r.Context(), st.token.Subject)
				if err != nil {
					s.internalError(w, r, "load identity", err)
					return
				}
				// The handler reads the rest (/me's profile and groups) from
				// st.access: one read per request. a.Roles is the store's
				// map, shared between requests and never written to.
				st.access = a
				st.identity = docplatform.Identity{UserID: st.token.Subject, IsSystemAdmin: a.User.IsSystemAdmin, GroupRoles: a.Roles}
			default:
				httperr.Write(w, http.StatusUnauthorized, "Unauthenticated request to non-public endpoint")
				return
			}
			st.resolved = true
			id := &st.identity
			switch a.Level {
			case LevelAuthenticated:
				if id.ViaAPIKey() {
					s.deny(w, r, "", "API key authentication is not allowed for this endpoint")
					return
				}
			case LevelSystemAdmin:
				if id.ViaAPIKey() || !id.IsSystemAdmin {
					s.deny(w, r, "", "System admin access required")
					return
				}
			case LevelGroup:
				gid, status, msg := groupID(r, a)
				if status != 0 {
					httperr.Write(w, status, msg)
					return
				}
				if id.IsSystemAdmin && !isUUID(gid) {
					// Group ids are UUIDs the store made: anything else names no
					// group. A system admin skips the membership lookup that
					// refuses it for everyone else, so refuse it here, before
					// a NUL byte or invalid UTF-8 reaches PostgreSQL — 400, as
					// the resource handlers answer a malformed id.
					httperr.Write(w, http.StatusBadRequest, a.GroupField+" must be a UUID")
					return
				}
				if !id.IsSystemAdmin {
					role, ok := id.GroupRoles[gid]
					if !ok {
						s.deny(w, r, gid, "User is not a member of the specified group")
						return
					}
					if !role.AtLeast(a.MinRole) {
						s.deny(w, r, gid, "Insufficient role within the group")
						return
					}
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// groupID reads the group id of a group-scoped request. A JSON body is
// read once and put back for the handler.
func groupID(r *http.Request, a Access) (string, int, string) {
	var id string
	switch a.GroupFrom {
	case FromPath:
		id = r.PathValue(a.GroupField)
	case FromQuery:
		id = r.URL.Query().Get(a.GroupField)
	case FromBody:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return "", http.StatusRequestEntityTooLarge, "Request body too large"
			}
			return "", http.StatusBadRequest, "Cannot read request body"
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var status int
		var msg string
		id, status, msg = bodyGroupID(body, a.GroupField)
		if status != 0 {
			return "", status, msg
		}
	}
	if id == "" {
		return "", http.StatusBadRequest, "Missing required group identifier"
	}
	return id, 0, ""
}

// bodyGroupID reads the group field of a JSON object body. The field must
// appear once and spelt exactly: encoding/json matches struct fields
// without regard to case and keeps the last duplicate, so a body such as
// {"groupId":"mine","GroupId":"yours"} would be authorised for one group
// here and acted on for the other by a handler that decodes it into a
// struct.
func bodyGroupID(body []byte, field string) (string, int, string) {
	const notObject = "Request body must be a JSON object"
	if len(bytes.TrimSpace(body)) == 0 {
		return "", 0, ""
	}
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return "", http.StatusBadRequest, notObject
	}
	var id string
	seen := false
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return "", http.StatusBadRequest, notObject
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return "", http.StatusBadRequest, notObject
		}
		if !strings.EqualFold(key, field) {
			continue
		}
		if key != field || seen {
			return "", http.StatusBadRequest, field + " must appear once, spelt " + field
		}
		seen = true
		if err := json.Unmarshal(raw, &id); err != nil {
			return "", http.StatusBadRequest, field + " must be a string"
		}
	}
	if t, err := d.Token(); err != nil || t != json.Delim('}') {
		return "", http.StatusBadRequest, notObject
	}
	if _, err := d.Token(); err != io.EOF {
		return "", http.StatusBadRequest, notObject
	}
	return id, 0, ""
}
