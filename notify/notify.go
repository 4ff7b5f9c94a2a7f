// Package notify is the notification service: an email and SMS subscription
// and notification service, API-compatible with version 6 of NotifyBC, so an
// existing deployment can switch to it without changing its clients, its
// config files or its MongoDB data.
//
// This root package holds the domain types every other part imports and
// nothing that talks to the outside: the records the service keeps
// ([Subscription], [Notification], [Configuration], [Administrator],
// [UserCredential], [AccessToken], [Bounce], [Rss]), the caller's
// [UserProfile], the per-subscriber results of a broadcast
// ([DispatchResult]) and the sentinel errors stores return ([ErrNotFound],
// [ErrDuplicate]). Storage lives in notify/mongostore (MongoDB through the
// official driver) and notify/embeddedmongo (the in-process FerretDB on
// SQLite that stands in for MongoDB when no uri is configured).
//
// # Records
//
// Records keep the original's collection and field names. Known fields are
// typed; subscriptions, notifications, configurations, bounces and rss
// records are schemaless in the original, so every other field a client
// sends is kept in Extra, in order, and written back unchanged.
// Administrator, UserCredential and AccessToken are strict: unknown fields
// are dropped, as the original drops them.
//
// Every record converts to and from an ordered [Fields] document: Fields()
// gives the stored form (the id under "id", times as time.Time) and
// SetFields reads client input strictly (a known field of the wrong type is
// an error naming the field), while LoadFields reads stored data leniently
// (a known field of an unexpected type is kept in Extra under its own name,
// so nothing stored is lost or fails to load).
//
// JSON output follows the original: "id" holds the ObjectId hex and "_id"
// or "__v" never appear; dates are RFC 3339 UTC with exactly three fraction
// digits ("2026-01-02T03:04:05.000Z"); createdBy and updatedBy are
// {securityId, authnStrategy, role}. Fields with a default in the original
// (state, channel, isBroadcast, hardBounceCount, …) are always written once
// defaults are applied ([Subscription.ApplyDefaults] and friends; stores
// apply them on read, as mongoose does); other fields are written when set.
//
// # Broadcast results
//
// The original keeps every broadcast's candidates and per-subscriber results
// as arrays inside the notification document, which caps a broadcast near
// MongoDB's 16 MB document limit and makes each result a rewrite of the whole
// document. Here candidates and results live one per (notification,
// subscription) in side collections ([DispatchResult]), recorded in batches
// with set semantics: the first outcome recorded for a subscriber wins and a
// retried batch never duplicates one. [Dispatch] is the API's view ("dispatch.candidates",
// "dispatch.successful", "dispatch.failed", "dispatch.skipped"), assembled by
// the store from the side collection together with any arrays older data
// still holds inside the notification document.
package notify

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrNotFound is returned for a record that does not exist, including a
// malformed id: the API answers 404 for both, never 500.
var ErrNotFound = errors.New("not found")

// ErrDuplicate is returned when a write breaks a unique index (configuration
// name and serviceName, administrator email, …). The wrapped message names
// the index; the API answers 400, as the original does.
var ErrDuplicate = errors.New("duplicate key")

// ErrUnavailable marks the failure of a part the service depends on that
// did not answer, or could not be reached (the database): the API answers
// it 503 with Retry-After, naming the part. See UnavailableError.
var ErrUnavailable = errors.New("unavailable")

// UnavailableError is ErrUnavailable naming the part ("database").
type UnavailableError struct {
	Part string
	Err  error
}

func (e *UnavailableError) Error() string { return e.Part + " unavailable: " + e.Err.Error() }

func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// Collection names, exactly as the original's.
const (
	CollSubscription   = "subscription"
	CollNotification   = "notification"
	CollConfiguration  = "configuration"
	CollAdministrator  = "administrator"
	CollUserCredential = "UserCredential"
	CollAccessToken    = "AccessToken"
	CollBounce         = "bounce"
	CollRss            = "rss"
	// CollNotificationBroadcast, CollNotificationBroadcastChunk and
	// CollNotificationBroadcastResult are ours: a broadcast's header, its
	// chunks of subscribers and their results (see notify/mongostore).
	CollNotificationBroadcast       = "notificationBroadcast"
	CollNotificationBroadcastChunk  = "notificationBroadcastChunk"
	CollNotificationBroadcastResult = "notificationBroadcastResult"
)

