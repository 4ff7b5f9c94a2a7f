package docplatform

import (
	"errors"
	"time"
)

// ReviewStatus is where a review session is in its life.
type ReviewStatus string

const (
	// ReviewActive holds the document's lock until ExpiresAt.
	ReviewActive    ReviewStatus = "ACTIVE"
	ReviewCompleted ReviewStatus = "COMPLETED"
	ReviewAbandoned ReviewStatus = "ABANDONED"
	// ReviewExpired marks a session whose lock lapsed and was taken over
	// by another reviewer.
	ReviewExpired ReviewStatus = "EXPIRED"
)

// ReviewSession is a person's human-in-the-loop review of one document.
// While it is ACTIVE and not past ExpiresAt it is the document's exclusive
// lock: nobody else can start a session on the document. A lapsed lock is
// taken over by the next reviewer who starts one.
type ReviewSession struct {
	ID         string
	DocumentID string
	GroupID    string
	ReviewerID string
	Status     ReviewStatus
	CreatedAt  time.Time
	ExpiresAt  time.Time
	EndedAt    *time.Time
}

// Correction is one field a reviewer corrected.
type Correction struct {
	ID            string
	SessionID     string
	Field         string
	OriginalValue string
	Value         string
	CreatedAt     time.Time
}

// ErrLocked is returned when another reviewer holds a document's lock.
var ErrLocked = errors.New("document is locked by another reviewer")

// ErrNotActive is returned when a session has ended or its lock lapsed.
var ErrNotActive = errors.New("review session is not active")
