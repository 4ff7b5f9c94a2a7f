package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/event"
)

func TestGroupsAndMemberships(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testGroupsAndMemberships(t, newRWorld(t, b.open)) })
	}
}

func testGroupsAndMemberships(t *testing.T, rw *rworld) {
	groupPath := "/api/groups/" + rw.alpha
	var req struct{ ID, Status string }

	t.Run("a non-member asks to join; a second open request is 409", func(t *testing.T) {
		resp := rw.call(other, request{method: "POST", path: groupPath + "/requests", body: `{"message":"I do the invoices"}`})
		readJSON(t, resp, &req)
		if resp.StatusCode != 201 || req.Status != "PENDING" {
			t.Fatalf("%s %+v", resp.Status, req)
		}
		if resp := rw.call(other, request{method: "POST", path: groupPath + "/requests"}); resp.StatusCode != 409 {
			t.Fatalf("second request: %s", resp.Status)
		}
		if resp := rw.call(member, request{method: "POST", path: groupPath + "/requests"}); resp.StatusCode != 409 {
			t.Fatalf("request by a member: %s", resp.Status)
		}
		if resp := rw.call(other, request{method: "POST", path: "/api/groups/" + rw.gone + "/requests"}); resp.StatusCode != 404 {
			t.Fatalf("request to a deleted group: %s", resp.Status)
		}
	})
	t.Run("the group admin sees it and approves it; the requester is then a member", func(t *testing.T) {
		var list struct{ Requests []struct{ ID, UserID string } }
		readJSON(t, rw.call(groupAdmin, request{method: "GET", path: groupPath + "/requests"}), &list)
		if len(list.Requests) != 1 || list.Requests[0].UserID != carol.Subject {
			t.Fatalf("%+v", list)
		}
		if resp := rw.call(other, request{method: "GET", path: groupPath}); resp.StatusCode != 403 {
			t.Fatalf("before approval: %s", resp.Status)
		}
		if resp := rw.call(groupAdmin, request{method: "POST", path: groupPath + "/requests/" + req.ID + "/approve"}); resp.StatusCode != 200 {
			t.Fatalf("approve: %s", resp.Status)
		}
		if resp := rw.call(other, request{method: "GET", path: groupPath}); resp.StatusCode != 200 {
			t.Fatalf("after approval: %s", resp.Status)
		}
		if resp := rw.call(groupAdmin, request{method: "POST", path: groupPath + "/requests/" + req.ID + "/reject"}); resp.StatusCode != 409 {
			t.Fatalf("deciding twice: %s", resp.Status)
		}
		if resp := rw.call(sysAdmin, request{method: "POST", path: "/api/groups/" + rw.beta + "/requests/" + req.ID + "/approve"}); resp.StatusCode != 404 {
			t.Fatalf("a request through another group's path: %s", resp.Status)
		}
	})
	t.Run("roles change; the last ADMIN cannot be demoted or removed", func(t *testing.T) {
		if resp := rw.call(groupAdmin, request{method: "PUT", path: groupPath + "/members/" + ada.Subject, body: `{"role":"MEMBER"}`}); resp.StatusCode != 409 {
			t.Fatalf("demote last admin: %s", resp.Status)
		}
		if resp := rw.call(groupAdmin, request{method: "DELETE", path: groupPath + "/members/" + ada.Subject}); resp.StatusCode != 409 {
			t.Fatalf("remove last admin: %s", resp.Status)
		}
		if resp := rw.call(groupAdmin, request{method: "PUT", path: groupPath + "/members/" + carol.Subject, body: `{"role":"ADMIN"}`}); resp.StatusCode != 200 {
			t.Fatalf("promote: %s", resp.Status)
		}
		if resp := rw.call(other, request{method: "GET", path: groupPath + "/requests"}); resp.StatusCode != 200 {
			t.Fatalf("new admin lists requests: %s", resp.Status)
		}
		if resp := rw.call(groupAdmin, request{method: "PUT", path: groupPath + "/members/" + carol.Subject, body: `{"role":"OWNER"}`}); resp.StatusCode != 400 {
			t.Fatalf("unknown role: %s", resp.Status)
		}
		if resp := rw.call(groupAdmin, request{method: "PUT", path: groupPath + "/members/nobody", body: `{"role":"ADMIN"}`}); resp.StatusCode != 404 {
			t.Fatalf("unknown user: %s", resp.Status)
		}
		if resp := rw.call(groupAdmin, request{method: "DELETE", path: groupPath + "/members/" + carol.Subject}); resp.StatusCode != 204 {
			t.Fatalf("remove: %s", resp.Status)
		}
		if resp := rw.call(other, request{method: "GET", path: groupPath}); resp.StatusCode != 403 {
			t.Fatalf("after removal: %s", resp.Status)
		}
	})
	t.Run("a system admin gives a new group its first ADMIN by setting a role", func(t *testing.T) {
		var g struct{ ID string }
		readJSON(t, rw.call(sysAdmin, request{method: "POST", path: "/api/groups", body: `{"name":"Fresh"}`}), &g)
		if resp := rw.call(sysAdmin, request{method: "PUT", path: "/api/groups/" + g.ID + "/members/" + bob.Subject, body: `{"role":"ADMIN"}`}); resp.StatusCode != 200 {
			t.Fatalf("%s", resp.Status)
		}
		if resp := rw.call(member, request{method: "GET", path: "/api/groups/" + g.ID + "/requests"}); resp.StatusCode != 200 {
			t.Fatalf("bob as the new group's admin: %s", resp.Status)
		}
	})
	t.Run("group settings: validated, names unique ignoring case", func(t *testing.T) {
		if resp := rw.call(groupAdmin, request{method: "PUT", path: groupPath, body: `{"name":"  "}`}); resp.StatusCode != 400 {
			t.Fatalf("blank name: %s", resp.Status)
		}
		if resp := rw.call(groupAdmin, request{method: "PUT", path: groupPath, body: `{"name":"BETA"}`}); resp.StatusCode != 409 {
			t.Fatalf("taken name: %s", resp.Status)
		}
		if resp := rw.call(groupAdmin, request{method: "PUT", path: groupPath, body: `{"owner":"me"}`}); resp.StatusCode != 400 {
			t.Fatalf("unknown field: %s", resp.Status)
		}
		var g struct{ Name, Description string }
		resp := rw.call(groupAdmin, request{method: "PUT", path: groupPath, body: `{"name":"Alpha Team","description":"d"}`})
		readJSON(t, resp, &g)
		if resp.StatusCode != 200 || g.Name != "Alpha Team" || g.Description != "d" {
			t.Fatalf("%s %+v", resp.Status, g)
		}
		if resp := rw.call(sysAdmin, request{method: "POST", path: "/api/groups", body: `{"name":"alpha team"}`}); resp.StatusCode != 409 {
			t.Fatalf("create with a taken name: %s", resp.Status)
		}
	})
	t.Run("a soft-deleted group grants nothing", func(t *testing.T) {
		var g struct{ ID string }
		readJSON(t, rw.call(sysAdmin, request{method: "POST", path: "/api/groups", body: `{"name":"Short lived"}`}), &g)
		rw.store.setMember(bob.Subject, g.ID, docplatform.RoleAdmin)
		if resp := rw.call(member, request{method: "GET", path: "/api/groups/" + g.ID}); resp.StatusCode != 200 {
			t.Fatalf("before: %s", resp.Status)
		}
		if resp := rw.call(sysAdmin, request{method: "DELETE", path: "/api/groups/" + g.ID}); resp.StatusCode != 204 {
			t.Fatalf("delete: %s", resp.Status)
		}
		if resp := rw.call(member, request{method: "GET", path: "/api/groups/" + g.ID}); resp.StatusCode != 403 {
			t.Fatalf("after: %s", resp.Status)
		}
		if resp := rw.call(sysAdmin, request{method: "DELETE", path: "/api/groups/" + g.ID}); resp.StatusCode != 404 {
			t.Fatalf("delete twice: %s", resp.Status)
		}
		var mine struct{ Groups []struct{ ID string } }
		readJSON(t, rw.call(member, request{method: "GET", path: "/api/groups"}), &mine)
		for _, x := range mine.Groups {
			if x.ID == g.ID {
				t.Fatal("deleted group still listed")
			}
		}
	})
	t.Run("system admins cannot demote or delete themselves", func(t *testing.T) {
		if resp := rw.call(sysAdmin, request{method: "POST", path: "/api/admin/users/" + sam.Subject + "/demote"}); resp.StatusCode != 409 {
			t.Fatalf("demote self: %s", resp.Status)
		}
		if resp := rw.call(sysAdmin, request{method: "DELETE", path: "/api/admin/users/" + sam.Subject}); resp.StatusCode != 409 {
			t.Fatalf("delete self: %s", resp.Status)
		}
		if resp := rw.call(sysAdmin, request{method: "DELETE", path: "/api/admin/users/nobody"}); resp.StatusCode != 404 {
			t.Fatalf("delete unknown: %s", resp.Status)
		}
	})
}

