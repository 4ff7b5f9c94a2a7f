package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/event"
)

// Auditor appends to the audit log (sqlstore.Store is one).
type Auditor interface {
	AppendAudit(ctx context.Context, e docplatform.AuditEntry) error
}

// audit records a security-relevant action of the auth layer: logins,
// logouts, refresh refusals, API-key changes and failures, denials. The
// detail is a short reason, never a secret. A failing audit write is
// logged and does not fail the request.
func (s *Server) audit(r *http.Request, action docplatform.AuditAction, outcome docplatform.AuditOutcome, actor, group, detail string) {
	s.metrics.audited(action, outcome)
	if s.o.Audit == nil {
		return
	}
	when, err := event.NewDateTime(s.o.Now())
	if err != nil {
		s.o.Logger.Warn("audit: time", slog.String("error", err.Error()))
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 3*time.Second)
	defer cancel()
	err = s.o.Audit.AppendAudit(ctx, docplatform.AuditEntry{
		When: when, Action: action, Actor: actor, GroupID: group, Outcome: outcome, IP: state(r).ip, Detail: truncate(detail, 200),
	})
	if err != nil {
		s.o.Logger.WarnContext(ctx, "audit: append", slog.String("action", string(action)), slog.String("error", err.Error()))
	}
}

// credActor names who a request acts as, for the audit log, from the
// credential alone (the identity may not be resolved yet).
func credActor(st *reqState) string {
	switch st.cred {
	case credAPIKey:
		return "apikey:" + st.key.ID
	case credCookie, credBearer:
		return st.token.Subject
	}
	return ""
}

// deny answers 403 and records the denial.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, group, message string) {
	s.audit(r, docplatform.AuditAccessDenied, docplatform.OutcomeDenied, credActor(state(r)), group, r.Method+" "+r.URL.Path+": "+message)
	writeError(w, http.StatusForbidden, message)
}
