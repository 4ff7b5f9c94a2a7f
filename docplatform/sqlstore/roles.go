package sqlstore

import (
	"context"
	"database/sql"

	"github.com/govkit/govkit/docplatform"
)

// ChangeMembership sets userID's role in a live group (role MEMBER or
// ADMIN, adding the user when not a member) or removes the membership
// (role ""), and returns the role held before ("" for none). A change
// that would leave the group without an ADMIN is docplatform.ErrLastAdmin;
// removing a non-member is ErrNotFound; an unknown or soft-deleted group
// is ErrNotFound.
//
// The check and the change are one transaction that first locks the
// group's row, so two admins demoting each other at once cannot both
// succeed and leave the group unmanaged (on SQLite the single writer
// serialises them).
func (s *Store) ChangeMembership(ctx context.Context, groupID, userID string, role docplatform.Role) (from docplatform.Role, err error) {
	const what = "change membership"
	if role != "" && !role.Valid() {
		return "", invalid(what, "role must be MEMBER or ADMIN")
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		lock := `SELECT id FROM groups WHERE id = $1 AND deleted_at IS NULL`
		if s.dialect == Postgres {
			lock += ` FOR UPDATE`
		}
		var id string
		if err := tx.QueryRowContext(ctx, lock, groupID).Scan(&id); err != nil {
			return dbErr(what, err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT user_id, role FROM memberships WHERE group_id = $1`, groupID)
		if err != nil {
			return dbErr(what, err)
		}
		admins := 0
		for rows.Next() {
			var uid, r string
			if err := rows.Scan(&uid, &r); err != nil {
				rows.Close()
				return dbErr(what, err)
			}
			if uid == userID {
				from = docplatform.Role(r)
			}
			if docplatform.Role(r) == docplatform.RoleAdmin {
				admins++
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return dbErr(what, err)
		}
		if from == docplatform.RoleAdmin && role != docplatform.RoleAdmin && admins == 1 {
			return docplatform.ErrLastAdmin
		}
		if role == "" {
			res, err := tx.ExecContext(ctx, `DELETE FROM memberships WHERE user_id = $1 AND group_id = $2`, userID, groupID)
			return affected(what, res, err)
		}
		_, err = tx.ExecContext(ctx, `
			INSERT INTO memberships (user_id, group_id, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (user_id, group_id) DO UPDATE SET role = excluded.role`,
			userID, groupID, string(role), s.at(s.now()))
		return dbErr(what, err)
	})
	return from, err
}
