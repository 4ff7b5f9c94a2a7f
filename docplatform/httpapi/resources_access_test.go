package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/httpapi"
)

// codes lists the status each caller gets; callers missing get 401
// (anonymous) or the default.
type codes map[caller]int

// everyone gives every caller but the anonymous one the same status.
func everyone(status int) codes {
	return codes{member: status, groupAdmin: status, other: status, sysAdmin: status, groupKey: status, otherKey: status}
}

// people gives the four signed-in people status and API keys 403.
func people(member_, admin, other_, sys int) codes {
	return codes{member: member_, groupAdmin: admin, other: other_, sysAdmin: sys, groupKey: 403, otherKey: 403}
}

type accessCase struct {
	name string
	// req builds a fresh request (and its fixtures) for caller c.
	req  func(rw *rworld, c caller) request
	want codes
}

func accessCases() []accessCase {
	get := func(path string) func(*rworld, caller) request {
		return func(*rworld, caller) request { return request{method: "GET", path: path} }
	}
	type R = request
	return []accessCase{
		{"GET /api/groups", get("/api/groups"), people(200, 200, 200, 200)},
		{"POST /api/groups", func(rw *rworld, c caller) R {
			return R{method: "POST", path: "/api/groups", body: jsonBody(map[string]string{"name": uniqName("g")})}
		}, people(403, 403, 403, 201)},
		{"GET /api/groups/{groupId}", func(rw *rworld, c caller) R { return R{method: "GET", path: "/api/groups/" + rw.alpha} }, people(200, 200, 403, 200)},
		{"PUT /api/groups/{groupId}", func(rw *rworld, c caller) R {
			return R{method: "PUT", path: "/api/groups/" + rw.alpha, body: `{"description":"updated"}`}
		}, people(403, 200, 403, 200)},
		{"DELETE /api/groups/{groupId}", func(rw *rworld, c caller) R {
			g := rw.store.createGroup(uniqName("del"))
			rw.store.setMember(ada.Subject, g, docplatform.RoleAdmin)
			rw.store.setMember(bob.Subject, g, docplatform.RoleMember)
			return R{method: "DELETE", path: "/api/groups/" + g}
		}, people(403, 403, 403, 204)},
		{"GET /api/groups/{groupId}/members", func(rw *rworld, c caller) R { return R{method: "GET", path: "/api/groups/" + rw.alpha + "/members"} }, people(200, 200, 403, 200)},
		{"PUT /api/groups/{groupId}/members/{userId}", func(rw *rworld, c caller) R {
			u := uniqName("dave")
			rw.store.setMember(u, rw.alpha, docplatform.RoleMember)
			return R{method: "PUT", path: "/api/groups/" + rw.alpha + "/members/" + u, body: `{"role":"ADMIN"}`}
		}, people(403, 200, 403, 200)},
		{"DELETE /api/groups/{groupId}/members/{userId}", func(rw *rworld, c caller) R {
			u := uniqName("erin")
			rw.store.setMember(u, rw.alpha, docplatform.RoleMember)
			return R{method: "DELETE", path: "/api/groups/" + rw.alpha + "/members/" + u}
		}, people(403, 204, 403, 204)},
		{"POST /api/groups/{groupId}/requests", func(rw *rworld, c caller) R {
			g := rw.store.createGroup(uniqName("open"))
			return R{method: "POST", path: "/api/groups/" + g + "/requests", body: `{"message":"let me in"}`}
		}, people(201, 201, 201, 201)},
		{"GET /api/groups/{groupId}/requests", func(rw *rworld, c caller) R { return R{method: "GET", path: "/api/groups/" + rw.alpha + "/requests"} }, people(403, 200, 403, 200)},
		{"POST /api/groups/{groupId}/requests/{requestId}/approve", func(rw *rworld, c caller) R {
			return R{method: "POST", path: "/api/groups/" + rw.alpha + "/requests/" + rw.pendingRequest() + "/approve"}
		}, people(403, 200, 403, 200)},
		{"POST /api/groups/{groupId}/requests/{requestId}/reject", func(rw *rworld, c caller) R {
			return R{method: "POST", path: "/api/groups/" + rw.alpha + "/requests/" + rw.pendingRequest() + "/reject"}
		}, people(403, 200, 403, 200)},
		{"GET /api/membership-requests", get("/api/membership-requests"), people(200, 200, 200, 200)},

		{"GET /api/admin/groups", get("/api/admin/groups"), people(403, 403, 403, 200)},
		{"GET /api/admin/users", get("/api/admin/users"), people(403, 403, 403, 200)},
		{"POST /api/admin/users/{id}/promote", func(rw *rworld, c caller) R {
			u := uniqName("fay")
			rw.store.setAdmin(u, false)
			return R{method: "POST", path: "/api/admin/users/" + u + "/promote"}
		}, people(403, 403, 403, 200)},
		{"POST /api/admin/users/{id}/demote", func(rw *rworld, c caller) R {
			u := uniqName("gus")
			rw.store.setAdmin(u, true)
			return R{method: "POST", path: "/api/admin/users/" + u + "/demote"}
		}, people(403, 403, 403, 200)},
		{"DELETE /api/admin/users/{id}", func(rw *rworld, c caller) R {
			u := uniqName("hal")
			rw.store.setAdmin(u, false)
			return R{method: "DELETE", path: "/api/admin/users/" + u}
		}, people(403, 403, 403, 204)},

		{"POST /api/documents", func(rw *rworld, c caller) R { return upload(rw.alpha, "scan.pdf", []byte("%PDF-1.4 test")) },
			codes{member: 201, groupAdmin: 201, other: 403, sysAdmin: 201, groupKey: 201, otherKey: 403}},
		{"GET /api/documents", get("/api/documents"), everyone(200)},
		{"GET /api/documents?groupId", func(rw *rworld, c caller) R { return R{method: "GET", path: "/api/documents?groupId=" + rw.alpha} },
			codes{member: 200, groupAdmin: 200, other: 403, sysAdmin: 200, groupKey: 200, otherKey: 403}},
		{"GET /api/documents/{id}", func(rw *rworld, c caller) R {
			return R{method: "GET", path: "/api/documents/" + rw.doc(rw.alpha, "a.txt", "hello").ID}
		},
			codes{member: 200, groupAdmin: 200, other: 403, sysAdmin: 200, groupKey: 200, otherKey: 403}},
		{"GET /api/documents/{id}/content", func(rw *rworld, c caller) R {
			return R{method: "GET", path: "/api/documents/" + rw.doc(rw.alpha, "a.txt", "hello").ID + "/content"}
		}, codes{member: 200, groupAdmin: 200, other: 403, sysAdmin: 200, groupKey: 200, otherKey: 403}},
		{"DELETE /api/documents/{id}", func(rw *rworld, c caller) R {
			return R{method: "DELETE", path: "/api/documents/" + rw.doc(rw.alpha, "a.txt", "hello").ID}
		},
			codes{member: 204, groupAdmin: 204, other: 403, sysAdmin: 204, groupKey: 204, otherKey: 403}},
		{"PUT /api/documents/{id}/ocr", func(rw *rworld, c caller) R {
			return R{method: "PUT", path: "/api/documents/" + rw.doc(rw.alpha, "a.txt", "hello").ID + "/ocr", body: `{"engine":"t","result":{"text":"hello"}}`}
		}, codes{member: 403, groupAdmin: 403, other: 403, sysAdmin: 403, groupKey: 201, otherKey: 403}},
		{"GET /api/documents/{id}/ocr", func(rw *rworld, c caller) R {
			d := rw.doc(rw.alpha, "a.txt", "hello")
			_, _, err := rw.st.PutOCRResult(context.Background(), docplatform.OCRResult{DocumentID: d.ID, Result: json.RawMessage(`{"x":1}`)})
			must(rw.t, err)
			return R{method: "GET", path: "/api/documents/" + d.ID + "/ocr"}
		}, codes{member: 200, groupAdmin: 200, other: 403, sysAdmin: 200, groupKey: 200, otherKey: 403}},

		{"GET /api/workflows", get("/api/workflows"), everyone(200)},
		{"POST /api/workflows", func(rw *rworld, c caller) R {
			return R{method: "POST", path: "/api/workflows", body: jsonBody(map[string]any{"groupId": rw.alpha, "name": uniqName("wf"), "config": map[string]any{"steps": []string{"ocr"}}})}
		}, people(403, 201, 403, 201)},
		{"GET /api/workflows/{id}", func(rw *rworld, c caller) R {
			return R{method: "GET", path: "/api/workflows/" + rw.workflow(rw.alpha, uniqName("wf")).ID}
		},
			codes{member: 200, groupAdmin: 200, other: 403, sysAdmin: 200, groupKey: 200, otherKey: 403}},
		{"DELETE /api/workflows/{id}", func(rw *rworld, c caller) R {
			return R{method: "DELETE", path: "/api/workflows/" + rw.workflow(rw.alpha, uniqName("wf")).ID}
		},
			people(403, 204, 403, 204)},
		{"GET /api/workflows/{id}/versions", func(rw *rworld, c caller) R {
			return R{method: "GET", path: "/api/workflows/" + rw.workflow(rw.alpha, uniqName("wf")).ID + "/versions"}
		}, codes{member: 200, groupAdmin: 200, other: 403, sysAdmin: 200, groupKey: 200, otherKey: 403}},
		{"POST /api/workflows/{id}/versions", func(rw *rworld, c caller) R {
			return R{method: "POST", path: "/api/workflows/" + rw.workflow(rw.alpha, uniqName("wf")).ID + "/versions", body: `{"config":{"steps":["ocr","review"]}}`}
		}, people(403, 201, 403, 201)},
		{"GET /api/workflows/{id}/versions/{version}", func(rw *rworld, c caller) R {
			return R{method: "GET", path: "/api/workflows/" + rw.workflow(rw.alpha, uniqName("wf")).ID + "/versions/1"}
		}, codes{member: 200, groupAdmin: 200, other: 403, sysAdmin: 200, groupKey: 200, otherKey: 403}},

		{"POST /api/documents/{id}/reviews", func(rw *rworld, c caller) R {
			return R{method: "POST", path: "/api/documents/" + rw.doc(rw.alpha, "r.txt", "review me").ID + "/reviews"}
		}, people(201, 201, 403, 201)},
		{"GET /api/documents/{id}/reviews", func(rw *rworld, c caller) R {
			return R{method: "GET", path: "/api/documents/" + rw.doc(rw.alpha, "r.txt", "review me").ID + "/reviews"}
		}, people(200, 200, 403, 200)},
		{"GET /api/reviews/{sessionId}", func(rw *rworld, c caller) R { return R{method: "GET", path: "/api/reviews/" + rw.session(bob.Subject)} },
			people(200, 200, 403, 200)},
		{"POST /api/reviews/{sessionId}/corrections", func(rw *rworld, c caller) R {
			return R{method: "POST", path: "/api/reviews/" + rw.session(reviewerFor(c)) + "/corrections", body: `{"corrections":[{"field":"total","originalValue":"1O0","value":"100"}]}`}
		}, people(201, 201, 403, 201)},
		{"POST /api/reviews/{sessionId}/complete", func(rw *rworld, c caller) R {
			return R{method: "POST", path: "/api/reviews/" + rw.session(reviewerFor(c)) + "/complete"}
		}, people(200, 200, 403, 200)},
		{"POST /api/reviews/{sessionId}/abandon", func(rw *rworld, c caller) R {
			return R{method: "POST", path: "/api/reviews/" + rw.session(reviewerFor(c)) + "/abandon"}
		}, people(200, 200, 403, 200)},

		{"GET /api/audit", get("/api/audit"), people(403, 200, 403, 200)},
		{"GET /api/audit/report", get("/api/audit/report?from=2026-01-01&to=2026-12-31"), people(403, 200, 403, 200)},

		{"GET /api/openapi.json", get("/api/openapi.json"), codes{anon: 200, member: 200, groupAdmin: 200, other: 200, sysAdmin: 200, groupKey: 200, otherKey: 200}},
		{"GET /api/docs", get("/api/docs"), codes{anon: 200, member: 200, groupAdmin: 200, other: 200, sysAdmin: 200, groupKey: 200, otherKey: 200}},
		{"GET /api/docs/{file}", get("/api/docs/docs.js"), codes{anon: 200, member: 200, groupAdmin: 200, other: 200, sysAdmin: 200, groupKey: 200, otherKey: 200}},
	}
}

