package sqlstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/testsvc"
)

// seedDocuments fills a PostgreSQL store with n documents spread evenly
// over groups, newest first by index, and refreshes the planner's
// statistics, for plan tests and benchmarks.
func seedDocuments(t testing.TB, s *Store, groups []string, n int) {
	t.Helper()
	_, err := s.w.ExecContext(context.Background(), `
		INSERT INTO documents (id, group_id, file_name, content_type, size, sha256, storage_key, uploaded_by, created_at)
		SELECT 'seed-' || i, ($1::text[])[(i % cardinality($1::text[])) + 1], 'file-' || i || '.pdf', 'application/pdf', 1000, '', 'seed-' || i, 'seed',
		       $2::timestamptz - make_interval(secs => i)
		FROM generate_series(1, $3::int) AS i`, groups, time.Now().UTC(), n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(context.Background(), `ANALYZE documents`); err != nil {
		t.Fatal(err)
	}
}

// With 100 groups and 100,000 documents on PostgreSQL, a member's listing
// (one group, newest first, a page of 50, and the next page by cursor) is
// an index scan of documents_group_created, never a scan of the table.
func TestListDocumentsPlanUsesGroupIndex(t *testing.T) {
	s := openT(t, testsvc.RequirePostgres(t))
	var groups []string
	for range 100 {
		groups = append(groups, mkGroup(t, s).ID)
	}
	seedDocuments(t, s, groups, 100_000)
	page, err := s.ListDocuments(ctx, docplatform.DocumentFilter{GroupIDs: groups[7:8], Limit: 50})
	noErr(t, err)
	if len(page) != 50 {
		t.Fatalf("page of %d", len(page))
	}
	last := page[len(page)-1]
	for name, f := range map[string]docplatform.DocumentFilter{
		"first page":                      {GroupIDs: groups[7:8], Limit: 51},
		"next page":                       {GroupIDs: groups[7:8], Limit: 51, After: &docplatform.DocumentCursor{CreatedAt: last.CreatedAt, ID: last.ID}},
		"three groups":                    {GroupIDs: groups[3:6], Limit: 51},
		"ten groups, next page":           {GroupIDs: groups[10:20], Limit: 51, After: &docplatform.DocumentCursor{CreatedAt: last.CreatedAt, ID: last.ID}},
		"narrowed to one of three groups": {GroupIDs: groups[3:6], GroupID: groups[4], Limit: 51},
	} {
		t.Run(name, func(t *testing.T) {
			plan, err := s.ExplainListDocuments(ctx, f)
			noErr(t, err)
			t.Logf("plan:\n%s", plan)
			// One group: its index range. Several: the planner may prefer
			// the time index filtered by group (the seeded groups are
			// interleaved in time); never a scan of the table.
			single := len(f.GroupIDs) == 1 || f.GroupID != ""
			if single && !strings.Contains(plan, "documents_group_created") ||
				!single && !strings.Contains(plan, "documents_group_created") && !strings.Contains(plan, "documents_created") ||
				strings.Contains(plan, "Seq Scan on documents") {
				t.Fatalf("plan does not use an index of the listing:\n%s", plan)
			}
		})
	}
	t.Run("every group (a system admin) scans the time index", func(t *testing.T) {
		plan, err := s.ExplainListDocuments(ctx, docplatform.DocumentFilter{AllGroups: true, Limit: 51})
		noErr(t, err)
		t.Logf("plan:\n%s", plan)
		if !strings.Contains(plan, "documents_created") || strings.Contains(plan, "Seq Scan on documents") {
			t.Fatalf("plan does not use the time index:\n%s", plan)
		}
	})
}
