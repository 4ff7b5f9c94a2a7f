package embeddedmongo

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestPagePlans: the SQL a page is found with reads what pageSQL's
// comment says, by SQLite's own EXPLAIN QUERY PLAN: a range of a
// composite whose leading fields the equalities fix and then the sort
// field, with no sort; a walk of the sort field's composite when the
// matches are many; a sort of the matches when they are few.
func TestPagePlans(t *testing.T) {
	ctx := context.Background()
	srv, mdb := startStore(t)
	const n = 6000
	docs := make([]any, n)
	epoch := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range docs {
		docs[i] = bson.D{
			{Key: "svc", Value: fmt.Sprint("svc", i%10)}, {Key: "state", Value: []string{"on", "off", "gone"}[i%3]},
			{Key: "ch", Value: []string{"email", "sms"}[i%2]}, {Key: "uci", Value: fmt.Sprint("u", i)},
			{Key: "created", Value: epoch.Add(time.Duration(i) * time.Minute)},
		}
	}
	if _, err := mdb.Collection("subs").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	l := srv.Lookup("db")
	defer l.Close()
	kinds := []Field{{Name: "svc", Kind: KindString}, {Name: "state", Kind: KindString}, {Name: "ch", Kind: KindString}, {Name: "uci", Kind: KindString}, {Name: "created", Kind: KindDate}}
	composites := [][]string{{"created", "svc", "ch", "state"}, {"svc", "state", "ch"}, {"uci", "svc", "ch", "state"}}
	if err := l.IndexFields(ctx, "subs", kinds, []string{"uci"}, composites); err != nil {
		t.Fatal(err)
	}
	db, err := l.conn()
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := l.table(ctx, db, "subs", false)
	if err != nil {
		t.Fatal(err)
	}
	eq := func(f, v string) Cond { return Cond{Field: f, Op: OpEq, Values: []any{v}} }
	tests := []struct {
		name      string
		conds     []Cond
		order     string
		skip      int64
		index     string // the index the plan must read ("": any)
		sorts     bool   // whether SQLite sorts (a temporary B-tree)
		wantFirst string // the uci of the first record (worked out from how docs are made: i%10, i%3, i%2)
	}{
		{"a range: the service fixed, sorted by state", []Cond{eq("svc", "svc3")}, "state", 0, "_govkit_c_svc_state_ch", false, "u23"},
		{"a range with a further condition on the index", []Cond{eq("svc", "svc3"), eq("ch", "sms")}, "state", 0, "_govkit_c_svc_state_ch", false, "u23"},
		{"many matches: the address composite walked in order", []Cond{eq("svc", "svc3")}, "uci", 0, "_govkit_c_uci_svc_ch_state", false, "u1003"},
		{"no conditions: the sort field's composite", nil, "created", 0, "_govkit_c_created_svc_ch_state", false, "u0"},
		{"few matches: sorted", []Cond{eq("uci", "u42")}, "created", 0, "", true, "u42"},
		{"fewer matches than a walk would pass: sorted", []Cond{eq("uci", "u42"), eq("svc", "svc2")}, "uci", 0, "", true, "u42"},
		{"a walk past a few of every 30 entries", []Cond{eq("svc", "svc3"), eq("ch", "sms"), eq("state", "gone")}, "uci", 150, "_govkit_c_uci_svc_ch_state", false, "u5063"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := Query{Coll: "subs", Fields: kinds, Conds: tt.conds, Order: []Order{{Field: tt.order}}, Skip: tt.skip, Limit: 25, Composites: composites}
			sqlq, args, err := l.pageSQL(ctx, db, tbl, q)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlq, args...)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for rows.Next() {
				var id, parent, notused int
				var detail string
				if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			rows.Close()
			p := strings.Join(plan, "; ")
			if tt.index != "" && !strings.Contains(p, tbl+tt.index) {
				t.Errorf("plan %q does not read %s", p, tt.index)
			}
			if got := strings.Contains(p, "TEMP B-TREE"); got != tt.sorts {
				t.Errorf("plan %q: sorts %v, want %v", p, got, tt.sorts)
			}
			docs := 0
			var first string
			err = l.FindDocs(ctx, q, func(_ any, raw bson.Raw) error {
				if docs == 0 {
					first = raw.Lookup("uci").StringValue()
				}
				docs++
				return nil
			})
			if err != nil || first != tt.wantFirst {
				t.Errorf("first record %q (%d, %v), want %q", first, docs, err, tt.wantFirst)
			}
		})
	}
}
