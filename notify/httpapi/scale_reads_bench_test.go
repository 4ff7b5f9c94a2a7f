package httpapi_test

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/httpapi"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// BenchmarkScaleReads measures the reads the console and the API make all
// day — lists with each order the console offers, deep pages, the filters
// the console builds, counts with and without where, the console's stats
// and a signed-in user's own notification list and count — against an embedded (file-backed) store seeded straight into
// the store with 100k and 1M subscriptions and what a year of daily
// broadcasts to them leaves: 365 notifications (weekly ones in-app, some
// addressed to the user) and bounce records for 2% of the addresses
// (issue P17). Each read reports its time and
// MB-peak-rss, how far the process's peak resident memory rose above its
// resident memory before the read (the peak is reset before each; Linux
// only). GOVKIT_BENCH_SCALES chooses the sizes (default 100000,1000000).
// GOVKIT_BENCH_STORE=ferretdb runs them on FerretDB over PostgreSQL
// (GOVKIT_TEST_POSTGRES_URL) with datasource ferretdbPostgresUri, after a
// VACUUM ANALYZE (what autovacuum does after the bulk insert). FerretDB
// alone takes longer than an API call may (5 s) for these at 100k; its
// figures are notify/ferretpg's BenchmarkReads'.
//
//	go test ./notify/httpapi -run '^$' -bench BenchmarkScaleReads -benchtime 20x -timeout 2h
func BenchmarkScaleReads(b *testing.B) {
	scales := []int{100000, 1000000}
	if v := os.Getenv("GOVKIT_BENCH_SCALES"); v != "" {
		scales = nil
		for _, f := range strings.Split(v, ",") {
			var n int
			if _, err := fmt.Sscan(f, &n); err != nil || n < 100 {
				b.Fatalf("GOVKIT_BENCH_SCALES: %q is not a size of at least 100", f)
			}
			scales = append(scales, n)
		}
	}
	for _, n := range scales {
		b.Run(scaleName(n), func(b *testing.B) { benchScaleReads(b, n) })
	}
}

// readsUser is the signed-in user whose own notification list is read.
const readsUser = "bob"

// readsEpoch is when the seeded year starts.
var readsEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// readsSub is subscription i of n: ten services, four in five by email,
// nine in ten confirmed, created over a year.
func readsSub(i, n int) *notify.Subscription {
	s := scaleSub(i)
	if i%5 == 4 {
		s.Channel = notify.ChannelSMS
		s.UserChannelID = fmt.Sprintf("250%07d", i)
	}
	switch i % 20 {
	case 7:
		s.State = notify.StateUnconfirmed
	case 13:
		s.State = notify.StateDeleted
	}
	// (i times the year overflows int64 nanoseconds past i = 292)
	s.Created = readsEpoch.Add(time.Duration(i) * (365 * 24 * time.Hour / time.Duration(n)))
	s.Updated = s.Created.Add(time.Duration(i%1000) * time.Minute)
	return s
}

