package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/event"
)

// Every security-relevant action the spec names lands in the audit log
// with a datetime event, its actor, group and outcome: membership changes
// of every kind and the API key's life.
func TestAuditRecordsMembershipAndAPIKeyActions(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			rw := newRWorld(t, be.open)
			csrf := map[string]string{"X-CSRF-Token": rw.csrf(rw.admin)}
			step := func(as caller, r request, want int) {
				t.Helper()
				resp := rw.call(as, r)
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("%s %s: %s, want %d", r.method, r.path, resp.Status, want)
				}
			}
			var req struct{ ID string }
			resp := rw.call(other, request{method: "POST", path: "/api/groups/" + rw.alpha + "/requests", body: `{"message":"let me in"}`})
			readJSON(t, resp, &req)
			step(groupAdmin, request{method: "POST", path: "/api/groups/" + rw.alpha + "/requests/" + req.ID + "/approve"}, 200)
			step(groupAdmin, request{method: "PUT", path: "/api/groups/" + rw.alpha + "/members/" + carol.Subject, body: `{"role":"ADMIN"}`}, 200)
			step(groupAdmin, request{method: "DELETE", path: "/api/groups/" + rw.alpha + "/members/" + carol.Subject}, 204)
			resp = rw.call(other, request{method: "POST", path: "/api/groups/" + rw.alpha + "/requests"})
			readJSON(t, resp, &req)
			step(groupAdmin, request{method: "POST", path: "/api/groups/" + rw.alpha + "/requests/" + req.ID + "/reject"}, 200)
			step(groupAdmin, request{method: "POST", path: "/api/api-key/regenerate", body: `{"groupId":"` + rw.alpha + `"}`, header: csrf}, 200)
			step(groupAdmin, request{method: "DELETE", path: "/api/api-key?groupId=" + rw.alpha, header: csrf}, 204)
			step(groupAdmin, request{method: "POST", path: "/api/api-key", body: `{"groupId":"` + rw.alpha + `"}`, header: csrf}, 201)
			// The old key is dead now: a failed key attempt.
			step(groupKey, request{method: "GET", path: "/api/documents"}, 401)
			step(member, request{method: "GET", path: "/api/documents?groupId=" + rw.beta}, 403)

			var out struct{ Entries []auditJSON }
			readJSON(t, rw.call(sysAdmin, request{method: "GET", path: "/api/audit?limit=1000"}), &out)
			type want struct {
				action  docplatform.AuditAction
				actor   string
				group   string
				outcome docplatform.AuditOutcome
			}
			for _, w := range []want{
				{docplatform.AuditMembershipRequested, carol.Subject, rw.alpha, docplatform.OutcomeSuccess},
				{docplatform.AuditMembershipApproved, ada.Subject, rw.alpha, docplatform.OutcomeSuccess},
				{docplatform.AuditMembershipRole, ada.Subject, rw.alpha, docplatform.OutcomeSuccess},
				{docplatform.AuditMembershipRemoved, ada.Subject, rw.alpha, docplatform.OutcomeSuccess},
				{docplatform.AuditMembershipRejected, ada.Subject, rw.alpha, docplatform.OutcomeSuccess},
				{docplatform.AuditAPIKeyCreated, ada.Subject, rw.alpha, docplatform.OutcomeSuccess},
				{docplatform.AuditAPIKeyRegenerated, ada.Subject, rw.alpha, docplatform.OutcomeSuccess},
				{docplatform.AuditAPIKeyDeleted, ada.Subject, rw.alpha, docplatform.OutcomeSuccess},
				{docplatform.AuditAPIKeyFailed, "", "", docplatform.OutcomeFailure},
				{docplatform.AuditAccessDenied, bob.Subject, rw.beta, docplatform.OutcomeDenied},
				{docplatform.AuditLogin, ada.Subject, "", docplatform.OutcomeSuccess},
			} {
				t.Run(string(w.action)+" is recorded", func(t *testing.T) {
					for _, e := range out.Entries {
						if e.Action != string(w.action) || (w.actor != "" && e.Actor != w.actor) || e.GroupID != w.group || e.Outcome != string(w.outcome) {
							continue
						}
						at, ok := e.Event.Start().Time()
						if e.Event.Form() != event.FormDateTime || !ok || time.Since(at) > time.Hour || at.Location() != time.UTC {
							t.Fatalf("event %s is not an instant of this run in datetime form", e.Event)
						}
						return
					}
					t.Fatalf("no %+v among %d entries", w, len(out.Entries))
				})
			}
		})
	}
}

