// Package docplatform holds the domain of the document platform: who is
// calling (Identity), what they may do (Role), the records authorization
// rests on (User, Group, Membership, APIKey), and the group-scoped resources
// they protect (documents, OCR results, workflows, review sessions,
// membership requests, audit entries).
//
// The packages beside it are leaves that implement or use these types:
// sqlstore (SQLite and PostgreSQL), filestore (document bytes on disk), sso
// (the OpenID client and token verifier), devidp (the development OpenID
// provider), httpapi (routes, the check chain, handlers), config (the
// environment), platform (serve) and dev (govkit dev). Nothing here imports a
// driver or net/http.
package docplatform

import (
	"errors"
	"time"
)

// Role is a user's role within one group. MEMBER < ADMIN.
type Role string

const (
	RoleMember Role = "MEMBER"
	RoleAdmin  Role = "ADMIN"
)

// rank orders roles; an unknown role ranks below MEMBER.
func (r Role) rank() int {
	switch r {
	case RoleMember:
		return 1
	case RoleAdmin:
		return 2
	}
	return 0
}

// AtLeast reports whether r is min or above it. The empty minimum admits
// every known role.
func (r Role) AtLeast(min Role) bool {
	if min == "" {
		return r.rank() > 0
	}
	return r.rank() >= min.rank()
}

// Valid reports whether r is one of the defined roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// Identity is who a request acts as, resolved by the check chain.
type Identity struct {
	// UserID is the provider's subject; empty for API-key requests.
	UserID string
	// IsSystemAdmin comes from the user record; always false for API keys.
	IsSystemAdmin bool
	// GroupRoles maps group id to the caller's role in that group. Soft-
	// deleted groups never appear here. It is the store's map
	// (UserAccess.Roles, APIKeyGrant.Roles), shared with other requests:
	// read-only.
	GroupRoles map[string]Role
	// APIKeyID is set when the request authenticated with an API key.
	APIKeyID string
}

// ViaAPIKey reports whether the identity comes from an API key.
func (id *Identity) ViaAPIKey() bool { return id != nil && id.APIKeyID != "" }

// GroupIDs returns the groups a listing may show, and false when the
// caller is a system admin and no filter applies.
func (id *Identity) GroupIDs() (ids []string, filtered bool) {
	if id.IsSystemAdmin {
		return nil, false
	}
	ids = make([]string, 0, len(id.GroupRoles))
	for g := range id.GroupRoles {
		ids = append(ids, g)
	}
	return ids, true
}

// User is a person known to the platform. ID is the provider's `sub`.
type User struct {
	ID                string
	Email             string // optional: some providers send none
	Name              string
	PreferredUsername string
	IsSystemAdmin     bool
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// Group owns every primary resource. A soft-deleted group (DeletedAt set)
// grants nothing: its memberships and API key stop working.
type Group struct {
	ID          string
	Name        string
	Description string
	CreatedBy   string // user id of the creator, kept for audit only
	CreatedAt   time.Time
	DeletedAt   *time.Time
}

// UserAccess is what one read of the database tells about a token's user:
// the user record — id, email, name, preferred_username and the
// system-admin flag, not the times — (Exists false, User zero but for ID,
// when the user never passed the login callback) and the user's live groups with the role in
// each. The request chain authorises with it, and /me answers from it.
//
// A UserAccess from the store may be shared: the SQLite store hands the
// same Groups slice and Roles map to every request its access cache
// serves. Treat both as read-only; copy before changing anything.
type UserAccess struct {
	User   User
	Exists bool
	Groups []GroupAccess
	// Roles is Groups as a map from group id to role, built once by the
	// store (never nil), so the request chain can use it as
	// Identity.GroupRoles without building one per request. Read-only.
	Roles map[string]Role
}

// APIKeyGrant is what an API key authorises a request for: its own id
// (for last-use and audit) and its group, in which it acts as MEMBER.
// Roles is that grant as a map, {GroupID: MEMBER}, built once by the
// store and shared between requests: read-only.
type APIKeyGrant struct {
	KeyID   string
	GroupID string
	Roles   map[string]Role
}

// GroupAccess is one of a user's live groups, by id and name, with the
// user's role in it.
type GroupAccess struct {
	GroupID   string
	GroupName string
	Role      Role
}

// GroupRole is one of a user's live groups with the user's role in it.
type GroupRole struct {
	Group Group
	Role  Role
}

// Membership is a user's role in a group.
type Membership struct {
	UserID    string
	GroupID   string
	Role      Role
	CreatedAt time.Time
}

// APIKey is a group's machine credential. The key itself is never stored:
// Hash is HMAC-SHA-256 of the full key under the platform's secret, and
// Prefix is the recognisable start shown to people.
type APIKey struct {
	ID        string
	GroupID   string
	Prefix    string
	Hash      []byte
	CreatedBy string // user id of the creator, kept for audit only
	CreatedAt time.Time
	LastUsed  *time.Time
}

// Errors shared by every store and handler; match them with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	// ErrInvalid marks input a store refuses before touching the database
	// (an empty id or name, an unknown role); handlers answer it with 400.
	ErrInvalid = errors.New("invalid")
	// ErrUnavailable marks the failure of a part the platform depends on
	// that did not answer, or refused to: handlers answer it with 503,
	// Retry-After and the part's name, never with a 401 or 403 that would
	// sign someone out or refuse what they may do. See UnavailableError.
	ErrUnavailable = errors.New("unavailable")
)

// UnavailableError is ErrUnavailable naming the part ("database",
// "document storage").
type UnavailableError struct {
	Part string
	Err  error
}

func (e *UnavailableError) Error() string { return e.Part + " unavailable: " + e.Err.Error() }

func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }
