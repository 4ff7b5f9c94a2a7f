package httpapi_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/internal/testsvc"
)

// sqlTestStore is the real store, with helpers for arranging test data.
type sqlTestStore struct {
	*sqlstore.Store
	t testing.TB
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (s sqlTestStore) createGroup(name string) string {
	g, err := s.CreateGroup(context.Background(), name, "", "")
	must(s.t, err)
	return g.ID
}

func (s sqlTestStore) ensureUser(id string) {
	if _, err := s.User(context.Background(), id); errors.Is(err, docplatform.ErrNotFound) {
		_, err = s.UpsertUser(context.Background(), docplatform.User{ID: id})
		must(s.t, err)
	}
}

func (s sqlTestStore) setMember(user, group string, role docplatform.Role) {
	s.ensureUser(user)
	must(s.t, s.SetMembership(context.Background(), docplatform.Membership{UserID: user, GroupID: group, Role: role}))
}

func (s sqlTestStore) softDelete(group string) {
	must(s.t, s.SoftDeleteGroup(context.Background(), group))
}

func (s sqlTestStore) setAdmin(user string, admin bool) {
	s.ensureUser(user)
	must(s.t, s.SetSystemAdmin(context.Background(), user, admin))
}

func openStore(t testing.TB, url string) sqlTestStore {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), url)
	must(t, err)
	t.Cleanup(func() { st.Close() })
	return sqlTestStore{st, t}
}

func sqliteStore(t testing.TB) testStore {
	return openStore(t, filepath.Join(t.TempDir(), "platform.db"))
}

func postgresStore(t testing.TB) testStore {
	return openStore(t, testsvc.RequirePostgres(t))
}

// backends are the databases the store-backed suites run on.
var backends = []struct {
	name string
	open func(testing.TB) testStore
}{
	{"sqlite", sqliteStore},
	{"postgres", postgresStore},
}

func onStore(open func(testing.TB) testStore) func(*setup) {
	return func(s *setup) { s.store = open(s.t) }
}
