package sqlstore

import (
	"context"
	"database/sql"
	"strings"

	"github.com/govkit/govkit/docplatform"
)

const userCols = `id, email, name, preferred_username, is_system_admin, created_at, updated_at`

func scanUser(row interface{ Scan(...any) error }) (docplatform.User, error) {
	var u docplatform.User
	err := row.Scan(&u.ID, &u.Email, &u.Name, &u.PreferredUsername, &u.IsSystemAdmin,
		timeCol{&u.CreatedAt}, timeCol{&u.UpdatedAt})
	return u, err
}

// UpsertUser records a user seen at login: it inserts the user or updates
// the profile fields (email, name, preferred_username). It never changes
// the system-admin flag — that is only SetSystemAdmin's to change, so a
// provider cannot grant it. The user's id is the provider's subject.
func (s *Store) UpsertUser(ctx context.Context, u docplatform.User) (docplatform.User, error) {
	const what = "upsert user"
	if strings.TrimSpace(u.ID) == "" {
		return docplatform.User{}, invalid(what, "id (subject) is empty")
	}
	t := s.at(s.now())
	row := s.w.QueryRowContext(ctx, `
		INSERT INTO users (`+userCols+`)
		VALUES ($1, $2, $3, $4, FALSE, $5, $5)
		ON CONFLICT (id) DO UPDATE SET
			email = excluded.email,
			name = excluded.name,
			preferred_username = excluded.preferred_username,
			updated_at = excluded.updated_at
		RETURNING `+userCols,
		u.ID, u.Email, u.Name, u.PreferredUsername, t)
	out, err := scanUser(row)
	if err != nil {
		return docplatform.User{}, dbErr(what, err)
	}
	return out, nil
}

// User returns the user with the given id (the provider's subject).
func (s *Store) User(ctx context.Context, id string) (docplatform.User, error) {
	u, err := scanUser(s.queryRow(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, id))
	if err != nil {
		return docplatform.User{}, dbErr("user", err)
	}
	return u, nil
}

// UserByEmail finds a user by email address, ignoring case. Providers do
// not all promise unique addresses, so when two users share one the answer
// is ErrConflict rather than a guess; the caller can then ask by id.
func (s *Store) UserByEmail(ctx context.Context, email string) (docplatform.User, error) {
	const what = "user by email"
	if strings.TrimSpace(email) == "" {
		return docplatform.User{}, notFound(what)
	}
	rows, err := s.r.QueryContext(ctx,
		`SELECT `+userCols+` FROM users WHERE lower(email) = lower($1) AND email <> '' ORDER BY id LIMIT 2`, email)
	if err != nil {
		return docplatform.User{}, dbErr(what, err)
	}
	defer rows.Close()
	var found []docplatform.User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return docplatform.User{}, dbErr(what, err)
		}
		found = append(found, u)
	}
	if err := rows.Err(); err != nil {
		return docplatform.User{}, dbErr(what, err)
	}
	switch len(found) {
	case 0:
		return docplatform.User{}, notFound(what)
	case 1:
		return found[0], nil
	}
	return docplatform.User{}, dbErr(what+": more than one user has this email", docplatform.ErrConflict)
}

// ListUsers returns every user, oldest first.
func (s *Store) ListUsers(ctx context.Context) ([]docplatform.User, error) {
	const what = "list users"
	rows, err := s.r.QueryContext(ctx, `SELECT `+userCols+` FROM users ORDER BY created_at, id`)
	if err != nil {
		return nil, dbErr(what, err)
	}
	defer rows.Close()
	users := []docplatform.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, dbErr(what, err)
		}
		users = append(users, u)
	}
	return users, dbErr(what, rows.Err())
}

// SetSystemAdmin grants or withdraws the system-admin flag.
func (s *Store) SetSystemAdmin(ctx context.Context, userID string, admin bool) error {
	res, err := s.w.ExecContext(ctx,
		`UPDATE users SET is_system_admin = $2, updated_at = $3 WHERE id = $1`,
		userID, admin, s.at(s.now()))
	return affected("set system admin", res, err)
}

