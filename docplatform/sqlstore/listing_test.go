package sqlstore

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
)

// A listing over several groups (one index scan per group, merged) pages
// through exactly the documents an unmerged query would give, newest
// first, with no document twice or missing, filters applied in every
// group, and a soft-deleted group's documents left out of the all-groups
// listing.
func TestListDocumentsAcrossGroupsPagesInOrder(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openT(t, b.url(t))
			gs := []docplatform.Group{mkGroup(t, s), mkGroup(t, s), mkGroup(t, s)}
			base := time.Now().UTC().Truncate(time.Second)
			var want []string
			for i := range 30 {
				// Same timestamps across groups, so the id breaks ties.
				d := mkDoc(t, s, gs[i%3], fmt.Sprintf("f%02d.pdf", i), base.Add(-time.Duration(i/2)*time.Second))
				want = append(want, d.ID)
			}
			other := mkGroup(t, s)
			mkDoc(t, s, other, "elsewhere.pdf", base)
			ids := []string{gs[0].ID, gs[1].ID, gs[2].ID}
			all := func(f docplatform.DocumentFilter) []docplatform.Document {
				t.Helper()
				var out []docplatform.Document
				for {
					page, err := s.ListDocuments(ctx, f)
					noErr(t, err)
					out = append(out, page...)
					if len(page) < f.Limit {
						return out
					}
					last := page[len(page)-1]
					f.After = &docplatform.DocumentCursor{CreatedAt: last.CreatedAt, ID: last.ID}
				}
			}
			got := all(docplatform.DocumentFilter{GroupIDs: ids, Limit: 4})
			if len(got) != 30 {
				t.Fatalf("%d documents", len(got))
			}
			for i := 1; i < len(got); i++ {
				a, b := got[i-1], got[i]
				if a.CreatedAt.Before(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID {
					t.Fatalf("out of order at %d: %v %s, %v %s", i, a.CreatedAt, a.ID, b.CreatedAt, b.ID)
				}
			}
			var gotIDs []string
			for _, d := range got {
				gotIDs = append(gotIDs, d.ID)
			}
			slices.Sort(gotIDs)
			slices.Sort(want)
			if !slices.Equal(gotIDs, want) {
				t.Fatal("pages do not hold exactly the groups' documents")
			}
			filtered := all(docplatform.DocumentFilter{GroupIDs: ids, NameContains: "f1", Limit: 3})
			if len(filtered) != 10 {
				t.Fatalf("name filter across groups: %d", len(filtered))
			}
			noErr(t, s.SoftDeleteGroup(ctx, gs[2].ID))
			every := all(docplatform.DocumentFilter{AllGroups: true, Limit: 7})
			if len(every) != 21 {
				t.Fatalf("all live groups: %d documents, want 21", len(every))
			}
			outside := all(docplatform.DocumentFilter{GroupIDs: ids[:1], GroupID: other.ID, Limit: 5})
			if len(outside) != 0 {
				t.Fatalf("narrowed to a group outside the caller's: %d", len(outside))
			}
		})
	}
}
