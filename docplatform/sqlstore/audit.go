package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/event"
)

// AppendAudit writes one audit entry; its time is e.When's start, which
// must be in datetime form.
func (s *Store) AppendAudit(ctx context.Context, e docplatform.AuditEntry) error {
	const what = "append audit"
	t, ok := e.When.Start().Time()
	if !ok {
		return invalid(what, "when must be an event in datetime form")
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO audit_log (at, event, action, actor, group_id, outcome, ip, detail) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		s.at(t), e.When.String(), string(e.Action), e.Actor, e.GroupID, string(e.Outcome), e.IP, e.Detail)
	return dbErr(what, err)
}

// ListAudit returns audit entries f selects, newest first.
func (s *Store) ListAudit(ctx context.Context, f docplatform.AuditFilter) ([]docplatform.AuditEntry, error) {
	const what = "list audit"
	out := []docplatform.AuditEntry{}
	if !f.AllGroups && len(f.GroupIDs) == 0 {
		return out, nil
	}
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if !f.AllGroups {
		where = append(where, "group_id IN ("+placeholders(1, len(f.GroupIDs))+")")
		for _, g := range f.GroupIDs {
			args = append(args, g)
		}
	}
	if f.Action != "" {
		where = append(where, "action = "+arg(string(f.Action)))
	}
	if f.From != nil {
		where = append(where, "at >= "+arg(s.at(*f.From)))
	}
	if f.To != nil {
		where = append(where, "at < "+arg(s.at(*f.To)))
	}
	if f.BeforeID > 0 {
		where = append(where, "id < "+arg(f.BeforeID))
	}
	q := `SELECT id, event, action, actor, group_id, outcome, ip, detail FROM audit_log`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q += " ORDER BY id DESC LIMIT " + arg(limit)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		var e docplatform.AuditEntry
		var ev, action, outcome string
		if err := rows.Scan(&e.ID, &ev, &action, &e.Actor, &e.GroupID, &outcome, &e.IP, &e.Detail); err != nil {
			return nil, dbErr(what, err)
		}
		if e.When, err = event.Parse([]byte(ev)); err != nil {
			return nil, fmt.Errorf("%s: stored event of entry %d: %w", what, e.ID, err)
		}
		e.Action, e.Outcome = docplatform.AuditAction(action), docplatform.AuditOutcome(outcome)
		out = append(out, e)
	}
	return out, dbErr(what, rows.Err())
}