// DeleteUser removes a user and the user's memberships. API keys the user
// created stay: they belong to their group, and created_by is only an
// audit note.
func (s *Store) DeleteUser(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM users WHERE id = $1`, id)
	return affected("delete user", res, err)
}

// accessQuery is the one read behind every token-authenticated request:
// the user's row, then one row per membership of a live group. The two
// halves share no columns, so the profile is read once however many
// groups the user is in; rows come in no particular order.
const accessQuery = `
		SELECT u.email, u.name, u.preferred_username, u.is_system_admin, NULL, NULL, NULL
		FROM users u WHERE u.id = $1
		UNION ALL
		SELECT NULL, NULL, NULL, NULL, g.id, g.name, m.role
		FROM memberships m JOIN groups g ON g.id = m.group_id
		WHERE m.user_id = $1 AND g.deleted_at IS NULL`

// Access loads, in one query, what authorization and /me need about a
// user: the profile, the system-admin flag and the user's role in each
// live group, as a list and as a map (Roles). A user without a row (a
// valid token whose holder never passed the callback) is simply nobody:
// Exists false, no groups, an empty Roles, no error.
//
// On SQLite the answer may come from the access cache, which is exact (see
// accessCache): whatever was committed before the call is in the answer.
// The answer's Groups and Roles may be shared with other calls: read-only.
func (s *Store) Access(ctx context.Context, userID string) (docplatform.UserAccess, error) {
	if s.ac == nil {
		return s.readAccess(ctx, userID)
	}
	gen, err := s.ac.check()
	if err != nil {
		return s.readAccess(ctx, userID)
	}
	if a, ok := s.ac.access(userID, gen); ok {
		if err := expired(ctx); err != nil {
			return docplatform.UserAccess{User: docplatform.User{ID: userID}}, dbErr("user access", err)
		}
		return a, nil
	}
	a, err := s.readAccess(ctx, userID)
	if err == nil {
		s.ac.putAccess(userID, gen, a)
	}
	return a, err
}

// readAccess is Access from the database.
func (s *Store) readAccess(ctx context.Context, userID string) (docplatform.UserAccess, error) {
	const what = "user access"
	nobody := docplatform.UserAccess{User: docplatform.User{ID: userID}}
	a := nobody
	rows, err := s.query(ctx, accessQuery, userID)
	if err != nil {
		return nobody, dbErr(what, err)
	}
	defer rows.Close()
	// The scan targets escape (Scan takes them as any): one struct for
	// all rows is one allocation per read instead of seven per row. Scan
	// resets each of them (Valid false on NULL), so reuse is safe.
	var c struct {
		email, name, username, groupID, groupName, role sql.NullString
		admin                                           sql.NullBool
	}
	for rows.Next() {
		if err := rows.Scan(&c.email, &c.name, &c.username, &c.admin, &c.groupID, &c.groupName, &c.role); err != nil {
			return nobody, dbErr(what, err)
		}
		if c.admin.Valid {
			a.Exists = true
			a.User.Email, a.User.Name, a.User.PreferredUsername, a.User.IsSystemAdmin = c.email.String, c.name.String, c.username.String, c.admin.Bool
		} else if c.groupID.Valid {
			a.Groups = append(a.Groups, docplatform.GroupAccess{GroupID: c.groupID.String, GroupName: c.groupName.String, Role: docplatform.Role(c.role.String)})
		}
	}
	if err := rows.Err(); err != nil {
		return nobody, dbErr(what, err)
	}
	if !a.Exists {
		nobody.Roles = map[string]docplatform.Role{}
		return nobody, nil
	}
	a.Roles = make(map[string]docplatform.Role, len(a.Groups))
	for _, g := range a.Groups {
		a.Roles[g.GroupID] = g.Role
	}
	return a, nil
}

// UserAccess is Access reduced to what authorization needs: the
// system-admin flag and the user's role in each live group (an empty map,
// never nil). The map is the caller's own, not Access's shared one.
func (s *Store) UserAccess(ctx context.Context, userID string) (isSystemAdmin bool, roles map[string]docplatform.Role, err error) {
	a, err := s.Access(ctx, userID)
	roles = make(map[string]docplatform.Role, len(a.Groups))
	if err != nil {
		return false, roles, err
	}
	for _, g := range a.Groups {
		roles[g.GroupID] = g.Role
	}
	return a.User.IsSystemAdmin, roles, nil
}