// reviewerFor: a person acting on their own session; everyone else acts on
// bob's (the member of the document's group).
func reviewerFor(c caller) string {
	switch c {
	case member, groupAdmin, sysAdmin:
		return userOf(c)
	}
	return bob.Subject
}

// session starts a review by reviewer on a fresh document of alpha.
func (rw *rworld) session(reviewer string) string {
	rw.t.Helper()
	d := rw.doc(rw.alpha, "rev.txt", "review me")
	s, _, err := rw.st.StartReview(context.Background(), d.ID, reviewer, 3600e9)
	must(rw.t, err)
	return s.ID
}

// pendingRequest is a fresh user's open request to join alpha.
func (rw *rworld) pendingRequest() string {
	rw.t.Helper()
	u := uniqName("ivy")
	rw.store.setAdmin(u, false)
	m, err := rw.st.CreateMembershipRequest(context.Background(), u, rw.alpha, "")
	must(rw.t, err)
	return m.ID
}

// Every resource endpoint, for every access level it admits and refuses,
// on both databases.
func TestResourceAccessLevels(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			rw := newRWorld(t, b.open)
			for _, ac := range accessCases() {
				t.Run(ac.name, func(t *testing.T) {
					for _, c := range callers {
						want, ok := ac.want[c]
						if !ok {
							want = http.StatusUnauthorized
						}
						resp := rw.call(c, ac.req(rw, c))
						resp.Body.Close()
						if resp.StatusCode != want {
							t.Errorf("%s: got %d, want %d", c, resp.StatusCode, want)
						}
					}
				})
			}
			t.Run("every resource route has an access case", func(t *testing.T) {
				covered := map[string]bool{}
				for _, ac := range accessCases() {
					covered[ac.name] = true
				}
				for _, rt := range rw.api.Routes() {
					key := rt.Method + " " + rt.Pattern
					if isResourceRoute(rt) && !covered[key] {
						t.Errorf("%s has no access case", key)
					}
				}
			})
		})
	}
}

// isResourceRoute tells this package's resource routes from the auth
// routes, which the chain tests cover.
func isResourceRoute(r httpapi.Route) bool {
	for _, p := range []string{"/api/groups", "/api/membership-requests", "/api/admin/", "/api/documents", "/api/workflows", "/api/reviews", "/api/audit", "/api/openapi.json", "/api/docs"} {
		if len(r.Pattern) >= len(p) && r.Pattern[:len(p)] == p {
			return true
		}
	}
	return false
}