// seedReads fills the store and returns an address that has a bounce
// record.
func seedReads(b *testing.B, e *apitest.Env, n int) {
	ctx := context.Background()
	start := time.Now()
	subs := e.Store.Subscriptions()
	batch := make([]*notify.Subscription, 0, 1000)
	for i := range n {
		batch = append(batch, readsSub(i, n))
		if len(batch) == cap(batch) || i == n-1 {
			if err := subs.InsertMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var notes []*notify.Notification
	for d := range 365 {
		at := readsEpoch.Add(time.Duration(d) * 24 * time.Hour)
		nt := &notify.Notification{
			Meta:        notify.Meta{Created: at, Updated: at.Add(time.Hour)},
			ServiceName: fmt.Sprintf("svc%d", d%10), Channel: notify.ChannelEmail, IsBroadcast: true, State: notify.StateSent,
			Message: notify.Fields{{Key: "subject", Value: fmt.Sprint("news of day ", d)}, {Key: "textBody", Value: "hello {subscription_id}"}},
		}
		// What readsUser's list shows: a weekly in-app broadcast (some
		// deleted by them) and, every fifth day, one addressed to them.
		switch {
		case d%7 == 3:
			nt.Channel, nt.State = notify.ChannelInApp, notify.StateNew
			if d%3 == 0 {
				nt.DeletedBy = []string{readsUser}
			}
		case d%5 == 1:
			nt.Channel, nt.State, nt.IsBroadcast, nt.UserID = notify.ChannelInApp, notify.StateNew, false, readsUser
		}
		notes = append(notes, nt)
	}
	if err := e.Store.Notifications().InsertMany(ctx, notes); err != nil {
		b.Fatal(err)
	}
	var bounces []*notify.Bounce
	for i := 0; i < n; i += 50 {
		at := readsEpoch.Add(time.Duration(i%365) * 24 * time.Hour)
		st := notify.BounceActive
		if i%200 == 0 {
			st = notify.BounceDeleted
		}
		bounces = append(bounces, &notify.Bounce{
			Meta: notify.Meta{Created: at, Updated: at.Add(time.Duration(i%1000) * time.Minute)}, Channel: notify.ChannelEmail,
			UserChannelID: scaleSub(i).UserChannelID, State: st, HardBounceCount: int64(1 + i%3),
			BounceMessages: []notify.BounceMessage{{Date: at, Message: "550 5.1.1 mailbox unavailable"}},
		})
		if len(bounces) == 1000 {
			if err := e.Store.Bounces().InsertMany(ctx, bounces); err != nil {
				b.Fatal(err)
			}
			bounces = bounces[:0]
		}
	}
	if len(bounces) > 0 {
		if err := e.Store.Bounces().InsertMany(ctx, bounces); err != nil {
			b.Fatal(err)
		}
	}
	// What a restart does: the indexes exist already; the planner's
	// statistics are refreshed for the new size.
	if err := e.Store.EnsureFieldIndexes(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d subscriptions, 365 notifications, %d bounces in %s", n, n/50, time.Since(start).Round(time.Second))
}

func benchScaleReads(b *testing.B, n int) {
	var o apitest.Options
	switch v := os.Getenv("GOVKIT_BENCH_STORE"); v {
	case "":
	case "ferretdb":
		o.FerretDBOnPostgres = true
	default:
		b.Fatalf("GOVKIT_BENCH_STORE: %q is not ferretdb", v)
	}
	e := apitest.Start(b, o)
	e.Client.Timeout = 10 * time.Minute
	seedReads(b, e, n)
	if e.PostgresURL != "" {
		conn, err := pgx.Connect(context.Background(), e.PostgresURL)
		if err != nil {
			b.Fatal(err)
		}
		_, err = conn.Exec(context.Background(), "VACUUM ANALYZE")
		_ = conn.Close(context.Background())
		if err != nil {
			b.Fatal(err)
		}
	}
	filter := func(f string) string { return "?filter=" + url.QueryEscape(f) }
	where := func(w string) string { return "?where=" + url.QueryEscape(w) }
	page := func(order string, skip int) string {
		return filter(fmt.Sprintf(`{"order":[[%q,%q]],"skip":%d,"limit":25}`, strings.Fields(order)[0], strings.ToLower(strings.Fields(order)[1]), skip))
	}
	addr := scaleSub(n / 2).UserChannelID
	// A list without a limit: the k subscriptions created in a window
	// from the middle of the year, oldest first (answered whole, up to
	// mongostore.MaxIndexList records).
	window := func(k int) string {
		at := func(i int) string { return readsSub(i, n).Created.Format(time.RFC3339Nano) }
		return "/api/subscriptions" + filter(fmt.Sprintf(`{"where":{"created":{"$gte":%q,"$lt":%q}},"order":[["created","asc"]]}`, at(n/2), at(n/2+k)))
	}
	reads := []struct{ name, path string }{
		{"subs-newest", "/api/subscriptions" + page("created DESC", 0)},
		{"subs-newest-page3", "/api/subscriptions" + page("created DESC", 50)},
		{"subs-newest-middle", "/api/subscriptions" + page("created DESC", n/2)},
		{"subs-oldest", "/api/subscriptions" + page("created ASC", 0)},
		{"subs-updated", "/api/subscriptions" + page("updated DESC", 0)},
		{"subs-service-az", "/api/subscriptions" + page("serviceName ASC", 0)},
		{"subs-address-az", "/api/subscriptions" + page("userChannelId ASC", 0)},
		{"subs-state", "/api/subscriptions" + page("state ASC", 0)},
		{"subs-where-service", "/api/subscriptions" + filter(`{"where":{"serviceName":"svc3"},"order":[["created","desc"]],"skip":0,"limit":25}`)},
		{"subs-where-service-state", "/api/subscriptions" + filter(`{"where":{"serviceName":"svc3","state":"confirmed"},"order":[["created","desc"]],"skip":25,"limit":25}`)},
		{"subs-where-all-three", "/api/subscriptions" + filter(`{"where":{"serviceName":"svc3","channel":"sms","state":"unconfirmed"},"order":[["created","desc"]],"limit":25}`)},
		{"subs-where-state", "/api/subscriptions" + filter(`{"where":{"state":"deleted"},"order":[["updated","desc"]],"limit":25}`)},
		{"subs-where-address", "/api/subscriptions" + filter(fmt.Sprintf(`{"where":{"userChannelId":%q},"order":[["created","desc"]],"limit":25}`, addr))},
		{"subs-unlimited-5k", window(5000)},
		{"subs-count", "/api/subscriptions/count"},
		{"subs-count-service", "/api/subscriptions/count" + where(`{"serviceName":"svc3"}`)},
		{"subs-count-service-state", "/api/subscriptions/count" + where(`{"serviceName":"svc3","state":"confirmed"}`)},
		{"subs-count-all-three", "/api/subscriptions/count" + where(`{"serviceName":"svc3","channel":"email","state":"confirmed"}`)},
		{"subs-count-state", "/api/subscriptions/count" + where(`{"state":"unconfirmed"}`)},
		{"subs-count-channel", "/api/subscriptions/count" + where(`{"channel":"sms"}`)},
		{"notes-newest", "/api/notifications" + page("created DESC", 0)},
		{"notes-count", "/api/notifications/count"},
		{"notes-where-service", "/api/notifications" + filter(`{"where":{"serviceName":"svc3","isBroadcast":true},"order":[["created","desc"]],"limit":25}`)},
		{"notes-user", "/api/notifications" + filter(`{"order":[["created","desc"]],"limit":25}`)},
		{"notes-user-count", "/api/notifications/count"},
		{"bounces-updated", "/api/bounces" + page("updated DESC", 0)},
		{"bounces-count", "/api/bounces/count"},
		{"bounces-where-state", "/api/bounces" + filter(`{"where":{"state":"active"},"order":[["updated","desc"]],"limit":25}`)},
		{"bounces-where-address", "/api/bounces" + filter(fmt.Sprintf(`{"where":{"userChannelId":%q},"order":[["updated","desc"]],"limit":25}`, scaleSub(50).UserChannelID))},
		{"stats", "/api/console/stats"},
	}
	// The user's own list and count, as readsUser; the rest as the super
	// administrator.
	asUser := map[string][]string{"notes-user": apitest.SMUser(readsUser), "notes-user-count": apitest.SMUser(readsUser)}
	for _, rd := range reads {
		b.Run(rd.name, func(b *testing.B) {
			if strings.HasPrefix(rd.name, "subs-unlimited") && e.PostgresURL != "" {
				b.Skip("FerretDB over PostgreSQL's field index reads each record through FerretDB: its lists stop at 1,000")
			}
			runtime.GC()
			base := rssKB("VmRSS")
			resetPeakRSS()
			for b.Loop() {
				e.Do(b, "GET", rd.path, nil, asUser[rd.name]...).Expect(b, http.StatusOK)
			}
			b.ReportMetric(float64(rssKB("VmHWM")-base)/1024, "MB-peak-rss")
			// (checked after the measure: the check's own decoding would
			// grow the heap the measure starts from)
			if k, ok := map[string]int{"subs-unlimited-5k": 5000, "subs-unlimited-10k": 9990}[rd.name]; ok {
				var got []struct{ ID string }
				e.Do(b, "GET", rd.path, nil).Expect(b, http.StatusOK).JSON(b, &got)
				if len(got) < k-2 || len(got) > k+2 {
					b.Fatalf("%d subscriptions in the window, want about %d", len(got), k)
				}
			}
		})
	}
	// The dashboard's first call on a node: it waits for the counts.
	b.Run("stats-first", func(b *testing.B) {
		runtime.GC()
		base := rssKB("VmRSS")
		resetPeakRSS()
		for b.Loop() {
			b.StopTimer()
			httpapi.ForgetConsoleCounts(e.App.Server)
			b.StartTimer()
			var st struct{ CountsPending bool }
			e.Do(b, "GET", "/api/console/stats", nil).Expect(b, http.StatusOK).JSON(b, &st)
			if st.CountsPending {
				b.Fatal("the first call came without its counts")
			}
		}
		b.ReportMetric(float64(rssKB("VmHWM")-base)/1024, "MB-peak-rss")
	})
	// Every combination the console's list pages offer.
	b.Run("console-matrix", func(b *testing.B) { benchConsoleMatrix(b, e, addr) })
	// A where no index answers is refused, not read.
	b.Run("unindexed-where", func(b *testing.B) {
		for b.Loop() {
			e.Do(b, "GET", "/api/subscriptions/count"+where(`{"data.city":"city7"}`), nil).Expect(b, http.StatusBadRequest)
		}
	})
	b.Run("stats-recount", func(b *testing.B) {
		runtime.GC()
		base := rssKB("VmRSS")
		resetPeakRSS()
		for b.Loop() {
			if _, _, err := e.Store.SubscriptionGroups(context.Background(), 200); err != nil {
				b.Fatal(err)
			}
			if _, err := e.Store.BounceCounts(context.Background(), []string{notify.BounceActive, notify.BounceDeleted}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rssKB("VmHWM")-base)/1024, "MB-peak-rss")
	})
}

// rssKB reads a memory figure of this process from /proc/self/status
// (0 where there is none).
func rssKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb
		}
	}
	return 0
}

