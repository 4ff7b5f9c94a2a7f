package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform"
)

// checkErrShape fails unless resp has status want and the NestJS error
// body whose message contains mention (when given).
func checkErrShape(t *testing.T, resp *http.Response, want int, mention string) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("status %s, want %d: %s", resp.Status, want, b)
	}
	var e errBody
	readJSON(t, &http.Response{Body: io.NopCloser(strings.NewReader(string(b)))}, &e)
	if e.StatusCode != want || e.Message == "" || e.Error == "" {
		t.Fatalf("error body %s", b)
	}
	if mention != "" && !strings.Contains(e.Message, mention) {
		t.Fatalf("message %q does not name %q", e.Message, mention)
	}
}

// Every JSON body of the resource routes refuses what is not the object
// it expects with a 400 (413 past the body limit) naming the problem, and
// never a 500.
func TestResourceJSONBodiesRefuseHostileInput(t *testing.T) {
	rw := newRWorld(t, sqliteStore)
	d := rw.doc(rw.alpha, "a.pdf", "%PDF-1.4")
	wf := rw.workflow(rw.alpha, "wf")
	var sess reviewJSON
	readJSON(t, rw.call(member, request{method: "POST", path: "/api/documents/" + d.ID + "/reviews"}), &sess)
	routes := []struct {
		name   string
		as     caller
		method string
		path   string
		field  string // a string field of the body, for the wrong-type case
		// group is the groupId the chain reads from the body
		// (Group(FromBody)): the chain answers bodies it cannot read
		// itself, with its own messages.
		group string
	}{
		{"create group", sysAdmin, "POST", "/api/groups", "name", ""},
		{"group settings", groupAdmin, "PUT", "/api/groups/" + rw.alpha, "name", ""},
		{"member role", groupAdmin, "PUT", "/api/groups/" + rw.alpha + "/members/" + bob.Subject, "role", ""},
		{"membership request", other, "POST", "/api/groups/" + rw.alpha + "/requests", "message", ""},
		{"create workflow", groupAdmin, "POST", "/api/workflows", "name", rw.alpha},
		{"workflow version", groupAdmin, "POST", "/api/workflows/" + wf.ID + "/versions", "config", ""},
		{"OCR result", groupKey, "PUT", "/api/documents/" + d.ID + "/ocr", "engine", ""},
		{"corrections", member, "POST", "/api/reviews/" + sess.ID + "/corrections", "corrections", ""},
	}
	bodies := []struct {
		name, body string
		status     int
		mention    string
	}{
		{"malformed JSON is 400", `{"name":`, 400, "Invalid request body"},
		{"a string field of the wrong type is 400 naming it", `{"FIELD":12}`, 400, "FIELD"},
		{"an unknown field is 400 naming it", `{"zzz":1}`, 400, "zzz"},
		{"trailing data is 400", `{} {}`, 400, "after the JSON object"},
		{"trailing garbage is 400", `{}x`, 400, ""},
		{"a stray closing bracket after the object is 400", `{} ]`, 400, "after the JSON object"},
		{"a stray closing brace after the object is 400", `{}}`, 400, "after the JSON object"},
		{"an array instead of an object is 400", `[]`, 400, ""},
		{"deep nesting is 400", `{"FIELD":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, 400, ""},
		{"invalid UTF-8 escapes are not a 500", `{"FIELD":"\ud800"}`, 400, "FIELD"},
		{"a body over the limit is 413", `{"FIELD":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "too large"},
	}
	for _, rt := range routes {
		for _, b := range bodies {
			t.Run(rt.name+": "+b.name, func(t *testing.T) {
				body := strings.ReplaceAll(b.body, "FIELD", rt.field)
				mention := strings.ReplaceAll(b.mention, "FIELD", rt.field)
				if rt.group != "" && strings.HasPrefix(body, "{") {
					body = `{"groupId":"` + rt.group + `",` + strings.TrimPrefix(body, "{")
					body = strings.Replace(body, ",}", "}", 1)
					if b.status == 400 && !strings.Contains(b.name, "naming it") {
						mention = ""
					}
				}
				resp := rw.call(rt.as, request{method: rt.method, path: rt.path, body: body})
				if b.name == "invalid UTF-8 escapes are not a 500" {
					// A lone surrogate decodes to U+FFFD: accepted or refused on
					// its merits, never a server error.
					if resp.StatusCode >= 500 {
						t.Fatalf("%s", resp.Status)
					}
					resp.Body.Close()
					return
				}
				checkErrShape(t, resp, b.status, mention)
			})
		}
		t.Run(rt.name+": an empty body is 400", func(t *testing.T) {
			h := map[string]string{"Content-Type": "application/json"}
			path := rt.path
			if rt.name == "membership request" {
				path = "/api/groups/" + rw.st.createGroup(uniqName("Delta")) + "/requests"
			}
			resp := rw.call(rt.as, request{method: rt.method, path: path, header: h})
			if rt.name == "membership request" {
				// The message is optional: no body asks without one.
				if resp.StatusCode != 201 {
					t.Fatalf("%s", resp.Status)
				}
				resp.Body.Close()
				return
			}
			checkErrShape(t, resp, 400, "")
		})
	}
}

// Path and query parameters that cannot name anything are 400; ids that
// could but do not are 404.
func TestResourceParametersRefuseHostileInput(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			rw := newRWorld(t, be.open)
			d := rw.doc(rw.alpha, "a.pdf", "%PDF-1.4")
			wf := rw.workflow(rw.alpha, "wf")
			unknown := "6f1c1a4e-4f5e-4d8e-9a51-0c0f3c1a2b3d"
			cases := []struct {
				name   string
				as     caller
				path   string
				status int
			}{
				{"a document id that is not a UUID is 400", member, "/api/documents/not-a-uuid", 400},
				{"a document id with SQL in it is 400", member, "/api/documents/x'%20OR%20'1'='1", 400},
				{"an unknown document is 404", member, "/api/documents/" + unknown, 404},
				{"an unknown document is 404 for a system admin too", sysAdmin, "/api/documents/" + unknown, 404},
				{"another group's document is 403", other, "/api/documents/" + d.ID, 403},
				{"a workflow id that is not a UUID is 400", member, "/api/workflows/12", 400},
				{"an unknown workflow is 404", member, "/api/workflows/" + unknown, 404},
				{"a version that is not a number is 400", member, "/api/workflows/" + wf.ID + "/versions/one", 400},
				{"a negative version is 400", member, "/api/workflows/" + wf.ID + "/versions/-1", 400},
				{"a huge version is 400", member, "/api/workflows/" + wf.ID + "/versions/99999999999999999999", 400},
				{"a version past the latest is 404", member, "/api/workflows/" + wf.ID + "/versions/2147483647", 404},
				{"a version past 32 bits is 400", member, "/api/workflows/" + wf.ID + "/versions/2147483648", 400},
				{"a version past 32 bits with leading zeros is 400", member, "/api/workflows/" + wf.ID + "/versions/0010000000000", 400},
				{"a review session id that is not a UUID is 400", member, "/api/reviews/abc", 400},
				{"an unknown review session is 404", member, "/api/reviews/" + unknown, 404},
				{"a group id that is not a UUID is 400 for a system admin", sysAdmin, "/api/groups/abc", 400},
				{"an unknown group is 404 for a system admin", sysAdmin, "/api/groups/" + unknown, 404},
				{"a soft-deleted group is 404 for a system admin", sysAdmin, "/api/groups/" + rw.gone, 404},
				{"a soft-deleted group is 403 for its former admin", groupAdmin, "/api/groups/" + rw.gone, 403},
				{"a listing group id that is not a UUID is 400", sysAdmin, "/api/documents?groupId=abc", 400},
				{"a listing group id that is not a UUID is 400 for a member", member, "/api/documents?groupId=abc", 400},
				{"a soft-deleted group's listing is 404 for a system admin", sysAdmin, "/api/documents?groupId=" + rw.gone, 404},
				{"a workflow listing group id that is not a UUID is 400", sysAdmin, "/api/workflows?groupId=abc", 400},
				{"a negative limit is 400", member, "/api/documents?limit=-1", 400},
				{"a zero limit is 400", member, "/api/documents?limit=0", 400},
				{"a huge limit is 400", member, "/api/documents?limit=99999999999999999999999", 400},
				{"a non-numeric limit is 400", member, "/api/documents?limit=ten", 400},
				{"a cursor that is not base64 is 400", member, "/api/documents?cursor=!!!", 400},
				{"a cursor of base64 garbage is 400", member, "/api/documents?cursor=Z2FyYmFnZQ", 400},
				{"a cursor with a far-off year is 400", member, "/api/documents?cursor=MDAwMC0wMS0wMVQwMDowMDowMFp8eA", 400},
				{"a year-0 createdAfter is 400", member, "/api/documents?createdAfter=0000-01-01T00:00:00Z", 400},
				{"an invalid createdBefore is 400", member, "/api/documents?createdBefore=yesterday", 400},
				{"a reversed created range is 400", member, "/api/documents?createdAfter=2025-02-01T00:00:00Z&createdBefore=2025-01-01T00:00:00Z", 400},
				{"hasOcr that is not a boolean is 400", member, "/api/documents?hasOcr=maybe", 400},
				{"an audit limit of 0 is 400", groupAdmin, "/api/audit?limit=0", 400},
				{"an audit limit too large is 400", groupAdmin, "/api/audit?limit=1000000", 400},
				{"an audit before that is not a number is 400", groupAdmin, "/api/audit?before=x", 400},
				{"an audit before that is negative is 400", groupAdmin, "/api/audit?before=-5", 400},
				{"an invalid audit from is 400", groupAdmin, "/api/audit?from=soon", 400},
				{"a reversed audit range is 400", groupAdmin, "/api/audit?from=2025-02-01T00:00:00Z&to=2025-01-01T00:00:00Z", 400},
				{"an audit group id that is not a UUID is 400", sysAdmin, "/api/audit?groupId=abc", 400},
				{"a report without from is 400", groupAdmin, "/api/audit/report?to=2025-01-01", 400},
				{"a report with an invalid date is 400", groupAdmin, "/api/audit/report?from=2025-02-30&to=2025-03-01", 400},
				{"a report with a datetime for a date is 400", groupAdmin, "/api/audit/report?from=2025-01-01T00:00:00Z&to=2025-01-02", 400},
				{"a reversed report range is 400", groupAdmin, "/api/audit/report?from=2025-02-01&to=2025-01-01", 400},
				{"a report over 366 days is 400", groupAdmin, "/api/audit/report?from=2020-01-01&to=2025-01-01", 400},
				{"an unknown time zone is 400", groupAdmin, "/api/audit/report?from=2025-01-01&to=2025-01-02&timeZone=Mars/Olympus", 400},
				{"a time zone path is 400", groupAdmin, "/api/audit/report?from=2025-01-01&to=2025-01-02&timeZone=../../etc/passwd", 400},
				{"the Local time zone is 400", groupAdmin, "/api/audit/report?from=2025-01-01&to=2025-01-02&timeZone=Local", 400},
				{"a membership request status that does not exist is 400", groupAdmin, "/api/groups/" + rw.alpha + "/requests?status=OPEN", 400},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					checkErrShape(t, rw.call(tc.as, request{method: "GET", path: tc.path}), tc.status, "")
				})
			}
			writes := []struct {
				name   string
				as     caller
				method string
				path   string
				status int
			}{
				{"deleting a document by a non-UUID id is 400", member, "DELETE", "/api/documents/nope", 400},
				{"starting a review on a non-UUID document is 400", member, "POST", "/api/documents/nope/reviews", 400},
				{"completing a non-UUID session is 400", member, "POST", "/api/reviews/nope/complete", 400},
				{"approving a non-UUID request is 400", groupAdmin, "POST", "/api/groups/" + rw.alpha + "/requests/nope/approve", 400},
				{"approving an unknown request is 404", groupAdmin, "POST", "/api/groups/" + rw.alpha + "/requests/" + unknown + "/approve", 404},
				{"deleting a non-UUID group is 400", sysAdmin, "DELETE", "/api/groups/nope", 400},
				{"deleting an unknown group is 404", sysAdmin, "DELETE", "/api/groups/" + unknown, 404},
				{"deleting a soft-deleted group again is 404", sysAdmin, "DELETE", "/api/groups/" + rw.gone, 404},
				{"uploading to a non-UUID group is 400 for a system admin", sysAdmin, "POST", "/api/documents?groupId=nope", 400},
				{"uploading to a soft-deleted group is 404 for a system admin", sysAdmin, "POST", "/api/documents?groupId=" + rw.gone, 404},
				{"requesting to join a non-UUID group is 400", other, "POST", "/api/groups/nope/requests", 400},
				{"requesting to join a soft-deleted group is 404", other, "POST", "/api/groups/" + rw.gone + "/requests", 404},
			}
			for _, tc := range writes {
				t.Run(tc.name, func(t *testing.T) {
					checkErrShape(t, rw.call(tc.as, request{method: tc.method, path: tc.path, header: map[string]string{"Content-Type": "application/json"}}), tc.status, "")
				})
			}
			_ = docplatform.RoleAdmin
		})
	}
}

