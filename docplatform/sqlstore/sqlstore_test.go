package sqlstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/testsvc"
)

// backend names a fresh, empty database of one dialect.
type backend struct {
	name string
	url  func(t *testing.T) string
}

var backends = []backend{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "platform.db") }},
	{"postgres", func(t *testing.T) string { return testsvc.RequirePostgres(t) }},
}

func openT(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStore runs the whole suite against each database. Cases share one
// store per database and keep apart by creating their own users and groups;
// the few that need an empty database open their own.
func TestStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openT(t, b.url(t))
			for _, c := range suite {
				t.Run(c.name, func(t *testing.T) { c.run(t, s) })
			}
			for _, c := range freshSuite {
				t.Run(c.name, func(t *testing.T) {
					url := b.url(t)
					c.run(t, openT(t, url), url)
				})
			}
			t.Run("replicas starting together on an empty database migrate it once", func(t *testing.T) {
				url := b.url(t)
				var wg sync.WaitGroup
				errs := make(chan error, 3)
				for range 3 {
					wg.Go(func() {
						st, err := Open(ctx, url)
						if err != nil {
							errs <- err
							return
						}
						_, err = st.UpsertUser(ctx, docplatform.User{ID: uniq("sub")})
						errs <- errors.Join(err, st.Close())
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					noErr(t, err)
				}
			})
		})
	}
}

var ctx = context.Background()

func uniq(prefix string) string { return prefix + "-" + rand.Text()[:10] }

func mkUser(t *testing.T, s *Store) docplatform.User {
	t.Helper()
	id := uniq("sub")
	u, err := s.UpsertUser(ctx, docplatform.User{ID: id, Email: id + "@example.test", Name: "N " + id, PreferredUsername: id})
	if err != nil {
		t.Fatalf("UpsertUser: %v", err)
	}
	return u
}

func mkGroup(t *testing.T, s *Store) docplatform.Group {
	t.Helper()
	g, err := s.CreateGroup(ctx, uniq("group"), "desc", "creator")
	if err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	return g
}

func member(t *testing.T, s *Store, u docplatform.User, g docplatform.Group, r docplatform.Role) {
	t.Helper()
	if err := s.SetMembership(ctx, docplatform.Membership{UserID: u.ID, GroupID: g.ID, Role: r}); err != nil {
		t.Fatalf("SetMembership: %v", err)
	}
}

func mkKey(t *testing.T, s *Store, g docplatform.Group) docplatform.APIKey {
	t.Helper()
	k, err := s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: g.ID, Prefix: "gk_" + rand.Text()[:4], Hash: randHash(), CreatedBy: "creator"})
	if err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	return k
}

func randHash() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return b
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func recent(t *testing.T, what string, tm time.Time) {
	t.Helper()
	if tm.Location() != time.UTC {
		t.Errorf("%s location = %v, want UTC", what, tm.Location())
	}
	if d := time.Since(tm); d < 0 || d > time.Hour {
		t.Errorf("%s = %v, not a time of this test run", what, tm)
	}
}

type suiteCase struct {
	name string
	run  func(t *testing.T, s *Store)
}