// resetPeakRSS makes VmHWM start again from the current resident size.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// benchConsoleMatrix runs every list the console's pages can ask for —
// each filter combination of its forms × each sort it offers × the first
// page and one in the middle of the matches — with its count, and reports
// the slowest and the mean per request (the slowest five are logged).
func benchConsoleMatrix(b *testing.B, e *apitest.Env, addr string) {
	type page struct{ path, where, order string }
	var pages []page
	add := func(path string, wheres, orders []string) {
		for _, w := range wheres {
			for _, o := range orders {
				pages = append(pages, page{path, w, o})
			}
		}
	}
	add("/api/subscriptions",
		[]string{`{}`, `{"serviceName":"svc3"}`, `{"state":"unconfirmed"}`, `{"channel":"sms"}`, `{"serviceName":"svc3","state":"confirmed"}`,
			`{"serviceName":"svc4","channel":"sms","state":"deleted"}`, fmt.Sprintf(`{"userChannelId":%q}`, addr)},
		[]string{`["created","desc"]`, `["created","asc"]`, `["updated","desc"]`, `["serviceName","asc"]`, `["userChannelId","asc"]`, `["state","asc"]`})
	add("/api/notifications",
		[]string{`{}`, `{"serviceName":"svc3"}`, `{"state":"sent"}`, `{"channel":"email"}`, `{"serviceName":"svc3","isBroadcast":true}`},
		[]string{`["created","desc"]`, `["created","asc"]`, `["updated","desc"]`, `["serviceName","asc"]`})
	add("/api/bounces",
		[]string{`{}`, `{"state":"active"}`, fmt.Sprintf(`{"userChannelId":%q}`, addr)},
		[]string{`["updated","desc"]`})
	type timing struct {
		what string
		d    time.Duration
	}
	var worst []timing
	var total time.Duration
	var requests int
	runtime.GC()
	base := rssKB("VmRSS")
	resetPeakRSS()
	timed := func(what, path string) *apitest.Response {
		start := time.Now()
		r := e.Do(b, "GET", path, nil).Expect(b, http.StatusOK)
		d := time.Since(start)
		total += d
		requests++
		worst = append(worst, timing{what, d})
		return r
	}
	for b.Loop() {
		for _, p := range pages {
			var c struct{ Count int }
			timed(p.path+" count "+p.where, p.path+"/count?where="+url.QueryEscape(p.where)).JSON(b, &c)
			for _, skip := range []int{0, c.Count / 2} {
				f := fmt.Sprintf(`{"where":%s,"order":[%s],"skip":%d,"limit":25}`, p.where, p.order, skip)
				timed(p.path+" "+f, p.path+"?filter="+url.QueryEscape(f))
			}
		}
	}
	slices.SortFunc(worst, func(x, y timing) int { return cmp.Compare(y.d, x.d) })
	for _, w := range worst[:min(5, len(worst))] {
		b.Logf("slowest: %s %s", w.d.Round(time.Millisecond), w.what)
	}
	b.ReportMetric(float64(worst[0].d.Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(total.Microseconds())/1000/float64(requests), "mean-ms")
	b.ReportMetric(float64(len(pages)*3), "requests/op")
	b.ReportMetric(float64(rssKB("VmHWM")-base)/1024, "MB-peak-rss")
}
