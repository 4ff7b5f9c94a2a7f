package httpapi_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/govkit/govkit/docplatform"
)

// When a group is soft-deleted its resources are gone for everyone: its
// API key stops working on every route, its former members are refused,
// and system admins get 404 (the rows stay in the database; the audit log
// about the group stays readable).
func TestSoftDeletedGroupsResourcesAreGone(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			rw := newRWorld(t, be.open)
			gid := rw.st.createGroup(uniqName("Doomed"))
			rw.st.setMember(ada.Subject, gid, docplatform.RoleAdmin)
			rw.st.setMember(bob.Subject, gid, docplatform.RoleMember)
			key := rw.createKey(rw.admin, gid)
			d := rw.doc(gid, "doomed.pdf", "%PDF-1.4")
			wf := rw.workflow(gid, "doomed")
			var sess reviewJSON
			resp := rw.call(member, request{method: "POST", path: "/api/documents/" + d.ID + "/reviews"})
			readJSON(t, resp, &sess)
			if resp.StatusCode != 201 {
				t.Fatalf("start review: %s", resp.Status)
			}
			var pending struct{ ID string }
			readJSON(t, rw.call(other, request{method: "POST", path: "/api/groups/" + gid + "/requests"}), &pending)
			if resp := rw.call(sysAdmin, request{method: "DELETE", path: "/api/groups/" + gid}); resp.StatusCode != 204 {
				t.Fatalf("soft delete: %s", resp.Status)
			}
			routes := []request{
				{method: "GET", path: "/api/groups/" + gid},
				{method: "GET", path: "/api/groups/" + gid + "/members"},
				{method: "PUT", path: "/api/groups/" + gid, body: `{"description":"x"}`},
				{method: "GET", path: "/api/groups/" + gid + "/requests"},
				{method: "POST", path: "/api/groups/" + gid + "/requests/" + pending.ID + "/approve"},
				{method: "PUT", path: "/api/groups/" + gid + "/members/" + carol.Subject, body: `{"role":"MEMBER"}`},
				{method: "DELETE", path: "/api/groups/" + gid + "/members/" + bob.Subject},
				{method: "GET", path: "/api/documents?groupId=" + gid},
				{method: "GET", path: "/api/workflows?groupId=" + gid},
				{method: "GET", path: "/api/documents/" + d.ID},
				{method: "GET", path: "/api/documents/" + d.ID + "/content"},
				{method: "GET", path: "/api/documents/" + d.ID + "/ocr"},
				{method: "PUT", path: "/api/documents/" + d.ID + "/ocr", body: `{"result":{}}`},
				{method: "GET", path: "/api/documents/" + d.ID + "/reviews"},
				{method: "POST", path: "/api/documents/" + d.ID + "/reviews"},
				{method: "DELETE", path: "/api/documents/" + d.ID},
				{method: "GET", path: "/api/workflows/" + wf.ID},
				{method: "GET", path: "/api/workflows/" + wf.ID + "/versions"},
				{method: "GET", path: "/api/workflows/" + wf.ID + "/versions/1"},
				{method: "POST", path: "/api/workflows/" + wf.ID + "/versions", body: `{"config":{}}`},
				{method: "DELETE", path: "/api/workflows/" + wf.ID},
				{method: "GET", path: "/api/reviews/" + sess.ID},
				{method: "POST", path: "/api/reviews/" + sess.ID + "/corrections", body: `{"corrections":[{"field":"a","value":"b"}]}`},
				{method: "POST", path: "/api/reviews/" + sess.ID + "/complete"},
				{method: "POST", path: "/api/reviews/" + sess.ID + "/abandon"},
				upload(gid, "late.txt", []byte("late")),
			}
			for _, r := range routes {
				name := r.method + " " + strings.NewReplacer(gid, "{group}", d.ID, "{doc}", wf.ID, "{workflow}", sess.ID, "{session}", pending.ID, "{request}").Replace(r.path)
				t.Run("the group's API key is refused: "+name, func(t *testing.T) {
					kr := r
					kr.header = map[string]string{"X-API-Key": key}
					for k, v := range r.header {
						kr.header[k] = v
					}
					// 401 where the route takes keys (the key is dead), 403
					// where it never does.
					if resp := rw.do(nil, kr); resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
						t.Fatalf("%s", resp.Status)
					}
				})
				t.Run("a former member is refused: "+name, func(t *testing.T) {
					if resp := rw.call(member, r); resp.StatusCode != 403 && resp.StatusCode != 404 {
						t.Fatalf("%s", resp.Status)
					}
				})
				t.Run("a system admin gets 404: "+name, func(t *testing.T) {
					want := 404
					if r.method == "PUT" && strings.HasSuffix(r.path, "/ocr") {
						want = 403 // only a group's API key writes OCR results
					}
					if resp := rw.call(sysAdmin, r); resp.StatusCode != want {
						t.Fatalf("%s", resp.Status)
					}
				})
			}
			t.Run("a system admin's listings leave the group's resources out", func(t *testing.T) {
				var docs struct{ Documents []docJSON }
				readJSON(t, rw.call(sysAdmin, request{method: "GET", path: "/api/documents"}), &docs)
				var wfs struct{ Workflows []struct{ ID string } }
				readJSON(t, rw.call(sysAdmin, request{method: "GET", path: "/api/workflows"}), &wfs)
				for _, x := range docs.Documents {
					if x.ID == d.ID {
						t.Fatal("document of a deleted group listed")
					}
				}
				for _, x := range wfs.Workflows {
					if x.ID == wf.ID {
						t.Fatal("workflow of a deleted group listed")
					}
				}
			})
			t.Run("the audit log about the group stays readable to system admins", func(t *testing.T) {
				var out struct {
					Entries []struct{ Action, GroupID string }
				}
				resp := rw.call(sysAdmin, request{method: "GET", path: "/api/audit?groupId=" + gid})
				readJSON(t, resp, &out)
				found := false
				for _, e := range out.Entries {
					found = found || e.Action == string(docplatform.AuditGroupDeleted)
				}
				if resp.StatusCode != 200 || !found {
					t.Fatalf("%s %+v", resp.Status, out)
				}
			})
		})
	}
}

