package docplatform

import (
	"encoding/json"
	"time"
)

// Document is an uploaded file's record. The bytes live in a file store
// under StorageKey; the row holds what people and listings need.
type Document struct {
	ID          string
	GroupID     string
	FileName    string // sanitised on upload: no path, no control characters
	ContentType string // sniffed from the bytes, never taken from the client
	Size        int64
	SHA256      string // hex digest of the stored bytes
	StorageKey  string
	// UploadedBy is the uploading user's id, or "apikey:<key id>" for a
	// machine client.
	UploadedBy string
	CreatedAt  time.Time
	// HasOCR reports whether an OCR result has been written for it.
	HasOCR bool
}

// DocumentFilter narrows a document listing. GroupIDs is the access
// filter (nil with AllGroups for a system admin); the other fields are the
// caller's filters. Listing is newest first; After is the opaque cursor of
// the last row of the previous page.
type DocumentFilter struct {
	GroupIDs      []string
	AllGroups     bool
	GroupID       string // one group out of those allowed
	ContentType   string
	NameContains  string
	CreatedAfter  *time.Time
	CreatedBefore *time.Time
	HasOCR        *bool
	// Reviewed selects documents with (true) or without (false) a
	// completed review session: with HasOCR true and Reviewed false, the
	// review queue.
	Reviewed *bool
	Limit    int
	After    *DocumentCursor
}

// DocumentCursor is a position in the newest-first order.
type DocumentCursor struct {
	CreatedAt time.Time
	ID        string
}

// OCRResult is the one OCR result of a document, written by a machine
// client; Result is the JSON it sent, kept as sent.
type OCRResult struct {
	DocumentID string
	GroupID    string
	Engine     string
	Result     json.RawMessage
	WrittenBy  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// UploadRecord is the row of an upload that is not, or no longer, a
// listed document (package docplatform/upload has its life): the document
// it is to become, and whether its bytes wait to be completed and
// committed (Stored) or must go (Discarding).
type UploadRecord struct {
	Document   Document // CreatedAt is unset: a document gets it when committed
	Discarding bool
	Since      time.Time // when the row entered its state
}
