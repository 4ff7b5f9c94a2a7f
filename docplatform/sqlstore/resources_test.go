package sqlstore

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/event"
)

func mkDoc(t *testing.T, s *Store, g docplatform.Group, name string, at time.Time) docplatform.Document {
	t.Helper()
	d, err := s.CreateDocument(ctx, docplatform.Document{GroupID: g.ID, FileName: name, ContentType: "application/pdf", Size: 3, SHA256: "abc", StorageKey: uniq("key"), UploadedBy: "u", CreatedAt: at})
	noErr(t, err)
	return d
}

// TestResources runs the resource tables' rules on both databases.
func TestResources(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openT(t, b.url(t))
			t.Run("membership requests: one open request per user and group, approval makes a MEMBER", func(t *testing.T) {
				u, g := mkUser(t, s), mkGroup(t, s)
				r, err := s.CreateMembershipRequest(ctx, u.ID, g.ID, "please")
				noErr(t, err)
				_, err = s.CreateMembershipRequest(ctx, u.ID, g.ID, "again")
				wantErr(t, err, docplatform.ErrConflict)
				got, err := s.DecideMembershipRequest(ctx, r.ID, true, "admin")
				noErr(t, err)
				if got.Status != docplatform.RequestApproved || got.DecidedBy != "admin" || got.DecidedAt == nil {
					t.Fatalf("%+v", got)
				}
				_, roles, err := s.UserAccess(ctx, u.ID)
				noErr(t, err)
				if roles[g.ID] != docplatform.RoleMember {
					t.Fatalf("roles %v", roles)
				}
				_, err = s.DecideMembershipRequest(ctx, r.ID, false, "admin")
				wantErr(t, err, docplatform.ErrConflict)
				list, err := s.MembershipRequests(ctx, g.ID, "", docplatform.RequestApproved)
				noErr(t, err)
				if len(list) != 1 || list[0].ID != r.ID {
					t.Fatalf("%+v", list)
				}
			})
			t.Run("membership requests: a soft-deleted group takes none", func(t *testing.T) {
				u, g := mkUser(t, s), mkGroup(t, s)
				noErr(t, s.SoftDeleteGroup(ctx, g.ID))
				_, err := s.CreateMembershipRequest(ctx, u.ID, g.ID, "")
				wantErr(t, err, docplatform.ErrNotFound)
			})
			t.Run("documents: listing is restricted to the groups given, newest first, paged by cursor", func(t *testing.T) {
				g1, g2 := mkGroup(t, s), mkGroup(t, s)
				base := time.Now().UTC().Truncate(time.Second)
				var ids []string
				for i := range 5 {
					ids = append(ids, mkDoc(t, s, g1, "Report_"+string(rune('a'+i))+".pdf", base.Add(time.Duration(i)*time.Second)).ID)
				}
				mkDoc(t, s, g2, "other.pdf", base)
				page, err := s.ListDocuments(ctx, docplatform.DocumentFilter{GroupIDs: []string{g1.ID}, Limit: 2})
				noErr(t, err)
				if len(page) != 2 || page[0].ID != ids[4] || page[1].ID != ids[3] {
					t.Fatalf("first page %v", page)
				}
				last := page[1]
				page, err = s.ListDocuments(ctx, docplatform.DocumentFilter{GroupIDs: []string{g1.ID}, Limit: 10, After: &docplatform.DocumentCursor{CreatedAt: last.CreatedAt, ID: last.ID}})
				noErr(t, err)
				if len(page) != 3 || page[0].ID != ids[2] {
					t.Fatalf("second page %v", page)
				}
				page, err = s.ListDocuments(ctx, docplatform.DocumentFilter{GroupIDs: []string{g1.ID}, Limit: 10, NameContains: "_C"})
				noErr(t, err)
				if len(page) != 1 || page[0].ID != ids[2] {
					t.Fatalf("name filter treats _ literally and ignores case: %v", page)
				}
				page, err = s.ListDocuments(ctx, docplatform.DocumentFilter{GroupIDs: nil, Limit: 10})
				noErr(t, err)
				if len(page) != 0 {
					t.Fatalf("no groups, yet %d documents", len(page))
				}
			})
			t.Run("OCR results: one per document, replaced on a second write", func(t *testing.T) {
				g := mkGroup(t, s)
				d := mkDoc(t, s, g, "x.pdf", time.Time{})
				_, created, err := s.PutOCRResult(ctx, docplatform.OCRResult{DocumentID: d.ID, Engine: "e1", Result: json.RawMessage(`{"a":1}`), WrittenBy: "k"})
				noErr(t, err)
				if !created {
					t.Fatal("first write not created")
				}
				o, created, err := s.PutOCRResult(ctx, docplatform.OCRResult{DocumentID: d.ID, Engine: "e2", Result: json.RawMessage(`{"b":2}`), WrittenBy: "k"})
				noErr(t, err)
				if created || o.Engine != "e2" || string(o.Result) != `{"b":2}` || o.GroupID != g.ID {
					t.Fatalf("%v %+v", created, o)
				}
				got, err := s.Document(ctx, d.ID)
				noErr(t, err)
				if !got.HasOCR {
					t.Fatal("HasOCR false")
				}
				noErr(t, s.DeleteDocument(ctx, d.ID))
				_, err = s.OCRResult(ctx, d.ID)
				wantErr(t, err, docplatform.ErrNotFound)
			})
			t.Run("workflows: versions are numbered and concurrent saves get distinct numbers", func(t *testing.T) {
				g := mkGroup(t, s)
				w, v, err := s.CreateWorkflow(ctx, docplatform.Workflow{GroupID: g.ID, Name: "Invoices"}, []byte(`{"v":1}`))
				noErr(t, err)
				if v.Version != 1 {
					t.Fatalf("first version %d", v.Version)
				}
				_, _, err = s.CreateWorkflow(ctx, docplatform.Workflow{GroupID: g.ID, Name: "invoices"}, []byte(`{}`))
				wantErr(t, err, docplatform.ErrConflict)
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						_, err := s.AddWorkflowVersion(ctx, w.ID, []byte(`{"v":"n"}`), "u")
						if err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
				vs, err := s.WorkflowVersions(ctx, w.ID)
				noErr(t, err)
				if len(vs) != 5 || vs[0].Version != 5 || vs[4].Version != 1 || string(vs[4].Config) != `{"v":1}` {
					t.Fatalf("%+v", vs)
				}
			})
			t.Run("reviews: the lock excludes a second reviewer until it lapses, then is taken over", func(t *testing.T) {
				g := mkGroup(t, s)
				d := mkDoc(t, s, g, "r.pdf", time.Time{})
				r1, _, err := s.StartReview(ctx, d.ID, "alice", time.Hour)
				noErr(t, err)
				_, _, err = s.StartReview(ctx, d.ID, "bob", time.Hour)
				wantErr(t, err, docplatform.ErrLocked)
				again, created, err := s.StartReview(ctx, d.ID, "alice", time.Hour)
				noErr(t, err)
				if again.ID != r1.ID || created {
					t.Fatal("same reviewer got a second session")
				}
				_, err = s.AddCorrections(ctx, r1.ID, "alice", time.Hour, []docplatform.Correction{{Field: "total", OriginalValue: "1", Value: "7"}})
				noErr(t, err)
				_, err = s.AddCorrections(ctx, r1.ID, "bob", time.Hour, []docplatform.Correction{{Field: "total", Value: "7"}})
				wantErr(t, err, docplatform.ErrNotActive)
				// Lapse the lock by starting with a negative lifetime.
				_, _, err = s.StartReview(ctx, d.ID, "alice", -time.Second)
				noErr(t, err)
				r2, _, err := s.StartReview(ctx, d.ID, "bob", time.Hour)
				noErr(t, err)
				old, err := s.ReviewSession(ctx, r1.ID)
				noErr(t, err)
				if old.Status != docplatform.ReviewExpired || r2.ReviewerID != "bob" {
					t.Fatalf("old %+v new %+v", old, r2)
				}
				_, err = s.EndReview(ctx, r1.ID, "alice", docplatform.ReviewCompleted)
				wantErr(t, err, docplatform.ErrNotActive)
				done, err := s.EndReview(ctx, r2.ID, "bob", docplatform.ReviewCompleted)
				noErr(t, err)
				if done.Status != docplatform.ReviewCompleted || done.EndedAt == nil {
					t.Fatalf("%+v", done)
				}
				cs, err := s.Corrections(ctx, r1.ID)
				noErr(t, err)
				if len(cs) != 1 || cs[0].Value != "7" {
					t.Fatalf("%+v", cs)
				}
			})
			t.Run("reviews: two reviewers starting at once, exactly one wins", func(t *testing.T) {
				g := mkGroup(t, s)
				d := mkDoc(t, s, g, "race.pdf", time.Time{})
				var wg sync.WaitGroup
				errs := make([]error, 6)
				for i := range errs {
					wg.Go(func() { _, _, errs[i] = s.StartReview(ctx, d.ID, uniq("rev"), time.Hour) })
				}
				wg.Wait()
				wins := 0
				for _, err := range errs {
					if err == nil {
						wins++
					} else if err != docplatform.ErrLocked {
						t.Errorf("unexpected %v", err)
					}
				}
				if wins != 1 {
					t.Fatalf("%d winners", wins)
				}
			})
			t.Run("audit: entries keep their datetime event and filter by group and time", func(t *testing.T) {
				g := uniq("g")
				at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
				ev, _ := event.NewDateTime(at)
				noErr(t, s.AppendAudit(ctx, docplatform.AuditEntry{When: ev, Action: docplatform.AuditMembershipApproved, Actor: "u", GroupID: g, Outcome: docplatform.OutcomeSuccess}))
				ev2, _ := event.NewDateTime(at.Add(48 * time.Hour))
				noErr(t, s.AppendAudit(ctx, docplatform.AuditEntry{When: ev2, Action: docplatform.AuditAccessDenied, GroupID: g, Outcome: docplatform.OutcomeDenied}))
				from, to := at.Add(-time.Hour), at.Add(time.Hour)
				list, err := s.ListAudit(ctx, docplatform.AuditFilter{GroupIDs: []string{g}, From: &from, To: &to})
				noErr(t, err)
				if len(list) != 1 || !list[0].When.Equal(ev) || list[0].Action != docplatform.AuditMembershipApproved {
					t.Fatalf("%+v", list)
				}
				dateOnly, _ := event.NewDate(event.Date{Year: 2030, Month: 1, Day: 2})
				err = s.AppendAudit(ctx, docplatform.AuditEntry{When: dateOnly, Action: docplatform.AuditLogin, Outcome: docplatform.OutcomeSuccess})
				wantErr(t, err, docplatform.ErrInvalid)
			})
			t.Run("explain: the member listing uses the (group_id, created_at) index", func(t *testing.T) {
				plan, err := s.ExplainListDocuments(ctx, docplatform.DocumentFilter{GroupIDs: []string{"g"}, Limit: 50})
				noErr(t, err)
				if !strings.Contains(plan, "documents_group_created") {
					t.Fatalf("plan does not use the group index:\n%s", plan)
				}
			})
		})
	}
}
