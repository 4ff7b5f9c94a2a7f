package sqlstore

import (
	"context"
	"errors"
	"strings"

	"github.com/govkit/govkit/docplatform"
)

// GrantAdmin makes a user a system admin, found by email (ignoring case)
// or by subject; exactly one of the two is given. It is how an operator
// makes the first admin (`govkit docplatform grant-admin`). By subject, a
// user who has not signed in yet is created, so the first admin can be
// named before their first login (the profile fills in at login); by email
// the user must exist, since only a login tells the email's subject. An
// email two users share is ErrConflict: the operator then names the
// subject.
func (s *Store) GrantAdmin(ctx context.Context, email, sub string) (docplatform.User, error) {
	const what = "grant admin"
	email, sub = strings.TrimSpace(email), strings.TrimSpace(sub)
	if (email == "") == (sub == "") {
		return docplatform.User{}, invalid(what, "give exactly one of email and subject")
	}
	var u docplatform.User
	var err error
	if email != "" {
		u, err = s.UserByEmail(ctx, email)
	} else {
		u, err = s.User(ctx, sub)
		if errors.Is(err, docplatform.ErrNotFound) {
			u, err = s.UpsertUser(ctx, docplatform.User{ID: sub})
		}
	}
	if err != nil {
		return docplatform.User{}, err
	}
	if err := s.SetSystemAdmin(ctx, u.ID, true); err != nil {
		return docplatform.User{}, err
	}
	u.IsSystemAdmin = true
	return u, nil
}
