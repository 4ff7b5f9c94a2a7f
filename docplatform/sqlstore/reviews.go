package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/govkit/govkit/docplatform"
)

const reviewCols = `r.id, r.document_id, d.group_id, r.reviewer_id, r.status, r.created_at, r.expires_at, r.ended_at`

func scanReview(row interface{ Scan(...any) error }) (docplatform.ReviewSession, error) {
	var r docplatform.ReviewSession
	var status string
	err := row.Scan(&r.ID, &r.DocumentID, &r.GroupID, &r.ReviewerID, &status, timeCol{&r.CreatedAt}, timeCol{&r.ExpiresAt}, nullTimeCol{&r.EndedAt})
	r.Status = docplatform.ReviewStatus(status)
	return r, err
}

// StartReview opens a review session on a document: the exclusive lock
// until now+ttl. If the same reviewer already holds the lock, that session
// is returned with its expiry pushed out. If another reviewer holds an
// unexpired lock: docplatform.ErrLocked. An expired lock is taken over: the
// old session becomes EXPIRED and a new one starts. The partial unique
// index on ACTIVE sessions settles two reviewers starting at once.
func (s *Store) StartReview(ctx context.Context, documentID, reviewerID string, ttl time.Duration) (session docplatform.ReviewSession, created bool, err error) {
	const what = "start review"
	now := s.now()
	var out docplatform.ReviewSession
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		cur, err := scanReview(tx.QueryRowContext(ctx, `SELECT `+reviewCols+` FROM review_sessions r JOIN documents d ON d.id = r.document_id
			WHERE r.document_id = $1 AND r.status = 'ACTIVE'`, documentID))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return dbErr(what, err)
		case cur.ExpiresAt.After(now) && cur.ReviewerID == reviewerID:
			cur.ExpiresAt = now.Add(ttl)
			res, err := tx.ExecContext(ctx, `UPDATE review_sessions SET expires_at = $2 WHERE id = $1 AND status = 'ACTIVE'`, cur.ID, s.at(cur.ExpiresAt))
			out = cur
			return lockedIfNone(what, res, err)
		case cur.ExpiresAt.After(now):
			return docplatform.ErrLocked
		default:
			// The row read above may already be stale on PostgreSQL: the
			// old reviewer may have just renewed or ended the session. The
			// conditions are checked again on the row as it is when the
			// update runs, so a renewed lock is never expired from under
			// its reviewer; losing that race is ErrLocked.
			res, err := tx.ExecContext(ctx, `UPDATE review_sessions SET status = 'EXPIRED', ended_at = $2 WHERE id = $1 AND status = 'ACTIVE' AND expires_at <= $2`, cur.ID, s.at(now))
			if err := lockedIfNone(what, res, err); err != nil {
				return err
			}
		}
		var groupID string
		if err := tx.QueryRowContext(ctx, `SELECT group_id FROM documents WHERE id = $1`, documentID).Scan(&groupID); err != nil {
			return dbErr(what, err)
		}
		created = true
		out = docplatform.ReviewSession{ID: newID(), DocumentID: documentID, GroupID: groupID, ReviewerID: reviewerID, Status: docplatform.ReviewActive, CreatedAt: now, ExpiresAt: now.Add(ttl)}
		_, err = tx.ExecContext(ctx, `INSERT INTO review_sessions (id, document_id, reviewer_id, status, created_at, expires_at) VALUES ($1, $2, $3, 'ACTIVE', $4, $5)`,
			out.ID, documentID, reviewerID, s.at(now), s.at(out.ExpiresAt))
		if err = dbErr(what, err); errors.Is(err, docplatform.ErrConflict) {
			return docplatform.ErrLocked
		}
		return err
	})
	if err != nil {
		return docplatform.ReviewSession{}, false, err
	}
	return out, created, nil
}

// lockedIfNone is affected for the lock's updates: no row changed means
// another transaction changed the session first, ErrLocked.
func lockedIfNone(what string, res sql.Result, err error) error {
	if err := affected(what, res, err); errors.Is(err, docplatform.ErrNotFound) {
		return docplatform.ErrLocked
	} else if err != nil {
		return err
	}
	return nil
}

// ReviewSession returns a session by id; one on a document of a
// soft-deleted group is not found.
func (s *Store) ReviewSession(ctx context.Context, id string) (docplatform.ReviewSession, error) {
	r, err := scanReview(s.r.QueryRowContext(ctx, `SELECT `+reviewCols+` FROM review_sessions r JOIN documents d ON d.id = r.document_id WHERE r.id = $1 AND `+liveGroupOf("d"), id))
	if err != nil {
		return docplatform.ReviewSession{}, dbErr("review session", err)
	}
	return r, nil
}