// The report's days are the time zone's calendar days, 23 and 25 hours
// long across America/Vancouver's DST changes, and each entry is dated
// where the report is read.
func TestAuditReportAcrossDST(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			rw := newRWorld(t, be.open)
			ctx := context.Background()
			at := func(s string) {
				ts, err := time.Parse(time.RFC3339, s)
				must(t, err)
				ev, err := event.NewDateTime(ts)
				must(t, err)
				must(t, rw.st.AppendAudit(ctx, docplatform.AuditEntry{When: ev, Action: docplatform.AuditMembershipRole, Actor: s, GroupID: rw.alpha, Outcome: docplatform.OutcomeSuccess}))
			}
			for _, s := range []string{
				"2030-03-10T07:59:59Z", // 9 March 23:59:59 PST
				"2030-03-10T08:00:00Z", // 10 March 00:00 PST
				"2030-03-11T06:59:59Z", // 10 March 23:59:59 PDT (a 23-hour day)
				"2030-03-11T07:00:00Z", // 11 March 00:00 PDT
				"2030-11-03T06:59:59Z", // 2 November 23:59:59 PDT
				"2030-11-03T07:00:00Z", // 3 November 00:00 PDT
				"2030-11-04T07:59:59Z", // 3 November 23:59:59 PST (a 25-hour day)
				"2030-11-04T08:00:00Z", // 4 November 00:00 PST
			} {
				at(s)
			}
			type rep struct {
				Days []struct {
					Event  event.Event
					Counts map[string]map[string]int
				}
				Entries []auditJSON
			}
			cases := []struct {
				name, from, to string
				actors         []string
				dates          []string
			}{
				{"the spring-forward day holds 23 hours", "2030-03-10", "2030-03-10",
					[]string{"2030-03-10T08:00:00Z", "2030-03-11T06:59:59Z"}, []string{"2030-03-10", "2030-03-10"}},
				{"the fall-back day holds 25 hours", "2030-11-03", "2030-11-03",
					[]string{"2030-11-03T07:00:00Z", "2030-11-04T07:59:59Z"}, []string{"2030-11-03", "2030-11-03"}},
				{"the days around spring-forward each keep their own entries", "2030-03-09", "2030-03-11",
					[]string{"2030-03-10T07:59:59Z", "2030-03-10T08:00:00Z", "2030-03-11T06:59:59Z", "2030-03-11T07:00:00Z"}, []string{"2030-03-09", "2030-03-10", "2030-03-10", "2030-03-11"}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					var r rep
					resp := rw.call(groupAdmin, request{method: "GET", path: "/api/audit/report?timeZone=America/Vancouver&from=" + tc.from + "&to=" + tc.to})
					readJSON(t, resp, &r)
					var actors, dates []string
					for _, e := range r.Entries {
						if e.Action != string(docplatform.AuditMembershipRole) {
							continue
						}
						actors = append(actors, e.Actor)
						if _, ok := e.Event.Start().Date(); e.Event.Form() != event.FormDate || !ok {
							t.Fatalf("report entry %s is not in date form", e.Event)
						}
						dates = append(dates, e.Event.Start().String())
					}
					if strings.Join(actors, " ") != strings.Join(tc.actors, " ") || strings.Join(dates, " ") != strings.Join(tc.dates, " ") {
						t.Fatalf("entries %v dated %v, want %v dated %v", actors, dates, tc.actors, tc.dates)
					}
				})
			}
		})
	}
}
