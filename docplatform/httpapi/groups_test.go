package httpapi_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/httpapi"
)

// The seed's group access helpers, row by row.
func TestCheckGroupAccess(t *testing.T) {
	g := func(s string) *string { return &s }
	member := &docplatform.Identity{UserID: "u", GroupRoles: map[string]docplatform.Role{"g1": docplatform.RoleMember}}
	admin := &docplatform.Identity{UserID: "a", IsSystemAdmin: true, GroupRoles: map[string]docplatform.Role{}}
	key := &docplatform.Identity{APIKeyID: "k", GroupRoles: map[string]docplatform.Role{"g1": docplatform.RoleMember}}
	cases := []struct {
		name    string
		id      *docplatform.Identity
		group   *string
		minRole docplatform.Role
		want    int
	}{
		{"resource without group is 404", member, nil, "", http.StatusNotFound},
		{"resource without group is 404 even for a system admin", admin, nil, "", http.StatusNotFound},
		{"no identity is 403", nil, g("g1"), "", http.StatusForbidden},
		{"system admin is allowed in any group", admin, g("g9"), docplatform.RoleAdmin, 0},
		{"group not in groupRoles is 403", member, g("g2"), "", http.StatusForbidden},
		{"role below the minimum is 403", member, g("g1"), docplatform.RoleAdmin, http.StatusForbidden},
		{"member at the minimum is allowed", member, g("g1"), docplatform.RoleMember, 0},
		{"API key is allowed in its own group as MEMBER", key, g("g1"), docplatform.RoleMember, 0},
		{"API key is not ADMIN of its group", key, g("g1"), docplatform.RoleAdmin, http.StatusForbidden},
		{"a group id that is a map method name grants nothing", member, g("__proto__"), "", http.StatusForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := httpapi.CheckGroupAccess(tc.id, tc.group, tc.minRole); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
	t.Run("listing: a member's groups are the keys of groupRoles; a system admin has no filter", func(t *testing.T) {
		ids, filtered := member.GroupIDs()
		if !filtered || !slices.Equal(ids, []string{"g1"}) {
			t.Errorf("member: %v %v", ids, filtered)
		}
		if _, filtered := admin.GroupIDs(); filtered {
			t.Error("admin filtered")
		}
	})
}
