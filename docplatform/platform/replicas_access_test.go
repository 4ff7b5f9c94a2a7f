package platform_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform/devidp"
)

// The seed's rule across replicas: roles and the system-admin flag come
// from the database on every request (or a cache exactly as fresh), so a
// change made through one
// replica holds on the very next request at both — however warm either
// replica's verified-token cache is. Every check below follows a request
// with the same access token on both replicas (so each has verified and
// cached it), and the token never changes during the test.
//
// On PostgreSQL every request reads the database. On SQLite each replica
// answers from its access cache, which it checks against the file's
// data_version on every request: two replicas sharing one SQLite file
// (two processes, as an operator's command next to a server is) show the
// cache drops what the other replica changed before the next request.
func TestReplicasApplyAccessChangesOnTheNextRequest(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		replicasApplyAccessChanges(t, startCluster(t, "THROTTLE_GLOBAL_LIMIT=100000"))
	})
	t.Run("sqlite", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "platform.db")
		replicasApplyAccessChanges(t, startCluster(t, "THROTTLE_GLOBAL_LIMIT=100000", "DATABASE_URL="+db))
	})
}

func replicasApplyAccessChanges(t *testing.T, c *cluster) {
	admin := devidp.DemoUsers()[0]
	alice := devidp.DemoUsers()[1]
	grantAdmin(t, c, admin.Subject)
	ab := c.browser("")
	ab.signIn(0, admin.Username, admin.Password)
	al := c.browser("")
	al.signIn(1, alice.Username, alice.Password)
	token := al.cookie("access_token")

	// expect sends the request to each replica in turn, as the given
	// browser, and wants status from both.
	expect := func(b *browser, what, method, path, body string, header map[string]string, status int) {
		t.Helper()
		for i := range 2 {
			var r *strings.Reader
			if body != "" {
				r = strings.NewReader(body)
			}
			var a answer
			if r != nil {
				a = b.on(i).do(method, path, r, header)
			} else {
				a = b.on(i).do(method, path, nil, header)
			}
			if a.status != status || a.servedBy != string(rune('0'+i)) {
				t.Fatalf("%s: replica %d answered %d (served by %q), want %d: %s", what, i, a.status, a.servedBy, status, a.body)
			}
		}
	}
	asAdmin := func(what, method, path, body string, status int) {
		t.Helper()
		var a answer
		if body != "" {
			a = ab.on(0).do(method, path, strings.NewReader(body), nil)
		} else {
			a = ab.on(0).do(method, path, nil, nil)
		}
		if a.status != status {
			t.Fatalf("%s: %d %s", what, a.status, a.body)
		}
	}
	bearer := map[string]string{"Authorization": "Bearer " + token}
	bare := c.browser("") // no cookies: the Bearer header is the credential

	g := ab.on(0).do("POST", "/api/groups", strings.NewReader(`{"name":"Rules"}`), nil)
	if g.status != 201 {
		t.Fatalf("create group: %d %s", g.status, g.body)
	}
	group := g.json(t)["id"].(string)
	members := "/api/groups/" + group + "/members/" + alice.Subject
	rename := `{"name":"Rules","description":"x"}`

	// Alice, group ADMIN: may rename the group, at both replicas, with
	// the cookie and with the same token as Bearer.
	// The system admin is an ADMIN of the group too: a group keeps one.
	asAdmin("make the system admin ADMIN", "PUT", "/api/groups/"+group+"/members/"+admin.Subject, `{"role":"ADMIN"}`, 200)
	asAdmin("make alice ADMIN", "PUT", members, `{"role":"ADMIN"}`, 200)
	expect(al, "group ADMIN renames", "PUT", "/api/groups/"+group, rename, nil, 200)
	expect(bare, "group ADMIN lists members (Bearer)", "GET", "/api/groups/"+group+"/requests", "", bearer, 200)

	// Demotion through replica 0: the next request at either replica is
	// a MEMBER's.
	asAdmin("demote alice to MEMBER", "PUT", members, `{"role":"MEMBER"}`, 200)
	expect(al, "demoted member renames", "PUT", "/api/groups/"+group, rename, nil, 403)
	expect(bare, "demoted member reads the admins' list (Bearer)", "GET", "/api/groups/"+group+"/requests", "", bearer, 403)
	expect(al, "demoted member still reads the group", "GET", "/api/groups/"+group, "", nil, 200)

	// Removed membership: nothing of the group at either replica.
	asAdmin("remove alice", "DELETE", members, "", 204)
	expect(al, "removed member reads the group", "GET", "/api/groups/"+group, "", nil, 403)
	expect(bare, "removed member reads the group (Bearer)", "GET", "/api/groups/"+group, "", bearer, 403)

	// The system-admin flag: granted, then withdrawn.
	asAdmin("promote alice", "POST", "/api/admin/users/"+alice.Subject+"/promote", "", 200)
	expect(al, "system admin lists users", "GET", "/api/admin/users", "", nil, 200)
	asAdmin("demote alice", "POST", "/api/admin/users/"+alice.Subject+"/demote", "", 200)
	expect(al, "former system admin lists users", "GET", "/api/admin/users", "", nil, 403)
	expect(bare, "former system admin lists users (Bearer)", "GET", "/api/admin/users", "", bearer, 403)

	// A group's API key, regenerated: the old key fails at both replicas
	// at once, the new one works at both.
	asAdmin("make alice MEMBER again", "PUT", members, `{"role":"MEMBER"}`, 200)
	k := ab.on(1).do("POST", "/api/api-key", strings.NewReader(`{"groupId":"`+group+`"}`), nil)
	if k.status != 201 {
		t.Fatalf("create API key: %d %s", k.status, k.body)
	}
	oldKey := k.json(t)["key"].(string)
	machine := c.browser("")
	docs := "/api/documents?groupId=" + group
	expect(machine, "API key lists documents", "GET", docs, "", map[string]string{"X-API-Key": oldKey}, 200)
	k = ab.on(0).do("POST", "/api/api-key/regenerate", strings.NewReader(`{"groupId":"`+group+`"}`), nil)
	if k.status != 200 && k.status != 201 {
		t.Fatalf("regenerate API key: %d %s", k.status, k.body)
	}
	newKey := k.json(t)["key"].(string)
	expect(machine, "regenerated-away key lists documents", "GET", docs, "", map[string]string{"X-API-Key": oldKey}, 401)
	expect(machine, "new key lists documents", "GET", docs, "", map[string]string{"X-API-Key": newKey}, 200)

	// A deleted group: its member and its key lose it at both replicas.
	expect(al, "member reads the group", "GET", "/api/groups/"+group, "", nil, 200)
	asAdmin("delete the group", "DELETE", "/api/groups/"+group, "", 204)
	expect(al, "member reads the deleted group", "GET", "/api/groups/"+group, "", nil, 403)
	expect(machine, "deleted group's key lists documents", "GET", docs, "", map[string]string{"X-API-Key": newKey}, 401)
	if a := al.on(1).do("GET", "/api/auth/me", nil, nil); a.status != 200 || strings.Contains(string(a.body), group) {
		t.Fatalf("me after the group's deletion: %d %s", a.status, a.body)
	}

	if al.cookie("access_token") != token {
		t.Fatal("the access token changed during the test: the checks above did not all use one cached token")
	}
}
