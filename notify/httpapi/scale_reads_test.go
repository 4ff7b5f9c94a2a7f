package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/httpapi/apitest"
	"github.com/govkit/govkit/notify/mongostore"
)

// TestConsoleReadsOverTheScanLimit: on an embedded store holding more
// subscriptions than the API reads whole (mongostore.DefaultScanLimit),
// the lists and counts the console makes answer from indexes as a naive
// evaluation of the same query over the seeded records does (order, skip,
// limit, count, the stats' groups; a list without a limit returns all
// its 1,050 matches, the whole collection's is refused with a 400 that
// says to page), and a where that no index answers is
// refused with a 400 that says which filters are fast, unless an indexed
// condition narrows it to a few records. Speed is BenchmarkScaleReads'.
func TestConsoleReadsOverTheScanLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 10,500 subscriptions")
	}
	consoleReadsOverTheScanLimit(t, apitest.Start(t, apitest.Options{}))
}

// TestConsoleReadsOverTheScanLimitOnFerretDB is the same on FerretDB over
// PostgreSQL with datasource ferretdbPostgresUri: the reads are answered
// from PostgreSQL indexes of ours (notify/ferretpg).
func TestConsoleReadsOverTheScanLimitOnFerretDB(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 10,500 subscriptions")
	}
	consoleReadsOverTheScanLimit(t, apitest.Start(t, apitest.Options{FerretDBOnPostgres: true}))
}

