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
// limit, count, the stats' groups), and a where that no index answers is
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