// Role is the caller's role, as the original names it.
type Role string

// Roles, strongest first.
const (
	RoleSuperAdmin        Role = "SuperAdmin"
	RoleAdmin             Role = "Admin"
	RoleAuthenticatedUser Role = "AuthenticatedUser"
	RoleAnonymous         Role = "Anonymous"
)

// AuthnStrategy says how the caller was identified, as the original names it.
type AuthnStrategy string

// Authentication strategies.
const (
	AuthnIP                AuthnStrategy = "ip"
	AuthnAccessToken       AuthnStrategy = "accessToken"
	AuthnSiteMinder        AuthnStrategy = "siteMinder"
	AuthnOIDC              AuthnStrategy = "oidc"
	AuthnClientCertificate AuthnStrategy = "clientCertificate"
)

// UserProfile is who made a request; records keep it in createdBy and
// updatedBy.
type UserProfile struct {
	SecurityID    string        `json:"securityId"`
	AuthnStrategy AuthnStrategy `json:"authnStrategy"`
	Role          Role          `json:"role,omitempty"`
}

// Fields returns the stored form of the profile.
func (p UserProfile) Fields() Fields {
	f := Fields{{"securityId", p.SecurityID}, {"authnStrategy", string(p.AuthnStrategy)}}
	if p.Role != "" {
		f = append(f, Field{"role", string(p.Role)})
	}
	return f
}

func profileFrom(v any) (*UserProfile, bool) {
	doc, ok := v.(Fields)
	if !ok {
		return nil, false
	}
	var p UserProfile
	for _, e := range doc {
		s, isStr := e.Value.(string)
		switch e.Key {
		case "securityId":
			if !isStr {
				return nil, false
			}
			p.SecurityID = s
		case "authnStrategy":
			if !isStr {
				return nil, false
			}
			p.AuthnStrategy = AuthnStrategy(s)
		case "role":
			if !isStr {
				return nil, false
			}
			p.Role = Role(s)
		default:
			return nil, false
		}
	}
	return &p, true
}

// ID is a MongoDB ObjectId: 4 bytes of seconds since the epoch, 5 random
// bytes, a 3-byte counter. Clients see it as 24 lower-case hex digits.
type ID [12]byte

// ParseID reads the 24-hex-digit form. Anything else is [ErrNotFound], so a
// malformed id in a URL is a 404 like an unknown one.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 24 {
		return id, fmt.Errorf("id %q: %w", s, ErrNotFound)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return ID{}, fmt.Errorf("id %q: %w", s, ErrNotFound)
	}
	return id, nil
}

var (
	idCounter = func() *atomic.Uint32 {
		var b [4]byte
		_, _ = rand.Read(b[:])
		c := new(atomic.Uint32)
		c.Store(binary.BigEndian.Uint32(b[:]))
		return c
	}()
	idRandom = func() [5]byte {
		var b [5]byte
		_, _ = rand.Read(b[:])
		return b
	}()
)

// NewID returns a new ObjectId, unique within and across processes like the
// ones the driver generates.
func NewID() ID {
	var id ID
	binary.BigEndian.PutUint32(id[0:4], uint32(time.Now().Unix()))
	copy(id[4:9], idRandom[:])
	c := idCounter.Add(1)
	id[9], id[10], id[11] = byte(c>>16), byte(c>>8), byte(c)
	return id
}

// Hex returns the 24-hex-digit form.
func (id ID) Hex() string { return hex.EncodeToString(id[:]) }

// String returns the 24-hex-digit form.
func (id ID) String() string { return id.Hex() }

// IsZero reports whether id is unset.
func (id ID) IsZero() bool { return id == ID{} }

// Timestamp returns the creation time encoded in the id.
func (id ID) Timestamp() time.Time {
	return time.Unix(int64(binary.BigEndian.Uint32(id[0:4])), 0).UTC()
}

// MarshalJSON writes the hex form.
func (id ID) MarshalJSON() ([]byte, error) {
	return []byte(`"` + id.Hex() + `"`), nil
}

// UnmarshalJSON reads the hex form.
func (id *ID) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("id must be a 24-hex-digit string")
	}
	v, err := ParseID(string(b[1 : len(b)-1]))
	if err != nil {
		return fmt.Errorf("id must be a 24-hex-digit string")
	}
	*id = v
	return nil
}
