package docplatform

import (
	"fmt"
	"time"
)

// ErrLastAdmin is the conflict of a change that would leave a group
// without an ADMIN (demoting or removing its last one).
var ErrLastAdmin = fmt.Errorf("%w: the group's last ADMIN", ErrConflict)

// MembershipRequest is a user's request to join a group, decided by one of
// the group's admins.
type MembershipRequest struct {
	ID        string
	UserID    string
	GroupID   string
	Message   string
	Status    RequestStatus
	CreatedAt time.Time
	DecidedBy string
	DecidedAt *time.Time
}

// RequestStatus is a membership request's state.
type RequestStatus string

const (
	RequestPending  RequestStatus = "PENDING"
	RequestApproved RequestStatus = "APPROVED"
	RequestRejected RequestStatus = "REJECTED"
)