// A member removed from a group loses access with the next request: the
// identity is read from the database per request, not cached in the token.
func TestRemovedMemberLosesAccessAtOnce(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			rw := newRWorld(t, be.open)
			d := rw.doc(rw.alpha, "kept.pdf", "%PDF-1.4")
			var sess reviewJSON
			readJSON(t, rw.call(member, request{method: "POST", path: "/api/documents/" + d.ID + "/reviews"}), &sess)
			if resp := rw.call(member, request{method: "GET", path: "/api/documents/" + d.ID}); resp.StatusCode != 200 {
				t.Fatalf("before: %s", resp.Status)
			}
			if resp := rw.call(groupAdmin, request{method: "DELETE", path: "/api/groups/" + rw.alpha + "/members/" + bob.Subject}); resp.StatusCode != 204 {
				t.Fatalf("remove: %s", resp.Status)
			}
			for _, r := range []request{
				{method: "GET", path: "/api/documents/" + d.ID},
				{method: "GET", path: "/api/documents/" + d.ID + "/content"},
				{method: "GET", path: "/api/documents?groupId=" + rw.alpha},
				{method: "GET", path: "/api/groups/" + rw.alpha},
				{method: "GET", path: "/api/reviews/" + sess.ID},
				{method: "POST", path: "/api/reviews/" + sess.ID + "/corrections", body: `{"corrections":[{"field":"a","value":"b"}]}`},
				{method: "POST", path: "/api/reviews/" + sess.ID + "/complete"},
				upload(rw.alpha, "after.txt", []byte("after")),
			} {
				if resp := rw.call(member, r); resp.StatusCode != 403 {
					t.Errorf("%s %s: %s", r.method, r.path, resp.Status)
				}
			}
			var docs struct{ Documents []docJSON }
			readJSON(t, rw.call(member, request{method: "GET", path: "/api/documents"}), &docs)
			if len(docs.Documents) != 0 {
				t.Fatalf("still lists %d documents", len(docs.Documents))
			}
		})
	}
}

// Two reviewers starting on one document at once over HTTP: exactly one
// 201, the rest 409.
func TestReviewStartRaceOverHTTP(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			rw := newRWorld(t, be.open)
			for round := range 5 {
				d := rw.doc(rw.alpha, "race.pdf", "%PDF-1.4")
				codes := make([]int, 2)
				var wg sync.WaitGroup
				for i, c := range []caller{member, groupAdmin} {
					wg.Go(func() {
						resp := rw.call(c, request{method: "POST", path: "/api/documents/" + d.ID + "/reviews"})
						resp.Body.Close()
						codes[i] = resp.StatusCode
					})
				}
				wg.Wait()
				if !(codes[0] == 201 && codes[1] == 409 || codes[0] == 409 && codes[1] == 201) {
					t.Fatalf("round %d: %v", round, codes)
				}
			}
		})
	}
}