type auditJSON struct {
	Action, Actor, GroupID, Outcome string
	Event                           event.Event
}

func TestAuditLogEndpoints(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			rw := newRWorld(t, b.open)
			ctx := context.Background()
			rw.call(groupAdmin, request{method: "PUT", path: "/api/groups/" + rw.alpha + "/members/" + bob.Subject, body: `{"role":"ADMIN"}`})
			rw.call(other, request{method: "GET", path: "/api/groups/" + rw.alpha})

			t.Run("a group admin sees the group's membership changes, with datetime events", func(t *testing.T) {
				var out struct{ Entries []auditJSON }
				readJSON(t, rw.call(groupAdmin, request{method: "GET", path: "/api/audit"}), &out)
				found := false
				for _, e := range out.Entries {
					if e.GroupID != rw.alpha {
						t.Errorf("group admin of alpha sees an entry of %q: %+v", e.GroupID, e)
					}
					if _, ok := e.Event.Start().Time(); !ok {
						t.Errorf("entry without a datetime event: %+v", e)
					}
					found = found || (e.Action == string(docplatform.AuditMembershipRole) && e.Actor == ada.Subject && e.Outcome == "success")
				}
				if !found {
					t.Fatalf("no role change in %+v", out.Entries)
				}
			})
			t.Run("a group admin cannot read another group's log", func(t *testing.T) {
				if resp := rw.call(groupAdmin, request{method: "GET", path: "/api/audit?groupId=" + rw.beta}); resp.StatusCode != 403 {
					t.Fatalf("%s", resp.Status)
				}
			})
			t.Run("a system admin sees everything, logins and denials included", func(t *testing.T) {
				var out struct{ Entries []auditJSON }
				readJSON(t, rw.call(sysAdmin, request{method: "GET", path: "/api/audit?limit=1000"}), &out)
				seen := map[string]bool{}
				for _, e := range out.Entries {
					seen[e.Action] = true
				}
				for _, a := range []docplatform.AuditAction{docplatform.AuditLogin, docplatform.AuditAccessDenied, docplatform.AuditMembershipRole, docplatform.AuditAPIKeyCreated} {
					if !seen[string(a)] {
						t.Errorf("no %s entry", a)
					}
				}
				var page struct {
					Entries    []auditJSON
					NextBefore *int64
				}
				readJSON(t, rw.call(sysAdmin, request{method: "GET", path: "/api/audit?limit=1&action=auth.login"}), &page)
				if len(page.Entries) != 1 || page.NextBefore == nil || page.Entries[0].Action != "auth.login" {
					t.Fatalf("%+v", page)
				}
			})
			t.Run("the report converts to dates in the report's time zone", func(t *testing.T) {
				// 07:59:59Z on 2 January is still 1 January in Vancouver.
				ev, _ := event.NewDateTime(time.Date(2030, 1, 2, 7, 59, 59, 0, time.UTC))
				must(t, rw.st.AppendAudit(ctx, docplatform.AuditEntry{When: ev, Action: docplatform.AuditMembershipRemoved, Actor: ada.Subject, GroupID: rw.alpha, Outcome: docplatform.OutcomeSuccess}))
				var rep struct {
					TimeZone string
					Days     []struct {
						Event  event.Event
						Counts map[string]map[string]int
					}
					Entries []auditJSON
				}
				readJSON(t, rw.call(groupAdmin, request{method: "GET", path: "/api/audit/report?from=2030-01-01&to=2030-01-01&timeZone=America/Vancouver"}), &rep)
				if len(rep.Entries) != 1 || rep.Entries[0].Event.String() != `{"start_date":"2030-01-01"}` || rep.TimeZone != "America/Vancouver" {
					t.Fatalf("%+v", rep)
				}
				if len(rep.Days) != 1 || rep.Days[0].Counts["membership.removed"]["success"] != 1 {
					t.Fatalf("%+v", rep.Days)
				}
				readJSON(t, rw.call(groupAdmin, request{method: "GET", path: "/api/audit/report?from=2030-01-01&to=2030-01-01"}), &rep)
				if len(rep.Entries) != 0 {
					t.Fatalf("in UTC the entry is on 2 January: %+v", rep.Entries)
				}
			})
			t.Run("bad report parameters are 400", func(t *testing.T) {
				for _, q := range []string{"", "from=2030-01-01", "from=2030-02-30&to=2030-03-01", "from=2030-01-02&to=2030-01-01", "from=2030-01-01&to=2031-06-01", "from=2030-01-01&to=2030-01-02&timeZone=Mars/Olympus", "from=2030-01-01T00:00:00Z&to=2030-01-02"} {
					if resp := rw.call(sysAdmin, request{method: "GET", path: "/api/audit/report?" + q}); resp.StatusCode != 400 {
						t.Errorf("%q: %s", q, resp.Status)
					}
				}
			})
		})
	}
}
