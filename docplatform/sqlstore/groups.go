package sqlstore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/govkit/govkit/docplatform"
)

const groupCols = `g.id, g.name, g.description, g.created_by, g.created_at, g.deleted_at`

func scanGroup(row interface{ Scan(...any) error }, extra ...any) (docplatform.Group, error) {
	var g docplatform.Group
	dest := append([]any{&g.ID, &g.Name, &g.Description, &g.CreatedBy,
		timeCol{&g.CreatedAt}, nullTimeCol{&g.DeletedAt}}, extra...)
	err := row.Scan(dest...)
	return g, err
}

// groupName trims a group name and refuses an empty one.
func groupName(what, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", invalid(what, "name is empty")
	}
	return name, nil
}

// CreateGroup makes a group. Names are unique among live groups, ignoring
// case: a second "Finance" is ErrConflict, while the name of a soft-deleted
// group is free again.
func (s *Store) CreateGroup(ctx context.Context, name, description string, createdBy string) (docplatform.Group, error) {
	const what = "create group"
	name, err := groupName(what, name)
	if err != nil {
		return docplatform.Group{}, err
	}
	g := docplatform.Group{ID: newID(), Name: name, Description: description, CreatedBy: createdBy, CreatedAt: s.now()}
	_, err = s.w.ExecContext(ctx,
		`INSERT INTO groups (id, name, description, created_by, created_at) VALUES ($1, $2, $3, $4, $5)`,
		g.ID, g.Name, g.Description, g.CreatedBy, s.at(g.CreatedAt))
	if err != nil {
		return docplatform.Group{}, dbErr(what, err)
	}
	return g, nil
}

// Group returns a group by id, soft-deleted or not (DeletedAt tells).
func (s *Store) Group(ctx context.Context, id string) (docplatform.Group, error) {
	g, err := scanGroup(s.queryRow(ctx, `SELECT `+groupCols+` FROM groups g WHERE g.id = $1`, id))
	if err != nil {
		return docplatform.Group{}, dbErr("group", err)
	}
	return g, nil
}

// ListGroups returns the live groups by name.
func (s *Store) ListGroups(ctx context.Context) ([]docplatform.Group, error) {
	const what = "list groups"
	rows, err := s.query(ctx,
		`SELECT `+groupCols+` FROM groups g WHERE g.deleted_at IS NULL ORDER BY lower(g.name), g.id`)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	groups := []docplatform.Group{}
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return nil, dbErr(what, err)
		}
		groups = append(groups, g)
	}
	return groups, dbErr(what, rows.Err())
}

// UpdateGroup changes a live group's name and description (the other
// fields are not the caller's to change). Unknown or soft-deleted:
// ErrNotFound; a name another live group has: ErrConflict.
func (s *Store) UpdateGroup(ctx context.Context, g docplatform.Group) error {
	const what = "update group"
	name, err := groupName(what, g.Name)
	if err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx,
		`UPDATE groups SET name = $2, description = $3 WHERE id = $1 AND deleted_at IS NULL`,
		g.ID, name, g.Description)
	return affected(what, res, err)
}

// SoftDeleteGroup marks a live group deleted. Its rows stay (resources keep
// their group_id for audit), but from now on it grants nothing: its
// memberships and API key stop counting at once. Deleting it again is
// ErrNotFound, as is an unknown id.
func (s *Store) SoftDeleteGroup(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx,
		`UPDATE groups SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL`, id, s.at(s.now()))
	return affected("soft delete group", res, err)
}

// UserGroups returns the user's live groups with the user's role in each,
// by group name.
func (s *Store) UserGroups(ctx context.Context, userID string) ([]docplatform.GroupRole, error) {
	const what = "user groups"
	rows, err := s.query(ctx, `
		SELECT `+groupCols+`, m.role
		FROM memberships m JOIN groups g ON g.id = m.group_id
		WHERE m.user_id = $1 AND g.deleted_at IS NULL
		ORDER BY lower(g.name), g.id`, userID)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	out := []docplatform.GroupRole{}
	for rows.Next() {
		var role string
		g, err := scanGroup(rows, &role)
		if err != nil {
			return nil, dbErr(what, err)
		}
		out = append(out, docplatform.GroupRole{Group: g, Role: docplatform.Role(role)})
	}
	return out, dbErr(what, rows.Err())
}

// requireLiveGroup fails with ErrNotFound unless the group exists and is
// not soft-deleted.
func requireLiveGroup(ctx context.Context, q queryer, what, groupID string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM groups WHERE id = $1 AND deleted_at IS NULL`, groupID).Scan(&one)
	if err != nil {
		return dbErr(what+": group", err)
	}
	return nil
}

// SetMembership gives a user a role in a live group, or changes the role
// the user has there. An unknown user, or an unknown or soft-deleted group,
// is ErrNotFound; a role other than MEMBER or ADMIN is ErrInvalid.
func (s *Store) SetMembership(ctx context.Context, m docplatform.Membership) error {
	const what = "set membership"
	if !m.Role.Valid() {
		return invalid(what, "role must be MEMBER or ADMIN")
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := requireLiveGroup(ctx, tx, what, m.GroupID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
			INSERT INTO memberships (user_id, group_id, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (user_id, group_id) DO UPDATE SET role = excluded.role`,
			m.UserID, m.GroupID, string(m.Role), s.at(s.now()))
		return dbErr(what, err)
	})
}

// RemoveMembership takes a user out of a group; no such membership is
// ErrNotFound.
func (s *Store) RemoveMembership(ctx context.Context, userID, groupID string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM memberships WHERE user_id = $1 AND group_id = $2`, userID, groupID)
	return affected("remove membership", res, err)
}

// Memberships lists the members of a live group, earliest first; a
// soft-deleted or unknown group has none.
func (s *Store) Memberships(ctx context.Context, groupID string) ([]docplatform.Membership, error) {
	const what = "memberships"
	rows, err := s.r.QueryContext(ctx, `
		SELECT m.user_id, m.group_id, m.role, m.created_at
		FROM memberships m JOIN groups g ON g.id = m.group_id
		WHERE m.group_id = $1 AND g.deleted_at IS NULL
		ORDER BY m.created_at, m.user_id`, groupID)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	out := []docplatform.Membership{}
	for rows.Next() {
		var m docplatform.Membership
		var role string
		if err := rows.Scan(&m.UserID, &m.GroupID, &role, timeCol{&m.CreatedAt}); err != nil {
			return nil, dbErr(what, err)
		}
		m.Role = docplatform.Role(role)
		out = append(out, m)
	}
	return out, dbErr(what, rows.Err())
}