var suite = []suiteCase{
	// Users.
	{"upsert inserts a user with UTC times and no admin flag", func(t *testing.T, s *Store) {
		u := mkUser(t, s)
		got, err := s.User(ctx, u.ID)
		noErr(t, err)
		if got != u {
			t.Fatalf("User = %+v, want %+v", got, u)
		}
		if got.IsSystemAdmin {
			t.Error("a new user is a system admin")
		}
		recent(t, "CreatedAt", got.CreatedAt)
		recent(t, "UpdatedAt", got.UpdatedAt)
	}},
	{"upsert updates profile fields and never the admin flag", func(t *testing.T, s *Store) {
		u := mkUser(t, s)
		noErr(t, s.SetSystemAdmin(ctx, u.ID, true))
		got, err := s.UpsertUser(ctx, docplatform.User{ID: u.ID, Email: "new@example.test", Name: "New", PreferredUsername: "newname", IsSystemAdmin: false})
		noErr(t, err)
		if got.Email != "new@example.test" || got.Name != "New" || got.PreferredUsername != "newname" {
			t.Errorf("profile not updated: %+v", got)
		}
		if !got.IsSystemAdmin {
			t.Error("upsert cleared the admin flag")
		}
		if !got.CreatedAt.Equal(u.CreatedAt) {
			t.Errorf("CreatedAt changed from %v to %v", u.CreatedAt, got.CreatedAt)
		}
		other := docplatform.User{ID: uniq("sub"), IsSystemAdmin: true}
		got, err = s.UpsertUser(ctx, other)
		noErr(t, err)
		if got.IsSystemAdmin {
			t.Error("upsert granted the admin flag")
		}
	}},
	{"upsert without an email stores an empty one", func(t *testing.T, s *Store) {
		got, err := s.UpsertUser(ctx, docplatform.User{ID: uniq("sub"), Name: "No Mail"})
		noErr(t, err)
		if got.Email != "" {
			t.Errorf("Email = %q", got.Email)
		}
	}},
	{"upsert with an empty id is invalid", func(t *testing.T, s *Store) {
		_, err := s.UpsertUser(ctx, docplatform.User{ID: " ", Email: "x@example.test"})
		wantErr(t, err, docplatform.ErrInvalid)
	}},
	{"unknown user is not found", func(t *testing.T, s *Store) {
		_, err := s.User(ctx, "nobody")
		wantErr(t, err, docplatform.ErrNotFound)
	}},
	{"user by email ignores case", func(t *testing.T, s *Store) {
		u := mkUser(t, s)
		u2, err := s.UpsertUser(ctx, docplatform.User{ID: u.ID, Email: "Mixed." + u.ID + "@Example.TEST"})
		noErr(t, err)
		got, err := s.UserByEmail(ctx, "mixed."+u.ID+"@example.test")
		noErr(t, err)
		if got.ID != u.ID || got.Email != u2.Email {
			t.Errorf("UserByEmail = %+v", got)
		}
	}},
	{"user by empty or unknown email is not found", func(t *testing.T, s *Store) {
		_, err := s.UpsertUser(ctx, docplatform.User{ID: uniq("sub")})
		noErr(t, err)
		_, err = s.UserByEmail(ctx, "")
		wantErr(t, err, docplatform.ErrNotFound)
		_, err = s.UserByEmail(ctx, "nobody@example.test")
		wantErr(t, err, docplatform.ErrNotFound)
	}},
	{"user by email shared by two users is a conflict", func(t *testing.T, s *Store) {
		mail := uniq("shared") + "@example.test"
		for range 2 {
			_, err := s.UpsertUser(ctx, docplatform.User{ID: uniq("sub"), Email: mail})
			noErr(t, err)
		}
		_, err := s.UserByEmail(ctx, mail)
		wantErr(t, err, docplatform.ErrConflict)
	}},
	{"set system admin grants and withdraws", func(t *testing.T, s *Store) {
		u := mkUser(t, s)
		for _, admin := range []bool{true, false} {
			noErr(t, s.SetSystemAdmin(ctx, u.ID, admin))
			got, err := s.User(ctx, u.ID)
			noErr(t, err)
			if got.IsSystemAdmin != admin {
				t.Errorf("IsSystemAdmin = %v, want %v", got.IsSystemAdmin, admin)
			}
		}
	}},
	{"set system admin of an unknown user is not found", func(t *testing.T, s *Store) {
		wantErr(t, s.SetSystemAdmin(ctx, "nobody", true), docplatform.ErrNotFound)
	}},
	{"delete user removes the user and the memberships but not the keys they created", func(t *testing.T, s *Store) {
		u, g := mkUser(t, s), mkGroup(t, s)
		member(t, s, u, g, docplatform.RoleAdmin)
		k, err := s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: g.ID, Prefix: "gk_x", Hash: randHash(), CreatedBy: u.ID})
		noErr(t, err)
		noErr(t, s.DeleteUser(ctx, u.ID))
		_, err = s.User(ctx, u.ID)
		wantErr(t, err, docplatform.ErrNotFound)
		ms, err := s.Memberships(ctx, g.ID)
		noErr(t, err)
		if len(ms) != 0 {
			t.Errorf("memberships left: %+v", ms)
		}
		got, err := s.APIKeyByHash(ctx, k.Hash)
		noErr(t, err)
		if got.CreatedBy != u.ID {
			t.Errorf("CreatedBy = %q", got.CreatedBy)
		}
		wantErr(t, s.DeleteUser(ctx, u.ID), docplatform.ErrNotFound)
	}},

	// UserAccess.
	{"user access of an unknown user is nobody, not an error", func(t *testing.T, s *Store) {
		admin, roles, err := s.UserAccess(ctx, "never-logged-in")
		noErr(t, err)
		if admin || roles == nil || len(roles) != 0 {
			t.Errorf("UserAccess = %v, %#v", admin, roles)
		}
	}},
	{"user access of an admin without groups", func(t *testing.T, s *Store) {
		u := mkUser(t, s)
		noErr(t, s.SetSystemAdmin(ctx, u.ID, true))
		admin, roles, err := s.UserAccess(ctx, u.ID)
		noErr(t, err)
		if !admin || roles == nil || len(roles) != 0 {
			t.Errorf("UserAccess = %v, %#v", admin, roles)
		}
	}},
	{"user access maps live groups to roles and leaves soft-deleted groups out", func(t *testing.T, s *Store) {
		u := mkUser(t, s)
		g1, g2, gone := mkGroup(t, s), mkGroup(t, s), mkGroup(t, s)
		member(t, s, u, g1, docplatform.RoleMember)
		member(t, s, u, g2, docplatform.RoleAdmin)
		member(t, s, u, gone, docplatform.RoleAdmin)
		noErr(t, s.SoftDeleteGroup(ctx, gone.ID))
		admin, roles, err := s.UserAccess(ctx, u.ID)
		noErr(t, err)
		want := map[string]docplatform.Role{g1.ID: docplatform.RoleMember, g2.ID: docplatform.RoleAdmin}
		if admin || fmt.Sprint(roles) != fmt.Sprint(want) {
			t.Errorf("UserAccess = %v, %v; want false, %v", admin, roles, want)
		}
	}},
	{"user access of an admin whose only group is soft-deleted keeps the flag", func(t *testing.T, s *Store) {
		u, g := mkUser(t, s), mkGroup(t, s)
		noErr(t, s.SetSystemAdmin(ctx, u.ID, true))
		member(t, s, u, g, docplatform.RoleMember)
		noErr(t, s.SoftDeleteGroup(ctx, g.ID))
		admin, roles, err := s.UserAccess(ctx, u.ID)
		noErr(t, err)
		if !admin || len(roles) != 0 {
			t.Errorf("UserAccess = %v, %v", admin, roles)
		}
	}},

	{"access reads profile, flag and live groups with names in one query", func(t *testing.T, s *Store) {
		u := mkUser(t, s)
		g, gone := mkGroup(t, s), mkGroup(t, s)
		member(t, s, u, g, docplatform.RoleAdmin)
		member(t, s, u, gone, docplatform.RoleMember)
		noErr(t, s.SoftDeleteGroup(ctx, gone.ID))
		a, err := s.Access(ctx, u.ID)
		noErr(t, err)
		want := docplatform.UserAccess{Exists: true,
			User:   docplatform.User{ID: u.ID, Email: u.Email, Name: u.Name, PreferredUsername: u.PreferredUsername},
			Groups: []docplatform.GroupAccess{{GroupID: g.ID, GroupName: g.Name, Role: docplatform.RoleAdmin}},
			Roles:  map[string]docplatform.Role{g.ID: docplatform.RoleAdmin}}
		if fmt.Sprint(a) != fmt.Sprint(want) {
			t.Errorf("Access = %+v\nwant     %+v", a, want)
		}
		none, err := s.Access(ctx, "never-logged-in")
		noErr(t, err)
		if none.Exists || none.User.ID != "never-logged-in" || len(none.Groups) != 0 || none.Roles == nil || len(none.Roles) != 0 {
			t.Errorf("Access of an unknown user = %+v", none)
		}
	}},

	{"API key grant is the key's id and live group, and nothing for a deleted group's key", func(t *testing.T, s *Store) {
		u, g, other := mkUser(t, s), mkGroup(t, s), mkGroup(t, s)
		k, err := s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: g.ID, Prefix: "gk_grant", Hash: randHash(), CreatedBy: u.ID})
		noErr(t, err)
		gr, err := s.APIKeyGrant(ctx, k.Hash)
		noErr(t, err)
		if gr.KeyID != k.ID || gr.GroupID != g.ID || len(gr.Roles) != 1 || gr.Roles[g.ID] != docplatform.RoleMember {
			t.Errorf("APIKeyGrant = %+v; want %q, %q as MEMBER", gr, k.ID, g.ID)
		}
		_, err = s.APIKeyGrant(ctx, randHash())
		wantErr(t, err, docplatform.ErrNotFound)
		_, err = s.APIKeyGrant(ctx, nil)
		wantErr(t, err, docplatform.ErrNotFound)
		ok, err := s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: other.ID, Prefix: "gk_other", Hash: randHash(), CreatedBy: u.ID})
		noErr(t, err)
		noErr(t, s.SoftDeleteGroup(ctx, other.ID))
		_, err = s.APIKeyGrant(ctx, ok.Hash)
		wantErr(t, err, docplatform.ErrNotFound)
	}},

	// Groups.
	{"create group returns what it stored", func(t *testing.T, s *Store) {
		name := uniq("Trimmed")
		g, err := s.CreateGroup(ctx, "  "+name+"  ", "about", "u-1")
		noErr(t, err)
		if g.ID == "" || g.Name != name || g.Description != "about" || g.CreatedBy != "u-1" || g.DeletedAt != nil {
			t.Errorf("CreateGroup = %+v", g)
		}
		recent(t, "CreatedAt", g.CreatedAt)
		got, err := s.Group(ctx, g.ID)
		noErr(t, err)
		if fmt.Sprint(got) != fmt.Sprint(g) {
			t.Errorf("Group = %+v, want %+v", got, g)
		}
	}},
	{"group ids are random UUIDv4", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		if len(g.ID) != 36 || g.ID[14] != '4' {
			t.Errorf("id %q is not a UUIDv4", g.ID)
		}
		if g2 := mkGroup(t, s); g2.ID == g.ID {
			t.Error("two groups share an id")
		}
	}},
	{"group names are unique among live groups ignoring case", func(t *testing.T, s *Store) {
		name := uniq("Finance")
		_, err := s.CreateGroup(ctx, name, "", "")
		noErr(t, err)
		_, err = s.CreateGroup(ctx, name, "", "")
		wantErr(t, err, docplatform.ErrConflict)
		_, err = s.CreateGroup(ctx, "  "+name+" ", "", "")
		wantErr(t, err, docplatform.ErrConflict)
		_, err = s.CreateGroup(ctx, bytesUpper(name), "", "")
		wantErr(t, err, docplatform.ErrConflict)
	}},
	{"the name of a soft-deleted group is free again", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		noErr(t, s.SoftDeleteGroup(ctx, g.ID))
		g2, err := s.CreateGroup(ctx, g.Name, "", "")
		noErr(t, err)
		if g2.ID == g.ID {
			t.Error("reused the deleted group's id")
		}
	}},
	{"a group name must not be empty", func(t *testing.T, s *Store) {
		_, err := s.CreateGroup(ctx, " \t", "", "")
		wantErr(t, err, docplatform.ErrInvalid)
		g := mkGroup(t, s)
		g.Name = ""
		wantErr(t, s.UpdateGroup(ctx, g), docplatform.ErrInvalid)
	}},
	{"unknown group is not found", func(t *testing.T, s *Store) {
		_, err := s.Group(ctx, "00000000-0000-4000-8000-000000000000")
		wantErr(t, err, docplatform.ErrNotFound)
	}},
	{"a soft-deleted group is still returned by id with DeletedAt set", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		noErr(t, s.SoftDeleteGroup(ctx, g.ID))
		got, err := s.Group(ctx, g.ID)
		noErr(t, err)
		if got.DeletedAt == nil {
			t.Fatal("DeletedAt not set")
		}
		recent(t, "DeletedAt", *got.DeletedAt)
	}},
	{"soft-deleting twice or an unknown group is not found", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		noErr(t, s.SoftDeleteGroup(ctx, g.ID))
		wantErr(t, s.SoftDeleteGroup(ctx, g.ID), docplatform.ErrNotFound)
		wantErr(t, s.SoftDeleteGroup(ctx, "nope"), docplatform.ErrNotFound)
	}},
	{"update group changes name and description only", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		upd := g
		upd.Name = uniq("Renamed")
		upd.Description = "new words"
		upd.CreatedBy = "someone else"
		upd.CreatedAt = time.Unix(0, 0)
		noErr(t, s.UpdateGroup(ctx, upd))
		got, err := s.Group(ctx, g.ID)
		noErr(t, err)
		if got.Name != upd.Name || got.Description != "new words" || got.CreatedBy != g.CreatedBy || !got.CreatedAt.Equal(g.CreatedAt) {
			t.Errorf("after update: %+v", got)
		}
	}},
	{"update group to another live group's name is a conflict", func(t *testing.T, s *Store) {
		a, b := mkGroup(t, s), mkGroup(t, s)
		b.Name = a.Name
		wantErr(t, s.UpdateGroup(ctx, b), docplatform.ErrConflict)
	}},
	{"update of a soft-deleted or unknown group is not found", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		noErr(t, s.SoftDeleteGroup(ctx, g.ID))
		wantErr(t, s.UpdateGroup(ctx, g), docplatform.ErrNotFound)
		wantErr(t, s.UpdateGroup(ctx, docplatform.Group{ID: "nope", Name: "x"}), docplatform.ErrNotFound)
	}},

	// Memberships.
	{"set membership adds and then changes the role", func(t *testing.T, s *Store) {
		u, g := mkUser(t, s), mkGroup(t, s)
		member(t, s, u, g, docplatform.RoleMember)
		member(t, s, u, g, docplatform.RoleAdmin)
		ms, err := s.Memberships(ctx, g.ID)
		noErr(t, err)
		if len(ms) != 1 || ms[0].UserID != u.ID || ms[0].GroupID != g.ID || ms[0].Role != docplatform.RoleAdmin {
			t.Fatalf("Memberships = %+v", ms)
		}
		recent(t, "CreatedAt", ms[0].CreatedAt)
	}},
	{"set membership with a role other than MEMBER or ADMIN is invalid", func(t *testing.T, s *Store) {
		u, g := mkUser(t, s), mkGroup(t, s)
		for _, r := range []docplatform.Role{"", "OWNER", "admin"} {
			err := s.SetMembership(ctx, docplatform.Membership{UserID: u.ID, GroupID: g.ID, Role: r})
			wantErr(t, err, docplatform.ErrInvalid)
		}
	}},
	{"set membership of an unknown user or group is not found", func(t *testing.T, s *Store) {
		u, g := mkUser(t, s), mkGroup(t, s)
		wantErr(t, s.SetMembership(ctx, docplatform.Membership{UserID: "nobody", GroupID: g.ID, Role: docplatform.RoleMember}), docplatform.ErrNotFound)
		wantErr(t, s.SetMembership(ctx, docplatform.Membership{UserID: u.ID, GroupID: "nope", Role: docplatform.RoleMember}), docplatform.ErrNotFound)
	}},
	{"no membership can be added to a soft-deleted group", func(t *testing.T, s *Store) {
		u, g := mkUser(t, s), mkGroup(t, s)
		noErr(t, s.SoftDeleteGroup(ctx, g.ID))
		wantErr(t, s.SetMembership(ctx, docplatform.Membership{UserID: u.ID, GroupID: g.ID, Role: docplatform.RoleMember}), docplatform.ErrNotFound)
	}},
	{"remove membership, and removing a missing one is not found", func(t *testing.T, s *Store) {
		u, g := mkUser(t, s), mkGroup(t, s)
		member(t, s, u, g, docplatform.RoleMember)
		noErr(t, s.RemoveMembership(ctx, u.ID, g.ID))
		wantErr(t, s.RemoveMembership(ctx, u.ID, g.ID), docplatform.ErrNotFound)
		_, roles, err := s.UserAccess(ctx, u.ID)
		noErr(t, err)
		if len(roles) != 0 {
			t.Errorf("roles after removal: %v", roles)
		}
	}},
	{"memberships list a group's members earliest first", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		var want []string
		for range 3 {
			u := mkUser(t, s)
			member(t, s, u, g, docplatform.RoleMember)
			want = append(want, u.ID)
		}
		ms, err := s.Memberships(ctx, g.ID)
		noErr(t, err)
		var got []string
		for _, m := range ms {
			got = append(got, m.UserID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("order = %v, want %v", got, want)
		}
	}},
	{"a soft-deleted group has no memberships", func(t *testing.T, s *Store) {
		u, g := mkUser(t, s), mkGroup(t, s)
		member(t, s, u, g, docplatform.RoleAdmin)
		noErr(t, s.SoftDeleteGroup(ctx, g.ID))
		ms, err := s.Memberships(ctx, g.ID)
		noErr(t, err)
		if ms == nil || len(ms) != 0 {
			t.Errorf("Memberships = %#v", ms)
		}
	}},
	{"user groups list live groups with roles by name", func(t *testing.T, s *Store) {
		u := mkUser(t, s)
		b, err := s.CreateGroup(ctx, uniq("b"), "", "")
		noErr(t, err)
		a, err := s.CreateGroup(ctx, uniq("A"), "", "")
		noErr(t, err)
		gone := mkGroup(t, s)
		member(t, s, u, b, docplatform.RoleAdmin)
		member(t, s, u, a, docplatform.RoleMember)
		member(t, s, u, gone, docplatform.RoleMember)
		noErr(t, s.SoftDeleteGroup(ctx, gone.ID))
		got, err := s.UserGroups(ctx, u.ID)
		noErr(t, err)
		if len(got) != 2 || got[0].Group.ID != a.ID || got[0].Role != docplatform.RoleMember ||
			got[1].Group.ID != b.ID || got[1].Role != docplatform.RoleAdmin || got[1].Group.Name != b.Name {
			t.Errorf("UserGroups = %+v", got)
		}
		none, err := s.UserGroups(ctx, "nobody")
		noErr(t, err)
		if none == nil || len(none) != 0 {
			t.Errorf("UserGroups(nobody) = %#v", none)
		}
	}},

	// API keys.
	{"create API key stores hash and prefix and sets id and time", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		in := docplatform.APIKey{ID: "ignored", GroupID: g.ID, Prefix: "gk_abcd", Hash: randHash(), CreatedBy: "u-1"}
		k, err := s.CreateAPIKey(ctx, in)
		noErr(t, err)
		if k.ID == "" || k.ID == "ignored" || k.GroupID != g.ID || k.Prefix != "gk_abcd" || !bytes.Equal(k.Hash, in.Hash) || k.CreatedBy != "u-1" || k.LastUsed != nil {
			t.Errorf("CreateAPIKey = %+v", k)
		}
		recent(t, "CreatedAt", k.CreatedAt)
		got, err := s.APIKeyForGroup(ctx, g.ID)
		noErr(t, err)
		if fmt.Sprint(got) != fmt.Sprint(k) {
			t.Errorf("APIKeyForGroup = %+v, want %+v", got, k)
		}
	}},
	{"a group has at most one API key", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		mkKey(t, s, g)
		_, err := s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: g.ID, Prefix: "gk_2", Hash: randHash()})
		wantErr(t, err, docplatform.ErrConflict)
	}},
	{"two keys cannot share a hash", func(t *testing.T, s *Store) {
		k := mkKey(t, s, mkGroup(t, s))
		_, err := s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: mkGroup(t, s).ID, Prefix: "gk_2", Hash: k.Hash})
		wantErr(t, err, docplatform.ErrConflict)
	}},
	{"an API key needs a hash and a prefix", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		_, err := s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: g.ID, Prefix: "gk_1"})
		wantErr(t, err, docplatform.ErrInvalid)
		_, err = s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: g.ID, Hash: randHash()})
		wantErr(t, err, docplatform.ErrInvalid)
	}},
	{"no API key for an unknown or soft-deleted group", func(t *testing.T, s *Store) {
		_, err := s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: "nope", Prefix: "gk_1", Hash: randHash()})
		wantErr(t, err, docplatform.ErrNotFound)
		g := mkGroup(t, s)
		noErr(t, s.SoftDeleteGroup(ctx, g.ID))
		_, err = s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: g.ID, Prefix: "gk_1", Hash: randHash()})
		wantErr(t, err, docplatform.ErrNotFound)
	}},
	{"API key by hash finds the key", func(t *testing.T, s *Store) {
		k := mkKey(t, s, mkGroup(t, s))
		got, err := s.APIKeyByHash(ctx, k.Hash)
		noErr(t, err)
		if got.ID != k.ID || got.GroupID != k.GroupID {
			t.Errorf("APIKeyByHash = %+v", got)
		}
	}},
	{"API key by unknown or empty hash is not found", func(t *testing.T, s *Store) {
		_, err := s.APIKeyByHash(ctx, randHash())
		wantErr(t, err, docplatform.ErrNotFound)
		_, err = s.APIKeyByHash(ctx, nil)
		wantErr(t, err, docplatform.ErrNotFound)
	}},
	{"the key of a soft-deleted group stops working", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		k := mkKey(t, s, g)
		noErr(t, s.SoftDeleteGroup(ctx, g.ID))
		_, err := s.APIKeyByHash(ctx, k.Hash)
		wantErr(t, err, docplatform.ErrNotFound)
		_, err = s.APIKeyForGroup(ctx, g.ID)
		wantErr(t, err, docplatform.ErrNotFound)
		_, err = s.RegenerateAPIKey(ctx, g.ID, "gk_new", randHash())
		wantErr(t, err, docplatform.ErrNotFound)
	}},
	{"API key for a group without one is not found", func(t *testing.T, s *Store) {
		_, err := s.APIKeyForGroup(ctx, mkGroup(t, s).ID)
		wantErr(t, err, docplatform.ErrNotFound)
	}},
	{"regenerate replaces the secret in place and kills the old hash at once", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		old := mkKey(t, s, g)
		noErr(t, s.RecordAPIKeyUse(ctx, map[string]time.Time{old.ID: time.Now()}))
		newHash := randHash()
		k, err := s.RegenerateAPIKey(ctx, g.ID, "gk_new", newHash)
		noErr(t, err)
		if k.ID != old.ID || k.GroupID != g.ID || k.Prefix != "gk_new" || !bytes.Equal(k.Hash, newHash) || k.CreatedBy != old.CreatedBy || k.LastUsed != nil {
			t.Errorf("RegenerateAPIKey = %+v (old %+v)", k, old)
		}
		if k.CreatedAt.Before(old.CreatedAt) {
			t.Errorf("CreatedAt went back: %v < %v", k.CreatedAt, old.CreatedAt)
		}
		_, err = s.APIKeyByHash(ctx, old.Hash)
		wantErr(t, err, docplatform.ErrNotFound)
		got, err := s.APIKeyByHash(ctx, newHash)
		noErr(t, err)
		if got.ID != old.ID {
			t.Errorf("new hash finds %q, want %q", got.ID, old.ID)
		}
	}},
	{"regenerate without a key is not found", func(t *testing.T, s *Store) {
		_, err := s.RegenerateAPIKey(ctx, mkGroup(t, s).ID, "gk_1", randHash())
		wantErr(t, err, docplatform.ErrNotFound)
	}},
	{"regenerate to another key's hash is a conflict", func(t *testing.T, s *Store) {
		a := mkKey(t, s, mkGroup(t, s))
		g := mkGroup(t, s)
		mkKey(t, s, g)
		_, err := s.RegenerateAPIKey(ctx, g.ID, "gk_1", a.Hash)
		wantErr(t, err, docplatform.ErrConflict)
	}},
	{"regenerate needs a hash and a prefix", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		mkKey(t, s, g)
		_, err := s.RegenerateAPIKey(ctx, g.ID, "", randHash())
		wantErr(t, err, docplatform.ErrInvalid)
		_, err = s.RegenerateAPIKey(ctx, g.ID, "gk_1", nil)
		wantErr(t, err, docplatform.ErrInvalid)
	}},
	{"delete API key, and deleting a missing one is not found", func(t *testing.T, s *Store) {
		g := mkGroup(t, s)
		k := mkKey(t, s, g)
		noErr(t, s.DeleteAPIKey(ctx, g.ID))
		_, err := s.APIKeyByHash(ctx, k.Hash)
		wantErr(t, err, docplatform.ErrNotFound)
		wantErr(t, s.DeleteAPIKey(ctx, g.ID), docplatform.ErrNotFound)
		mkKey(t, s, g) // the group may have a key again
	}},
	{"record API key use writes last use and never moves it back", func(t *testing.T, s *Store) {
		k1, k2 := mkKey(t, s, mkGroup(t, s)), mkKey(t, s, mkGroup(t, s))
		t1 := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
		t2 := t1.Add(1500 * time.Millisecond)
		noErr(t, s.RecordAPIKeyUse(ctx, map[string]time.Time{k1.ID: t2, k2.ID: t1, "deleted-key": t1}))
		noErr(t, s.RecordAPIKeyUse(ctx, map[string]time.Time{k1.ID: t1}))
		noErr(t, s.RecordAPIKeyUse(ctx, nil))
		for _, c := range []struct {
			k    docplatform.APIKey
			want time.Time
		}{{k1, t2}, {k2, t1}} {
			got, err := s.APIKeyByHash(ctx, c.k.Hash)
			noErr(t, err)
			if got.LastUsed == nil || !got.LastUsed.Equal(c.want) || got.LastUsed.Location() != time.UTC {
				t.Errorf("LastUsed = %v, want %v", got.LastUsed, c.want.UTC())
			}
		}
	}},
	{"times round-trip in UTC at microsecond precision", func(t *testing.T, s *Store) {
		k := mkKey(t, s, mkGroup(t, s))
		loc := time.FixedZone("X", -7*3600)
		in := time.Date(2026, 3, 4, 5, 6, 7, 123456789, loc)
		noErr(t, s.RecordAPIKeyUse(ctx, map[string]time.Time{k.ID: in}))
		got, err := s.APIKeyForGroup(ctx, k.GroupID)
		noErr(t, err)
		want := in.UTC().Truncate(time.Microsecond)
		if got.LastUsed == nil || *got.LastUsed != want {
			t.Errorf("LastUsed = %v, want %v", got.LastUsed, want)
		}
	}},
	{"ping answers", func(t *testing.T, s *Store) {
		noErr(t, s.Ping(ctx))
	}},
}

