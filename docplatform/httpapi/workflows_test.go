package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

type workflowJSON struct {
	ID, GroupID, Name string
	LatestVersion     int
	Config            json.RawMessage
}

func TestWorkflowVersions(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			rw := newRWorld(t, b.open)
			var wf workflowJSON
			t.Run("creating a workflow saves version 1", func(t *testing.T) {
				resp := rw.call(groupAdmin, request{method: "POST", path: "/api/workflows", body: `{"groupId":"` + rw.alpha + `","name":"Invoices","config":{"steps":["ocr"]}}`})
				readJSON(t, resp, &wf)
				if resp.StatusCode != 201 || wf.LatestVersion != 1 || string(wf.Config) != `{"steps":["ocr"]}` {
					t.Fatalf("%s %+v", resp.Status, wf)
				}
			})
			t.Run("a name the group already uses is 409, ignoring case", func(t *testing.T) {
				resp := rw.call(groupAdmin, request{method: "POST", path: "/api/workflows", body: `{"groupId":"` + rw.alpha + `","name":"invoices","config":{}}`})
				if resp.StatusCode != 409 {
					t.Fatalf("%s", resp.Status)
				}
			})
			t.Run("a new version gets the next number and leaves the old one as it was", func(t *testing.T) {
				var v struct{ Version int }
				resp := rw.call(groupAdmin, request{method: "POST", path: "/api/workflows/" + wf.ID + "/versions", body: `{"config":{"steps":["ocr","review"]}}`})
				readJSON(t, resp, &v)
				if resp.StatusCode != 201 || v.Version != 2 {
					t.Fatalf("%s %+v", resp.Status, v)
				}
				var v1 struct{ Config json.RawMessage }
				readJSON(t, rw.call(member, request{method: "GET", path: "/api/workflows/" + wf.ID + "/versions/1"}), &v1)
				if string(v1.Config) != `{"steps":["ocr"]}` {
					t.Fatalf("version 1 changed: %s", v1.Config)
				}
				var latest workflowJSON
				readJSON(t, rw.call(groupKey, request{method: "GET", path: "/api/workflows/" + wf.ID}), &latest)
				if latest.LatestVersion != 2 || string(latest.Config) != `{"steps":["ocr","review"]}` {
					t.Fatalf("%+v", latest)
				}
			})
			t.Run("versions cannot be rewritten", func(t *testing.T) {
				for _, m := range []string{"PUT", "PATCH", "DELETE"} {
					if resp := rw.call(groupAdmin, request{method: m, path: "/api/workflows/" + wf.ID + "/versions/1", body: `{"config":{}}`}); resp.StatusCode != 405 {
						t.Errorf("%s: %s", m, resp.Status)
					}
				}
			})
			t.Run("bad input is 400", func(t *testing.T) {
				for _, body := range []string{
					`{"groupId":"` + rw.alpha + `","name":"","config":{}}`,
					`{"groupId":"` + rw.alpha + `","name":"x","config":[1]}`,
					`{"groupId":"` + rw.alpha + `","name":"x"}`,
					`{"groupId":"` + rw.alpha + `","name":"x","config":{},"colour":"red"}`,
					`{"groupId":"` + rw.alpha + `","name":"x","config":{},"description":"` + strings.Repeat("d", 1001) + `"}`,
				} {
					if resp := rw.call(groupAdmin, request{method: "POST", path: "/api/workflows", body: body}); resp.StatusCode != 400 {
						t.Errorf("%s: %s", body, resp.Status)
					}
				}
				if resp := rw.call(member, request{method: "GET", path: "/api/workflows/" + wf.ID + "/versions/zero"}); resp.StatusCode != 400 {
					t.Errorf("version zero: %s", resp.Status)
				}
			})
			t.Run("listing shows the caller's groups only", func(t *testing.T) {
				rw.workflow(rw.beta, "Beta flow")
				var l struct{ Workflows []workflowJSON }
				readJSON(t, rw.call(member, request{method: "GET", path: "/api/workflows"}), &l)
				for _, w := range l.Workflows {
					if w.GroupID != rw.alpha {
						t.Fatalf("member of alpha sees %+v", w)
					}
				}
				readJSON(t, rw.call(sysAdmin, request{method: "GET", path: "/api/workflows"}), &l)
				if len(l.Workflows) != 2 {
					t.Fatalf("system admin sees %d", len(l.Workflows))
				}
			})
		})
	}
}
