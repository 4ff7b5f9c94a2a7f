package docplatform

import (
	"encoding/json"
	"time"
)

// Workflow is a group's named processing configuration. Its configuration
// lives in numbered versions that never change once written: saving a new
// configuration adds version Latest+1, so a document processed under
// version 3 can always be explained by version 3.
type Workflow struct {
	ID          string
	GroupID     string
	Name        string
	Description string
	Latest      int
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// WorkflowVersion is one immutable configuration of a workflow.
type WorkflowVersion struct {
	WorkflowID string
	Version    int
	Config     json.RawMessage
	CreatedBy  string
	CreatedAt  time.Time
}