func consoleReadsOverTheScanLimit(t *testing.T, e *apitest.Env) {
	n := mongostore.DefaultScanLimit + 500
	ctx := context.Background()
	all := make([]*notify.Subscription, 0, n)
	batch := make([]*notify.Subscription, 0, 1000)
	for i := range n {
		s := readsSub(i, n)
		all = append(all, s)
		batch = append(batch, s)
		if len(batch) == cap(batch) || i == n-1 {
			if err := e.Store.Subscriptions().InsertMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = make([]*notify.Subscription, 0, 1000)
		}
	}
	if err := e.Store.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	byID := make(map[any]*notify.Subscription, n)
	for _, s := range all {
		byID[s.ID.Hex()] = s
	}

	type cond = map[string]string
	matches := func(s *notify.Subscription, w cond) bool {
		for k, v := range w {
			if subField(s, k) != v {
				return false
			}
		}
		return true
	}
	naive := func(w cond) []*notify.Subscription {
		var out []*notify.Subscription
		for _, s := range all {
			if matches(s, w) {
				out = append(out, s)
			}
		}
		return out
	}
	whereJSON := func(w cond) string {
		var parts []string
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range w {
				if !yield(k) {
					return
				}
			}
		}) {
			parts = append(parts, fmt.Sprintf("%q:%q", k, w[k]))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}

	wheres := []cond{
		{},
		{"serviceName": "svc3"},
		{"state": "unconfirmed"},
		{"channel": "sms"},
		{"serviceName": "svc3", "state": "confirmed"},
		{"serviceName": "svc4", "channel": "sms", "state": "deleted"},
		{"userChannelId": readsSub(n/2, n).UserChannelID},
	}
	t.Run("counts", func(t *testing.T) {
		for _, w := range wheres {
			var got struct{ Count int }
			e.Do(t, "GET", "/api/subscriptions/count?where="+url.QueryEscape(whereJSON(w)), nil).Expect(t, http.StatusOK).JSON(t, &got)
			if want := len(naive(w)); got.Count != want {
				t.Errorf("count of %s: %d, want %d", whereJSON(w), got.Count, want)
			}
		}
	})

	orders := []struct {
		field string
		desc  bool
	}{{"created", true}, {"created", false}, {"updated", true}, {"serviceName", false}, {"userChannelId", false}, {"state", false}}
	t.Run("pages", func(t *testing.T) {
		for _, w := range wheres {
			want := naive(w)
			for _, o := range orders {
				sorted := slices.Clone(want)
				sort.SliceStable(sorted, func(i, j int) bool {
					a, b := subField(sorted[i], o.field), subField(sorted[j], o.field)
					if o.desc {
						return a > b
					}
					return a < b
				})
				dir := "asc"
				if o.desc {
					dir = "desc"
				}
				for _, skip := range []int{0, 25, len(sorted) / 2, max(0, len(sorted)-10)} {
					f := fmt.Sprintf(`{"where":%s,"order":[[%q,%q]],"skip":%d,"limit":25}`, whereJSON(w), o.field, dir, skip)
					var got []map[string]any
					e.Do(t, "GET", "/api/subscriptions?filter="+url.QueryEscape(f), nil).Expect(t, http.StatusOK).JSON(t, &got)
					exp := sorted[min(skip, len(sorted)):min(skip+25, len(sorted))]
					if len(got) != len(exp) {
						t.Errorf("%s: %d records, want %d", f, len(got), len(exp))
						continue
					}
					for i, g := range got {
						// The sort key in order; where keys tie, any record
						// of the tie may come (MongoDB defines no order among
						// ties): the record must match the where and its key
						// must be the one due at its place. A unique key
						// (created) fixes the record itself.
						s := byID[g["id"]]
						if s == nil || !matches(s, w) || subField(s, o.field) != subField(exp[i], o.field) {
							t.Errorf("%s: record %d is %v, want %s %q", f, i, g["id"], o.field, subField(exp[i], o.field))
							break
						}
						if o.field == "created" && s != exp[i] {
							t.Errorf("%s: record %d is %v, want %s", f, i, g["id"], exp[i].ID.Hex())
							break
						}
					}
				}
			}
		}
	})

	t.Run("pages do not overlap", func(t *testing.T) {
		seen := map[any]bool{}
		w := cond{"serviceName": "svc3", "channel": "email"}
		total := len(naive(w))
		for skip := 0; skip < total; skip += 100 {
			f := fmt.Sprintf(`{"where":%s,"order":[["state","asc"]],"skip":%d,"limit":100}`, whereJSON(w), skip)
			var got []map[string]any
			e.Do(t, "GET", "/api/subscriptions?filter="+url.QueryEscape(f), nil).Expect(t, http.StatusOK).JSON(t, &got)
			for _, g := range got {
				if seen[g["id"]] {
					t.Fatalf("%v is on two pages", g["id"])
				}
				seen[g["id"]] = true
			}
		}
		if len(seen) != total {
			t.Errorf("the pages hold %d records, want %d", len(seen), total)
		}
	})

	t.Run("stats", func(t *testing.T) {
		want := map[string]int64{}
		for _, s := range all {
			want[s.ServiceName+"/"+s.Channel+"/"+s.State]++
		}
		var got struct {
			Subscriptions []mongostore.SubscriptionGroup
			CountsPending bool
		}
		// the first answer may say countsPending while the first count runs
		for deadline := time.Now().Add(time.Minute); ; {
			e.Do(t, "GET", "/api/console/stats", nil).Expect(t, http.StatusOK).JSON(t, &got)
			if !got.CountsPending || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(got.Subscriptions) != len(want) {
			t.Fatalf("%d groups, want %d", len(got.Subscriptions), len(want))
		}
		for i, g := range got.Subscriptions {
			if k := g.ServiceName + "/" + g.Channel + "/" + g.State; g.Count != want[k] {
				t.Errorf("group %s: %d, want %d", k, g.Count, want[k])
			}
			if i > 0 && g.Count > got.Subscriptions[i-1].Count {
				t.Errorf("group %d is larger than the one before", i)
			}
		}
	})

	t.Run("a list without a limit", func(t *testing.T) {
		// 1,050 matches: more than a page read record by record (1,000),
		// fewer than a list read in bulk answers (mongostore.MaxIndexList),
		// which both stores do (embeddedmongo.Lookup.FindDocs,
		// ferretpg.Index.FindDocs).
		want := naive(cond{"serviceName": "svc3"})
		slices.SortFunc(want, func(a, b *notify.Subscription) int { return b.Created.Compare(a.Created) })
		path := "/api/subscriptions?filter=" + url.QueryEscape(`{"where":{"serviceName":"svc3"},"order":[["created","desc"]]}`)
		var got []map[string]any
		e.Do(t, "GET", path, nil).Expect(t, http.StatusOK).JSON(t, &got)
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		for i, g := range got {
			if g["id"] != want[i].ID.Hex() {
				t.Fatalf("record %d is %v, want %s", i, g["id"], want[i].ID.Hex())
			}
		}
		// The whole collection, more than either answers: the 400 says to page.
		var body struct{ Message string }
		e.Do(t, "GET", "/api/subscriptions?filter="+url.QueryEscape(`{"order":[["created","desc"]]}`), nil).Expect(t, http.StatusBadRequest).JSON(t, &body)
		if !strings.Contains(body.Message, "limit of at most") || !strings.Contains(body.Message, "skip") {
			t.Errorf("message %q does not say to page", body.Message)
		}
	})

	t.Run("a where no index answers is refused", func(t *testing.T) {
		for _, path := range []string{
			"/api/subscriptions/count?where=" + url.QueryEscape(`{"data.city":"city7"}`),
			"/api/subscriptions?filter=" + url.QueryEscape(`{"where":{"data.city":"city7"},"limit":10}`),
			"/api/subscriptions?filter=" + url.QueryEscape(`{"order":[["data.city","asc"]],"limit":10}`),
			"/api/subscriptions?filter=" + url.QueryEscape(`{"where":{"serviceName":{"$regex":"^svc"}},"limit":10}`),
		} {
			var body struct{ Message string }
			e.Do(t, "GET", path, nil).Expect(t, http.StatusBadRequest).JSON(t, &body)
			if !strings.Contains(body.Message, "cannot be answered from an index") || !strings.Contains(body.Message, "serviceName") {
				t.Errorf("%s: message %q does not say why and which filters are fast", path, body.Message)
			}
		}
	})

	t.Run("an unindexed condition beside a selective one is answered", func(t *testing.T) {
		s := readsSub(n/2, n)
		var got struct{ Count int }
		w := fmt.Sprintf(`{"userChannelId":%q,"data.city":%q}`, s.UserChannelID, "city"+fmt.Sprint(n/2%100))
		e.Do(t, "GET", "/api/subscriptions/count?where="+url.QueryEscape(w), nil).Expect(t, http.StatusOK).JSON(t, &got)
		if got.Count != 1 {
			t.Errorf("count of %s: %d, want 1", w, got.Count)
		}
	})
}

