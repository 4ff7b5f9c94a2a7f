package httpapi

import (
	"net/http"

	"github.com/govkit/govkit/docplatform"
)

// Level is a route's access level. Every route declares one next to its
// handler; the zero value means "not declared", and a test walks the route
// table to make sure no route keeps it.
type Level int

const (
	undeclared Level = iota
	// LevelPublic: no authentication; every later check is a no-op.
	LevelPublic
	// LevelAuthenticated: a valid access token; API keys get 403.
	LevelAuthenticated
	// LevelTokenOrAPIKey: a token or an API key; neither gives 401.
	LevelTokenOrAPIKey
	// LevelSystemAdmin: a token of a system admin; API keys always 403.
	LevelSystemAdmin
	// LevelGroup: a member of the group named by the request, at or above
	// MinRole; system admins pass.
	LevelGroup
)

func (l Level) String() string {
	switch l {
	case LevelPublic:
		return "public"
	case LevelAuthenticated:
		return "authenticated"
	case LevelTokenOrAPIKey:
		return "token or API key"
	case LevelSystemAdmin:
		return "system admin"
	case LevelGroup:
		return "group"
	}
	return "undeclared"
}

// Source says where a group-scoped route finds the group id.
type Source int

const (
	FromPath  Source = iota + 1 // a {name} path wildcard
	FromQuery                   // a query parameter
	FromBody                    // a field of the JSON body
)

// Access is a route's declaration: its level and, for group routes, where
// the group id comes from and the least role needed.
type Access struct {
	Level Level
	// APIKey lets API keys in on a group route (LevelTokenOrAPIKey always
	// does; LevelSystemAdmin never does, whatever this says).
	APIKey     bool
	GroupFrom  Source
	GroupField string
	MinRole    docplatform.Role
}

// Public, Authenticated, TokenOrAPIKey and SystemAdmin are the plain levels.
func Public() Access        { return Access{Level: LevelPublic} }
func Authenticated() Access { return Access{Level: LevelAuthenticated} }
func TokenOrAPIKey() Access { return Access{Level: LevelTokenOrAPIKey} }
func SystemAdmin() Access   { return Access{Level: LevelSystemAdmin} }

// Group is a group-scoped level: the group id is read from field of from,
// and the caller needs minRole there ("" admits any member).
func Group(from Source, field string, minRole docplatform.Role) Access {
	return Access{Level: LevelGroup, GroupFrom: from, GroupField: field, MinRole: minRole}
}

// WithAPIKey also admits the group's API key (as a MEMBER).
func (a Access) WithAPIKey() Access { a.APIKey = true; return a }

// allowsAPIKey is the combination rule: system-admin routes reject keys
// whatever else they say.
func (a Access) allowsAPIKey() bool {
	switch a.Level {
	case LevelTokenOrAPIKey:
		return true
	case LevelGroup:
		return a.APIKey
	}
	return false
}

// CheckGroupAccess is the single-resource helper: after loading a
// resource's group id (nil when the resource has none), it returns the
// status to answer with, or 0 when access is granted. nil group: 404; no
// identity: 403; system admin: allowed; not a member: 403; role below
// minRole: 403.
func CheckGroupAccess(id *docplatform.Identity, groupID *string, minRole docplatform.Role) int {
	if groupID == nil {
		return http.StatusNotFound
	}
	if id == nil {
		return http.StatusForbidden
	}
	if id.IsSystemAdmin {
		return 0
	}
	role, ok := id.GroupRoles[*groupID]
	if !ok || !role.AtLeast(minRole) {
		return http.StatusForbidden
	}
	return 0
}
