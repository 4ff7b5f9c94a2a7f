package httpapi

import (
	"context"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/sso"
)

// Store is what the HTTP layer needs from the platform's database.
type Store interface {
	Ping(ctx context.Context) error
	// UpsertUser saves the profile of a user who logged in; it must keep
	// the stored system-admin flag.
	UpsertUser(ctx context.Context, u docplatform.User) (docplatform.User, error)
	User(ctx context.Context, id string) (docplatform.User, error)
	// Access returns, in one read, the user's profile, system-admin flag
	// and roles in groups that are not soft-deleted; an unknown user has
	// none of them (Exists false, no error). Every token-authenticated
	// request calls it: the seed's rule is that roles and the admin flag
	// come from the database on every request, or from a cache that is
	// exact (sqlstore's, on SQLite). Groups and Roles may be shared
	// between requests: read-only.
	Access(ctx context.Context, userID string) (docplatform.UserAccess, error)
	Group(ctx context.Context, id string) (docplatform.Group, error)
	// ListGroups returns the live groups.
	ListGroups(ctx context.Context) ([]docplatform.Group, error)
	// UserGroups returns the user's live groups with the user's role.
	UserGroups(ctx context.Context, userID string) ([]docplatform.GroupRole, error)

	CreateAPIKey(ctx context.Context, k docplatform.APIKey) (docplatform.APIKey, error)
	// APIKeyGrant finds a key by its HMAC and returns its id, its group
	// and the roles it grants (a shared, read-only map) — the lookup
	// check 3 makes on every API-key request; keys of soft-deleted groups
	// are ErrNotFound. Like Access, it reflects every change committed
	// before it is called.
	APIKeyGrant(ctx context.Context, hash []byte) (docplatform.APIKeyGrant, error)
	APIKeyForGroup(ctx context.Context, groupID string) (docplatform.APIKey, error)
	RegenerateAPIKey(ctx context.Context, groupID, prefix string, hash []byte) (docplatform.APIKey, error)
	// RekeyAPIKey replaces key id's lookup hash from with to (the same key
	// hashed under a new COOKIE_SECRET); ErrNotFound when the key no
	// longer has hash from (regenerated, deleted, or rekeyed already).
	RekeyAPIKey(ctx context.Context, id string, from, to []byte) error
	DeleteAPIKey(ctx context.Context, groupID string) error
	// RecordAPIKeyUse saves last-use times by key id, in one batch.
	RecordAPIKeyUse(ctx context.Context, used map[string]time.Time) error
}

// OIDC is what the HTTP layer needs from the identity provider's client
// (sso.Client).
type OIDC interface {
	// CheckResponseIssuer applies RFC 9207 to the iss parameter of an
	// authorization response (present says whether there was one).
	CheckResponseIssuer(ctx context.Context, iss string, present bool) error
	Discover(ctx context.Context) error
	AuthCodeURL(ctx context.Context, state, nonce, verifier string) (string, error)
	Exchange(ctx context.Context, code, verifier, nonce string) (sso.Tokens, sso.Profile, error)
	Refresh(ctx context.Context, refreshToken string) (sso.Tokens, error)
	EndSessionURL(ctx context.Context, idTokenHint, postLogout string) (string, error)
	RevokeToken(ctx context.Context, token, hint string) error
	VerifyAccessToken(ctx context.Context, raw string) (sso.AccessToken, error)
}
