package sqlstore

import (
	"testing"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/testsvc"
)

// BenchmarkListDocumentsSeveralGroups is a member's first page of 50 over
// 10 of 100 groups holding 100,000 documents on PostgreSQL (10,000 in the
// member's groups, interleaved in time with the others), the store's
// IN-list query, which the planner serves from the (created_at, id) index
// filtered by group.
//
//	GOVKIT_TEST_POSTGRES_URL=… go test -run '^$' -bench ListDocumentsSeveralGroups ./docplatform/sqlstore/
func BenchmarkListDocumentsSeveralGroups(b *testing.B) {
	s, err := Open(ctx, testsvc.RequirePostgres(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var groups []string
	for range 100 {
		g, err := s.CreateGroup(ctx, uniq("group"), "", "")
		if err != nil {
			b.Fatal(err)
		}
		groups = append(groups, g.ID)
	}
	seedDocuments(b, s, groups, 100_000)
	f := docplatform.DocumentFilter{GroupIDs: groups[:10], Limit: 51}
	b.ReportAllocs()
	for b.Loop() {
		page, err := s.ListDocuments(ctx, f)
		if err != nil || len(page) != 51 {
			b.Fatal(len(page), err)
		}
	}
}