func bytesUpper(s string) string { return string(bytes.ToUpper([]byte(s))) }

type freshCase struct {
	name string
	run  func(t *testing.T, s *Store, url string)
}

var freshSuite = []freshCase{
	{"list users returns everyone oldest first", func(t *testing.T, s *Store, _ string) {
		empty, err := s.ListUsers(ctx)
		noErr(t, err)
		if empty == nil || len(empty) != 0 {
			t.Errorf("ListUsers on an empty store = %#v", empty)
		}
		var want []string
		for range 3 {
			want = append(want, mkUser(t, s).ID)
		}
		got, err := s.ListUsers(ctx)
		noErr(t, err)
		var ids []string
		for _, u := range got {
			ids = append(ids, u.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Errorf("ListUsers = %v, want %v", ids, want)
		}
	}},
	{"list groups returns live groups by name ignoring case", func(t *testing.T, s *Store, _ string) {
		for _, n := range []string{"beta", "Alpha", "gone", "Gamma"} {
			_, err := s.CreateGroup(ctx, n, "", "")
			noErr(t, err)
		}
		gs, err := s.ListGroups(ctx)
		noErr(t, err)
		for _, g := range gs {
			if g.Name == "gone" {
				noErr(t, s.SoftDeleteGroup(ctx, g.ID))
			}
		}
		gs, err = s.ListGroups(ctx)
		noErr(t, err)
		var names []string
		for _, g := range gs {
			names = append(names, g.Name)
			if g.DeletedAt != nil {
				t.Errorf("listed a deleted group: %+v", g)
			}
		}
		if fmt.Sprint(names) != "[Alpha beta Gamma]" {
			t.Errorf("ListGroups = %v", names)
		}
	}},
	{"opening again finds the schema migrated and the data kept", func(t *testing.T, s *Store, url string) {
		u := mkUser(t, s)
		again := openT(t, url)
		got, err := again.User(ctx, u.ID)
		noErr(t, err)
		if got.ID != u.ID {
			t.Errorf("User = %+v", got)
		}
	}},
	{"concurrent writers all succeed", func(t *testing.T, s *Store, url string) {
		// Two stores on one database: on SQLite that is a second process's
		// writer (an operator command beside the server), covered by the
		// busy timeout; within each store the writers queue in Go.
		stores := []*Store{s, openT(t, url)}
		const workers, rounds = 8, 15
		groups := make([]docplatform.Group, workers)
		keys := make([]docplatform.APIKey, workers)
		for i := range groups {
			groups[i] = mkGroup(t, s)
			keys[i] = mkKey(t, s, groups[i])
		}
		var wg sync.WaitGroup
		errs := make(chan error, workers*rounds*4)
		for w := range workers {
			st := stores[w%len(stores)]
			wg.Go(func() {
				for r := range rounds {
					u, err := st.UpsertUser(ctx, docplatform.User{ID: fmt.Sprintf("w%d-r%d", w, r), Email: "c@example.test"})
					if err != nil {
						errs <- err
						continue
					}
					g := groups[(w+r)%workers]
					if err := st.SetMembership(ctx, docplatform.Membership{UserID: u.ID, GroupID: g.ID, Role: docplatform.RoleMember}); err != nil {
						errs <- err
					}
					if err := st.RecordAPIKeyUse(ctx, map[string]time.Time{keys[w].ID: time.Now(), keys[(w+1)%workers].ID: time.Now()}); err != nil {
						errs <- err
					}
					if _, _, err := st.UserAccess(ctx, u.ID); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		users, err := s.ListUsers(ctx)
		noErr(t, err)
		if len(users) != workers*rounds {
			t.Errorf("%d users, want %d", len(users), workers*rounds)
		}
		total := 0
		for _, g := range groups {
			ms, err := s.Memberships(ctx, g.ID)
			noErr(t, err)
			total += len(ms)
		}
		if total != workers*rounds {
			t.Errorf("%d memberships, want %d", total, workers*rounds)
		}
	}},
}

func TestOpenRefusesWhatItCannotServe(t *testing.T) {
	for _, c := range []struct {
		name, url string
	}{
		{"empty URL", " "},
		{"in-memory SQLite", ":memory:"},
		{"in-memory SQLite URL", "file::memory:?cache=shared"},
		{"memory mode URL", "file:x.db?mode=memory"},
		{"unknown scheme", "mysql://localhost/db"},
		{"path with a query", "data/x.db?mode=ro"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(ctx, c.url)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", c.url)
			}
		})
	}
}

func TestOpenSQLiteSettings(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, url string }{
		{"plain path in a new directory", filepath.Join(dir, "sub", "a.db")},
		{"file URL", "file:" + filepath.Join(dir, "b.db")},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openT(t, c.url)
			if s.Dialect() != SQLite {
				t.Fatalf("Dialect = %q", s.Dialect())
			}
			var mode string
			noErr(t, s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode))
			if mode != "wal" {
				t.Errorf("journal_mode = %q", mode)
			}
			for _, db := range []struct {
				name string
				q    queryer
			}{{"writer", s.w}, {"reader", s.r}} {
				var fk, busy int
				noErr(t, db.q.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk))
				noErr(t, db.q.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&busy))
				if fk != 1 || busy != int(sqliteBusyTimeout.Milliseconds()) {
					t.Errorf("%s: foreign_keys=%d busy_timeout=%d", db.name, fk, busy)
				}
			}
			if got := s.w.Stats().MaxOpenConnections; got != 1 {
				t.Errorf("writer pool allows %d connections", got)
			}
			if _, err := s.r.ExecContext(ctx, "INSERT INTO users (id, created_at, updated_at) VALUES ('x', '', '')"); err == nil {
				t.Error("the read pool accepted a write")
			}
		})
	}
}