// Strings a database cannot hold (NUL: PostgreSQL's text refuses it) or
// that are not valid UTF-8 are refused with 400 naming the field, on both
// databases, never a 500.
func TestResourceStringsRefuseNUL(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			rw := newRWorld(t, be.open)
			d := rw.doc(rw.alpha, "a.pdf", "%PDF-1.4")
			var sess reviewJSON
			readJSON(t, rw.call(member, request{method: "POST", path: "/api/documents/" + d.ID + "/reviews"}), &sess)
			cases := []struct {
				name, field string
				as          caller
				method      string
				path, body  string
			}{
				{"a group name", "name", sysAdmin, "POST", "/api/groups", `{"name":"a\u0000b"}`},
				{"a group description", "description", groupAdmin, "PUT", "/api/groups/" + rw.alpha, `{"description":"a\u0000b"}`},
				{"a membership request message", "message", other, "POST", "/api/groups/" + rw.alpha + "/requests", `{"message":"a\u0000b"}`},
				{"a workflow name", "name", groupAdmin, "POST", "/api/workflows", `{"groupId":"` + rw.alpha + `","name":"a\u0000b","config":{}}`},
				{"a workflow description", "description", groupAdmin, "POST", "/api/workflows", `{"groupId":"` + rw.alpha + `","name":"n","description":"\u0000","config":{}}`},
				{"an OCR engine", "engine", groupKey, "PUT", "/api/documents/" + d.ID + "/ocr", `{"engine":"a\u0000","result":{}}`},
				{"a correction value", "value", member, "POST", "/api/reviews/" + sess.ID + "/corrections", `{"corrections":[{"field":"f","value":"a\u0000"}]}`},
				{"a correction field", "field", member, "POST", "/api/reviews/" + sess.ID + "/corrections", `{"corrections":[{"field":"f\u0000","value":"a"}]}`},
				{"an original value", "originalValue", member, "POST", "/api/reviews/" + sess.ID + "/corrections", `{"corrections":[{"field":"f","originalValue":"\u0000","value":"a"}]}`},
			}
			for _, tc := range cases {
				t.Run(tc.name+" with NUL is 400", func(t *testing.T) {
					checkErrShape(t, rw.call(tc.as, request{method: tc.method, path: tc.path, body: tc.body}), 400, tc.field)
				})
			}
			params := []struct {
				name string
				as   caller
				path string
			}{
				{"a NUL in a name filter", member, "/api/documents?q=a%00b"},
				{"invalid UTF-8 in a name filter", member, "/api/documents?q=%ff"},
				{"a NUL in a content type filter", member, "/api/documents?contentType=%00"},
				{"a NUL in an audit action", groupAdmin, "/api/audit?action=%00"},
				{"a NUL in a user id", groupAdmin, "/api/groups/" + rw.alpha + "/members/a%00b"},
				{"invalid UTF-8 in a user id", sysAdmin, "/api/admin/users/%ff/promote"},
			}
			for _, tc := range params {
				t.Run(tc.name+" is 400", func(t *testing.T) {
					method := "GET"
					if strings.Contains(tc.path, "/members/") {
						method = "DELETE"
					}
					if strings.HasSuffix(tc.path, "/promote") {
						method = "POST"
					}
					checkErrShape(t, rw.call(tc.as, request{method: method, path: tc.path}), 400, "")
				})
			}
			t.Run("a JSON config or OCR result may carry an escaped NUL: it stays escaped text", func(t *testing.T) {
				resp := rw.call(groupKey, request{method: "PUT", path: "/api/documents/" + d.ID + "/ocr", body: `{"result":{"text":"a\u0000b"}}`})
				resp.Body.Close()
				if resp.StatusCode >= 300 {
					t.Fatalf("%s", resp.Status)
				}
			})
		})
	}
}
