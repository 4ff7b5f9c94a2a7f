package httpapi_test

import (
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/httpapi"
)

type reviewJSON struct {
	ID, DocumentID, ReviewerID, Status string
	ExpiresAt                          time.Time
	Corrections                        []struct{ Field, OriginalValue, Value string }
}

func TestReviewSessions(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			rw := newRWorld(t, b.open)
			d := rw.doc(rw.alpha, "invoice.pdf", "%PDF-1.4")
			start := request{method: "POST", path: "/api/documents/" + d.ID + "/reviews"}
			var first reviewJSON

			t.Run("starting a review takes the document's lock", func(t *testing.T) {
				resp := rw.call(member, start)
				readJSON(t, resp, &first)
				if resp.StatusCode != 201 || first.Status != "ACTIVE" || first.ReviewerID != bob.Subject {
					t.Fatalf("%s %+v", resp.Status, first)
				}
			})
			t.Run("a second reviewer gets 409 while the lock holds", func(t *testing.T) {
				if resp := rw.call(groupAdmin, start); resp.StatusCode != 409 {
					t.Fatalf("%s", resp.Status)
				}
			})
			t.Run("the reviewer starting again gets the same session, renewed", func(t *testing.T) {
				var again reviewJSON
				resp := rw.call(member, start)
				readJSON(t, resp, &again)
				if resp.StatusCode != 200 || again.ID != first.ID {
					t.Fatalf("%s %+v", resp.Status, again)
				}
			})
			t.Run("only the reviewer submits corrections", func(t *testing.T) {
				body := `{"corrections":[{"field":"total","originalValue":"1O0","value":"100"}]}`
				if resp := rw.call(groupAdmin, request{method: "POST", path: "/api/reviews/" + first.ID + "/corrections", body: body}); resp.StatusCode != 403 {
					t.Fatalf("other reviewer: %s", resp.Status)
				}
				if resp := rw.call(member, request{method: "POST", path: "/api/reviews/" + first.ID + "/corrections", body: body}); resp.StatusCode != 201 {
					t.Fatalf("reviewer: %s", resp.Status)
				}
				for _, bad := range []string{`{"corrections":[]}`, `{"corrections":[{"field":"","value":"x"}]}`, `{"corrections":"x"}`} {
					if resp := rw.call(member, request{method: "POST", path: "/api/reviews/" + first.ID + "/corrections", body: bad}); resp.StatusCode != 400 {
						t.Errorf("%s: %s", bad, resp.Status)
					}
				}
				var got reviewJSON
				readJSON(t, rw.call(groupAdmin, request{method: "GET", path: "/api/reviews/" + first.ID}), &got)
				if len(got.Corrections) != 1 || got.Corrections[0].Value != "100" || got.Corrections[0].OriginalValue != "1O0" {
					t.Fatalf("%+v", got)
				}
			})
			t.Run("completing releases the lock; a finished session takes no more", func(t *testing.T) {
				if resp := rw.call(member, request{method: "POST", path: "/api/reviews/" + first.ID + "/complete"}); resp.StatusCode != 200 {
					t.Fatalf("%s", resp.Status)
				}
				if resp := rw.call(member, request{method: "POST", path: "/api/reviews/" + first.ID + "/abandon"}); resp.StatusCode != 409 {
					t.Fatalf("abandon after complete: %s", resp.Status)
				}
				if resp := rw.call(groupAdmin, start); resp.StatusCode != 201 {
					t.Fatalf("next reviewer: %s", resp.Status)
				}
			})
			t.Run("the review queue lists documents with OCR and no completed review", func(t *testing.T) {
				queued := rw.doc(rw.alpha, "queued.pdf", "%PDF-1.4")
				rw.call(groupKey, request{method: "PUT", path: "/api/documents/" + queued.ID + "/ocr", body: `{"result":{}}`})
				rw.call(groupKey, request{method: "PUT", path: "/api/documents/" + d.ID + "/ocr", body: `{"result":{}}`})
				var q struct{ Documents []docJSON }
				readJSON(t, rw.call(member, request{method: "GET", path: "/api/documents?hasOcr=true&reviewed=false"}), &q)
				if len(q.Documents) != 1 || q.Documents[0].ID != queued.ID {
					t.Fatalf("queue %+v", q.Documents)
				}
				readJSON(t, rw.call(member, request{method: "GET", path: "/api/documents?reviewed=true"}), &q)
				if len(q.Documents) != 1 || q.Documents[0].ID != d.ID {
					t.Fatalf("reviewed %+v", q.Documents)
				}
			})
			t.Run("an unknown document or session is 404", func(t *testing.T) {
				if resp := rw.call(member, request{method: "POST", path: "/api/documents/6f1c1a4e-4f5e-4d8e-9a51-0c0f3c1a2b3d/reviews"}); resp.StatusCode != 404 {
					t.Errorf("%s", resp.Status)
				}
				if resp := rw.call(member, request{method: "GET", path: "/api/reviews/6f1c1a4e-4f5e-4d8e-9a51-0c0f3c1a2b3d"}); resp.StatusCode != 404 {
					t.Errorf("%s", resp.Status)
				}
			})
		})
	}
}

// A lock that lapsed is taken over by the next reviewer; the old session
// is then EXPIRED and takes no more corrections.
func TestExpiredReviewLockIsTakenOver(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			rw := newRWorld(t, b.open, func(r *httpapi.Resources) { r.ReviewLock = 300 * time.Millisecond })
			d := rw.doc(rw.alpha, "x.pdf", "%PDF-1.4")
			start := request{method: "POST", path: "/api/documents/" + d.ID + "/reviews"}
			var bobs, adas reviewJSON
			readJSON(t, rw.call(member, start), &bobs)
			time.Sleep(time.Until(bobs.ExpiresAt) + 50*time.Millisecond)
			resp := rw.call(groupAdmin, start)
			readJSON(t, resp, &adas)
			if resp.StatusCode != 201 || adas.ReviewerID != ada.Subject {
				t.Fatalf("take-over: %s %+v", resp.Status, adas)
			}
			var old reviewJSON
			readJSON(t, rw.call(member, request{method: "GET", path: "/api/reviews/" + bobs.ID}), &old)
			if old.Status != "EXPIRED" {
				t.Fatalf("old session %s", old.Status)
			}
			if resp := rw.call(member, request{method: "POST", path: "/api/reviews/" + bobs.ID + "/corrections", body: `{"corrections":[{"field":"a","value":"b"}]}`}); resp.StatusCode != 409 {
				t.Fatalf("corrections on the expired session: %s", resp.Status)
			}
		})
	}
}