// DocumentReviews lists a document's sessions, newest first.
func (s *Store) DocumentReviews(ctx context.Context, documentID string) ([]docplatform.ReviewSession, error) {
	const what = "document reviews"
	rows, err := s.r.QueryContext(ctx, `SELECT `+reviewCols+` FROM review_sessions r JOIN documents d ON d.id = r.document_id
		WHERE r.document_id = $1 ORDER BY r.created_at DESC, r.id`, documentID)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	out := []docplatform.ReviewSession{}
	for rows.Next() {
		r, err := scanReview(rows)
		if err != nil {
			return nil, dbErr(what, err)
		}
		out = append(out, r)
	}
	return out, dbErr(what, rows.Err())
}

// AddCorrections records field corrections in the reviewer's active,
// unexpired session and pushes the lock's expiry to now+ttl (activity keeps
// the lock). A session that ended or lapsed: docplatform.ErrNotActive.
func (s *Store) AddCorrections(ctx context.Context, sessionID, reviewerID string, ttl time.Duration, cs []docplatform.Correction) ([]docplatform.Correction, error) {
	const what = "add corrections"
	now := s.now()
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE review_sessions SET expires_at = $3 WHERE id = $1 AND reviewer_id = $2 AND status = 'ACTIVE' AND expires_at > $4`,
			sessionID, reviewerID, s.at(now.Add(ttl)), s.at(now))
		if err := affected(what, res, err); errors.Is(err, docplatform.ErrNotFound) {
			return docplatform.ErrNotActive
		} else if err != nil {
			return err
		}
		for i := range cs {
			cs[i].ID, cs[i].SessionID, cs[i].CreatedAt = newID(), sessionID, now
			if _, err := tx.ExecContext(ctx, `INSERT INTO review_corrections (id, session_id, field, original_value, value, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
				cs[i].ID, sessionID, cs[i].Field, cs[i].OriginalValue, cs[i].Value, s.at(now)); err != nil {
				return dbErr(what, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cs, nil
}

// Corrections lists a session's corrections in the order they were made.
func (s *Store) Corrections(ctx context.Context, sessionID string) ([]docplatform.Correction, error) {
	const what = "corrections"
	rows, err := s.r.QueryContext(ctx, `SELECT id, session_id, field, original_value, value, created_at FROM review_corrections WHERE session_id = $1 ORDER BY created_at, id`, sessionID)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	out := []docplatform.Correction{}
	for rows.Next() {
		var c docplatform.Correction
		if err := rows.Scan(&c.ID, &c.SessionID, &c.Field, &c.OriginalValue, &c.Value, timeCol{&c.CreatedAt}); err != nil {
			return nil, dbErr(what, err)
		}
		out = append(out, c)
	}
	return out, dbErr(what, rows.Err())
}

// EndReview completes or abandons the reviewer's active session, releasing
// the lock. Completing needs an unexpired lock (a lapsed one may have been
// taken over in spirit, and its corrections are no longer guaranteed
// exclusive); abandoning only needs the session to be active. Otherwise:
// docplatform.ErrNotActive.
func (s *Store) EndReview(ctx context.Context, sessionID, reviewerID string, status docplatform.ReviewStatus) (docplatform.ReviewSession, error) {
	const what = "end review"
	if status != docplatform.ReviewCompleted && status != docplatform.ReviewAbandoned {
		return docplatform.ReviewSession{}, invalid(what, "status must be COMPLETED or ABANDONED")
	}
	now := s.now()
	cond := ""
	args := []any{sessionID, reviewerID, string(status), s.at(now)}
	if status == docplatform.ReviewCompleted {
		cond = " AND expires_at > $4"
	}
	res, err := s.w.ExecContext(ctx, `UPDATE review_sessions SET status = $3, ended_at = $4 WHERE id = $1 AND reviewer_id = $2 AND status = 'ACTIVE'`+cond, args...)
	if err := affected(what, res, err); errors.Is(err, docplatform.ErrNotFound) {
		return docplatform.ReviewSession{}, docplatform.ErrNotActive
	} else if err != nil {
		return docplatform.ReviewSession{}, err
	}
	return s.ReviewSession(ctx, sessionID)
}