func subField(s *notify.Subscription, f string) string {
	switch f {
	case "serviceName":
		return s.ServiceName
	case "channel":
		return s.Channel
	case "state":
		return s.State
	case "userChannelId":
		return s.UserChannelID
	case "created":
		return s.Created.UTC().Format("2006-01-02T15:04:05.000Z")
	case "updated":
		return s.Updated.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	panic(f)
}

// TestUserNotificationsOverTheScanLimit: on an embedded store holding
// more notifications than the API reads whole, a signed-in user's own
// list and count — in-app broadcasts and notifications addressed to them,
// valid now, not deleted — answer from indexes (a scan would be refused)
// as a naive evaluation of the rule over the seeded records does, with
// the user's where, order, skip and limit.
func TestUserNotificationsOverTheScanLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 10,500 notifications")
	}
	e := apitest.Start(t, apitest.Options{})
	ctx := context.Background()
	const me = "bob"
	n := mongostore.DefaultScanLimit + 500
	now := time.Now()
	past, future := now.Add(-30*24*time.Hour), now.Add(30*24*time.Hour)
	all := make([]*notify.Notification, 0, n)
	for i := range n {
		at := readsEpoch.Add(time.Duration(i) * time.Minute)
		nt := &notify.Notification{Meta: notify.Meta{Created: at, Updated: at}, ServiceName: fmt.Sprintf("svc%d", i%4),
			Channel: notify.ChannelEmail, UserChannelID: fmt.Sprintf("p%d@example.org", i), State: notify.StateSent}
		// One in 40 is the user's, or an in-app broadcast, in every shape
		// the rule tells apart.
		if i%40 == 0 {
			k := i / 40
			nt.Channel, nt.State, nt.UserChannelID = notify.ChannelInApp, notify.StateNew, ""
			switch k % 4 {
			case 0:
				nt.IsBroadcast = true
			case 1:
				nt.UserChannelID = me
			case 2:
				nt.UserID = me
			case 3:
				nt.UserID = "alice"
			}
			switch k % 7 {
			case 1:
				nt.ValidTill = past
			case 2:
				nt.ValidTill = future
			case 3:
				nt.InvalidBefore = future
			case 4:
				nt.InvalidBefore = past
			}
			switch k % 5 {
			case 1:
				nt.DeletedBy = []string{"alice", me}
			case 2:
				nt.DeletedBy = []string{"alice"}
			case 3:
				nt.State = notify.StateDeleted
			}
			if k%11 == 0 {
				nt.Channel = notify.ChannelEmail
			}
		}
		all = append(all, nt)
	}
	for i := 0; i < n; i += 1000 {
		if err := e.Store.Notifications().InsertMany(ctx, all[i:min(i+1000, n)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Store.EnsureFieldIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	visible := func(nt *notify.Notification) bool {
		return nt.Channel == notify.ChannelInApp &&
			(nt.IsBroadcast || nt.UserChannelID == me || nt.UserID == me) &&
			(nt.ValidTill.IsZero() || !nt.ValidTill.Before(now)) &&
			(nt.InvalidBefore.IsZero() || !nt.InvalidBefore.After(now)) &&
			(!nt.IsBroadcast || !slices.Contains(nt.DeletedBy, me)) &&
			nt.State != notify.StateDeleted
	}
	for _, tc := range []struct {
		where   string
		matches func(*notify.Notification) bool
	}{
		{`{}`, func(*notify.Notification) bool { return true }},
		{`{"serviceName":"svc0"}`, func(nt *notify.Notification) bool { return nt.ServiceName == "svc0" }},
		{`{"isBroadcast":false}`, func(nt *notify.Notification) bool { return !nt.IsBroadcast }},
	} {
		var want []*notify.Notification
		for _, nt := range all {
			if visible(nt) && tc.matches(nt) {
				want = append(want, nt)
			}
		}
		if len(want) < 10 {
			t.Fatalf("where %s: only %d records to show", tc.where, len(want))
		}
		var got struct{ Count int }
		e.Do(t, "GET", "/api/notifications/count?where="+url.QueryEscape(tc.where), nil, apitest.SMUser(me)...).Expect(t, http.StatusOK).JSON(t, &got)
		if got.Count != len(want) {
			t.Errorf("count of %s: %d, want %d", tc.where, got.Count, len(want))
		}
		for _, desc := range []bool{true, false} {
			sorted := slices.Clone(want)
			dir := "asc"
			if desc {
				slices.Reverse(sorted)
				dir = "desc"
			}
			for _, skip := range []int{0, 5, len(sorted) - 3} {
				f := fmt.Sprintf(`{"where":%s,"order":[["created",%q]],"skip":%d,"limit":10}`, tc.where, dir, skip)
				var page []map[string]any
				e.Do(t, "GET", "/api/notifications?filter="+url.QueryEscape(f), nil, apitest.SMUser(me)...).Expect(t, http.StatusOK).JSON(t, &page)
				exp := sorted[min(skip, len(sorted)):min(skip+10, len(sorted))]
				var gotIDs, wantIDs []string
				for _, g := range page {
					gotIDs = append(gotIDs, fmt.Sprint(g["id"]))
				}
				for _, x := range exp {
					wantIDs = append(wantIDs, x.ID.Hex())
				}
				if !slices.Equal(gotIDs, wantIDs) {
					t.Errorf("%s:\n got %v\nwant %v", f, gotIDs, wantIDs)
				}
			}
		}
	}
	// Without order or limit: every record of the list, in natural order.
	var page []map[string]any
	e.Do(t, "GET", "/api/notifications", nil, apitest.SMUser(me)...).Expect(t, http.StatusOK).JSON(t, &page)
	var wantN int
	for _, nt := range all {
		if visible(nt) {
			wantN++
		}
	}
	if len(page) != wantN {
		t.Errorf("the whole list: %d records, want %d", len(page), wantN)
	}
	// A user's where on a field no index holds is refused like an
	// administrator's.
	var body struct{ Message string }
	e.Do(t, "GET", "/api/notifications/count?where="+url.QueryEscape(`{"message.subject":"x"}`), nil, apitest.SMUser(me)...).Expect(t, http.StatusBadRequest).JSON(t, &body)
	if !strings.Contains(body.Message, "cannot be answered from an index") {
		t.Errorf("message %q does not say why", body.Message)
	}
}
