package sqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/govkit/govkit/docplatform"
)

// placeholders returns "$from, $from+1, …" for n values.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

const requestCols = `r.id, r.user_id, r.group_id, r.message, r.status, r.created_at, r.decided_by, r.decided_at`

func scanRequest(row interface{ Scan(...any) error }) (docplatform.MembershipRequest, error) {
	var m docplatform.MembershipRequest
	var status string
	err := row.Scan(&m.ID, &m.UserID, &m.GroupID, &m.Message, &status, timeCol{&m.CreatedAt}, &m.DecidedBy, nullTimeCol{&m.DecidedAt})
	m.Status = docplatform.RequestStatus(status)
	return m, err
}

// CreateMembershipRequest records a user's request to join a live group.
// A second open request for the same group is ErrConflict; an unknown user
// or an unknown or soft-deleted group is ErrNotFound.
func (s *Store) CreateMembershipRequest(ctx context.Context, userID, groupID, message string) (docplatform.MembershipRequest, error) {
	const what = "create membership request"
	m := docplatform.MembershipRequest{ID: newID(), UserID: userID, GroupID: groupID, Message: message, Status: docplatform.RequestPending, CreatedAt: s.now()}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := requireLiveGroup(ctx, tx, what, groupID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO membership_requests (id, user_id, group_id, message, status, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
			m.ID, m.UserID, m.GroupID, m.Message, string(m.Status), s.at(m.CreatedAt))
		return dbErr(what, err)
	})
	if err != nil {
		return docplatform.MembershipRequest{}, err
	}
	return m, nil
}

// MembershipRequest returns one request by id.
func (s *Store) MembershipRequest(ctx context.Context, id string) (docplatform.MembershipRequest, error) {
	m, err := scanRequest(s.r.QueryRowContext(ctx, `SELECT `+requestCols+` FROM membership_requests r WHERE r.id = $1`, id))
	if err != nil {
		return docplatform.MembershipRequest{}, dbErr("membership request", err)
	}
	return m, nil
}

// MembershipRequests lists a group's requests (groupID set) or a user's
// (userID set), oldest first; status "" means every status.
func (s *Store) MembershipRequests(ctx context.Context, groupID, userID string, status docplatform.RequestStatus) ([]docplatform.MembershipRequest, error) {
	const what = "membership requests"
	q := `SELECT ` + requestCols + ` FROM membership_requests r WHERE ($1 = '' OR r.group_id = $1) AND ($2 = '' OR r.user_id = $2) AND ($3 = '' OR r.status = $3) ORDER BY r.created_at, r.id`
	rows, err := s.r.QueryContext(ctx, q, groupID, userID, string(status))
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	out := []docplatform.MembershipRequest{}
	for rows.Next() {
		m, err := scanRequest(rows)
		if err != nil {
			return nil, dbErr(what, err)
		}
		out = append(out, m)
	}
	return out, dbErr(what, rows.Err())
}

// DecideMembershipRequest approves or rejects a pending request. Approval
// makes the user a MEMBER of the group in the same transaction (a user who
// is already in the group keeps the role held). A request that is not
// pending is ErrConflict; an unknown one ErrNotFound; a soft-deleted group
// ErrNotFound.
func (s *Store) DecideMembershipRequest(ctx context.Context, id string, approve bool, decidedBy string) (docplatform.MembershipRequest, error) {
	const what = "decide membership request"
	status := docplatform.RequestRejected
	if approve {
		status = docplatform.RequestApproved
	}
	var m docplatform.MembershipRequest
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		m, err = scanRequest(tx.QueryRowContext(ctx, `SELECT `+requestCols+` FROM membership_requests r WHERE r.id = $1`, id))
		if err != nil {
			return dbErr(what, err)
		}
		if m.Status != docplatform.RequestPending {
			return dbErr(what, docplatform.ErrConflict)
		}
		now := s.now()
		res, err := tx.ExecContext(ctx, `UPDATE membership_requests SET status = $2, decided_by = $3, decided_at = $4 WHERE id = $1 AND status = 'PENDING'`,
			id, string(status), decidedBy, s.at(now))
		if err := affected(what, res, err); err != nil {
			return err
		}
		m.Status, m.DecidedBy, m.DecidedAt = status, decidedBy, &now
		if !approve {
			return nil
		}
		if err := requireLiveGroup(ctx, tx, what, m.GroupID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO memberships (user_id, group_id, role, created_at) VALUES ($1, $2, 'MEMBER', $3) ON CONFLICT (user_id, group_id) DO NOTHING`,
			m.UserID, m.GroupID, s.at(now))
		return dbErr(what, err)
	})
	if err != nil {
		return docplatform.MembershipRequest{}, err
	}
	return m, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
