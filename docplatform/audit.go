package docplatform

import (
	"time"

	"github.com/govkit/govkit/event"
)

// AuditAction names a security-relevant action the audit log records.
type AuditAction string

// The actions of the spec's audit log.
const (
	AuditLogin             AuditAction = "auth.login"
	AuditLoginFailed       AuditAction = "auth.login_failed"
	AuditLogout            AuditAction = "auth.logout"
	AuditRefreshFailed     AuditAction = "auth.refresh_failed"
	AuditAPIKeyCreated     AuditAction = "api_key.created"
	AuditAPIKeyRegenerated AuditAction = "api_key.regenerated"
	AuditAPIKeyDeleted     AuditAction = "api_key.deleted"
	AuditAPIKeyFailed      AuditAction = "api_key.failed"
	AuditAccessDenied      AuditAction = "access.denied"

	AuditMembershipRequested AuditAction = "membership.requested"
	AuditMembershipApproved  AuditAction = "membership.approved"
	AuditMembershipRejected  AuditAction = "membership.rejected"
	AuditMembershipRole      AuditAction = "membership.role_changed"
	AuditMembershipRemoved   AuditAction = "membership.removed"

	AuditGroupCreated AuditAction = "group.created"
	AuditGroupUpdated AuditAction = "group.updated"
	AuditGroupDeleted AuditAction = "group.deleted"
	AuditAdminGranted AuditAction = "user.admin_granted"
	AuditAdminRevoked AuditAction = "user.admin_revoked"
	AuditUserDeleted  AuditAction = "user.deleted"

	// What is done to a group's documents and workflows, for its admins
	// to see who did what (the detail names the document or workflow).
	AuditDocumentUploaded   AuditAction = "document.uploaded"
	AuditDocumentDownloaded AuditAction = "document.downloaded"
	AuditDocumentDeleted    AuditAction = "document.deleted"
	AuditReviewStarted      AuditAction = "review.started"
	AuditReviewCompleted    AuditAction = "review.completed"
	AuditReviewAbandoned    AuditAction = "review.abandoned"
	AuditWorkflowCreated    AuditAction = "workflow.created"
	AuditWorkflowVersion    AuditAction = "workflow.version_added"
	AuditWorkflowDeleted    AuditAction = "workflow.deleted"
)

// AuditOutcome is how the action ended.
type AuditOutcome string

const (
	OutcomeSuccess AuditOutcome = "success"
	OutcomeFailure AuditOutcome = "failure"
	OutcomeDenied  AuditOutcome = "denied"
)

// AuditEntry is one line of the audit log. When is an event.Event in
// datetime form: the audit log records instants, and the date form is only
// derived from it for reports.
type AuditEntry struct {
	ID      int64
	When    event.Event
	Action  AuditAction
	Actor   string // user id, "apikey:<key id>", or "" when nobody is known
	GroupID string // "" when the action concerns no group
	Outcome AuditOutcome
	IP      string
	Detail  string // a short reason; never a secret
}

// AuditFilter selects audit entries: GroupIDs restricts to those groups
// unless AllGroups (system admins); From and To bound the time
// (inclusive, exclusive). Listing is newest first.
type AuditFilter struct {
	GroupIDs  []string
	AllGroups bool
	Action    AuditAction
	From, To  *time.Time
	Limit     int
	BeforeID  int64
}
