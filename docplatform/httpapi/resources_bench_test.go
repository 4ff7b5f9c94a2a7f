package httpapi_test

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/testsvc"
)

// BenchmarkListDocumentsPostgres lists documents over real HTTP on
// loopback, through the whole check chain (cookie token verified, identity
// loaded, rate limit counted), as a member of 1 of 100 groups, with 100,000
// documents on PostgreSQL (1,000 in the member's group): the first page of
// 50, newest first; then the same member in 10 of the groups. Clients run in parallel (RunParallel: 1 and 8 per GOMAXPROCS, the
// second putting more requests in flight than cores); it reports
// req/s and the p50/p99 latency of the requests.
//
//	GOVKIT_TEST_POSTGRES_URL=… go test -run '^$' -bench ListDocumentsPostgres -benchtime 5s ./docplatform/httpapi/
func BenchmarkListDocumentsPostgres(b *testing.B) {
	url := testsvc.RequirePostgres(b)
	rw := newRWorldSetup(b, func(t testing.TB) testStore { return openStore(t, url) },
		[]func(*setup){func(s *setup) { s.global = 1 << 30 }})
	groups := []string{rw.alpha, rw.beta}
	for len(groups) < 100 {
		groups = append(groups, rw.store.createGroup(uniqName("bench")))
	}
	db, err := sql.Open("pgx", url)
	must(b, err)
	defer db.Close()
	_, err = db.Exec(`
		INSERT INTO documents (id, group_id, file_name, content_type, size, sha256, storage_key, uploaded_by, created_at)
		SELECT 'seed-' || i, ($1::text[])[(i % 100) + 1], 'file-' || i || '.pdf', 'application/pdf', 1000, '', 'seed-' || i, 'seed',
		       now() - make_interval(secs => i)
		FROM generate_series(1, 100000) AS i`, groups)
	must(b, err)
	_, err = db.Exec(`ANALYZE documents`)
	must(b, err)

	client := rw.member
	path := rw.url("/api/documents?limit=50")
	var page struct{ Documents []docJSON }
	readJSON(b, rw.call(member, request{method: "GET", path: "/api/documents?limit=50"}), &page)
	for _, d := range page.Documents {
		if d.GroupID != rw.alpha {
			b.Fatalf("member sees a document of %s", d.GroupID)
		}
	}
	if len(page.Documents) != 50 {
		b.Fatalf("page of %d", len(page.Documents))
	}
	for _, perProc := range []int{1, 8} {
		b.Run(fmt.Sprintf("member-of-1-of-100-groups/clients=%d", perProc*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			benchList(b, client, path, perProc)
		})
	}
	// A member of 10 groups: one index scan per group, each stopping at
	// the page, merged (10,000 documents in the member's groups).
	for _, g := range groups[2:11] {
		rw.store.setMember(bob.Subject, g, docplatform.RoleMember)
	}
	for _, perProc := range []int{1, 8} {
		b.Run(fmt.Sprintf("member-of-10-of-100-groups/clients=%d", perProc*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			benchList(b, client, path, perProc)
		})
	}
}

func benchList(b *testing.B, client *http.Client, path string, perProc int) {
	{
		var mu sync.Mutex
		var all []time.Duration
		b.SetParallelism(perProc)
		b.ResetTimer()
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			var lat []time.Duration
			for pb.Next() {
				t0 := time.Now()
				resp, err := client.Get(path)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("%s", resp.Status)
					return
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
		elapsed := time.Since(start)
		b.StopTimer()
		if len(all) == 0 {
			return
		}
		slices.Sort(all)
		pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)].Microseconds()) / 1000 }
		b.ReportMetric(pct(0.50), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
		b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	}
}
