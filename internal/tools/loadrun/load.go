package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A scenario is one request sent over and over.
type scenario struct {
	id, name string
	method   string
	url      string
	header   http.Header
	body     []byte
}

func scenarioIDs() []string {
	return []string{"bare", "cookie-me", "bearer-me", "apikey-workflows", "list-documents", "upload"}
}

func bareScenario(url string) scenario {
	return scenario{id: "bare", name: "bare net/http handler, 200 + small JSON", method: "GET", url: url}
}

// platformScenarios are the platform's requests, in the order they run:
// the listing before the uploads, which grow the group.
func platformScenarios(s session, o options) []scenario {
	h := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	body, ctype := multipartFile("load.bin", bytes.Repeat([]byte("govkit load harness\n"), o.uploadBytes/20+1)[:o.uploadBytes])
	return []scenario{
		{id: "cookie-me", name: "cookie GET /api/auth/me", method: "GET", url: s.base + "/api/auth/me", header: h("Cookie", s.cookies)},
		{id: "bearer-me", name: "Bearer GET /api/auth/me", method: "GET", url: s.base + "/api/auth/me", header: h("Authorization", "Bearer "+s.bearer)},
		{id: "apikey-workflows", name: "API key GET /api/workflows", method: "GET", url: s.base + "/api/workflows", header: h("X-API-Key", s.apiKey)},
		{id: "list-documents", name: fmt.Sprintf("cookie GET /api/documents?groupId= (%d docs, 50 a page)", o.docs), method: "GET",
			url: s.base + "/api/documents?groupId=" + s.groupID, header: h("Cookie", s.cookies)},
		{id: "upload", name: fmt.Sprintf("API key POST /api/documents, %s multipart", size(o.uploadBytes)), method: "POST",
			url: s.base + "/api/documents?groupId=" + s.groupID, header: h("X-API-Key", s.apiKey, "Content-Type", ctype), body: body},
	}
}

// result is one scenario's figures.
type result struct {
	ID         string  `json:"id"`
	Scenario   string  `json:"scenario"`
	Store      string  `json:"store"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"firstError,omitempty"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"requestsPerSecond"`
	P50        float64 `json:"p50Ms"`
	P99        float64 `json:"p99Ms"`
	// CPUPerRequest is the server process's user+system CPU over the
	// measured window divided by the requests completed in it, in µs.
	CPUPerRequest float64 `json:"cpuMicrosPerRequest"`
	// DBCPUPerRequest is the same for the PostgreSQL backends serving the
	// platform's database (0: SQLite, in the platform's process).
	DBCPUPerRequest float64 `json:"dbCpuMicrosPerRequest,omitempty"`
	RatioToBare     float64 `json:"ratioToBare,omitempty"`
	RSSKiB          int64   `json:"serverRssKiB"`
}

// measure runs a scenario closed-loop on o.conns connections: o.warmup of
// load, then the measured window (o.duration, or o.maxRequests requests),
// with the server's CPU read from /proc at both ends of the window.
func measure(ctx context.Context, sc scenario, o options, server *child, db *pgDatabase) (result, error) {
	r := result{ID: sc.id, Scenario: sc.name}
	tr := &http.Transport{MaxIdleConnsPerHost: o.conns, MaxConnsPerHost: o.conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	var measuring, stop atomic.Bool
	var counted atomic.Int64
	full := make(chan struct{})
	var fullOnce sync.Once
	lat := make([][]time.Duration, o.conns)
	errs := make([]int, o.conns)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range o.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && ctx.Err() == nil {
				t0 := time.Now()
				err := send(ctx, client, sc)
				d := time.Since(t0)
				if !measuring.Load() {
					continue
				}
				lat[i] = append(lat[i], d)
				if err != nil {
					errs[i]++
					firstErr.CompareAndSwap(nil, err.Error())
				}
				if n := counted.Add(1); o.maxRequests > 0 && n >= int64(o.maxRequests) {
					fullOnce.Do(func() { close(full) })
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	select {
	case <-time.After(o.warmup):
	case <-ctx.Done():
		return r, ctx.Err()
	}
	var db0 map[int]time.Duration
	if db != nil {
		db0 = db.backendCPU(ctx)
	}
	cpu0, err := processCPU(server.pid())
	if err != nil {
		return r, fmt.Errorf("server CPU: %w", err)
	}
	t0 := time.Now()
	measuring.Store(true)
	select {
	case <-time.After(o.duration):
	case <-full:
	case <-ctx.Done():
		return r, ctx.Err()
	}
	measuring.Store(false)
	elapsed := time.Since(t0)
	cpu1, err := processCPU(server.pid())
	if err != nil {
		return r, fmt.Errorf("server CPU: %w", err)
	}
	var db1 map[int]time.Duration
	if db != nil {
		db1 = db.backendCPU(ctx)
	}
	r.RSSKiB = processRSS(server.pid())
	stop.Store(true)
	wg.Wait()

	var all []time.Duration
	for i := range lat {
		all = append(all, lat[i]...)
		r.Errors += errs[i]
	}
	if v := firstErr.Load(); v != nil {
		r.FirstError = v.(string)
	}
	r.Requests = len(all)
	r.Seconds = elapsed.Seconds()
	if r.Requests == 0 {
		return r, fmt.Errorf("no request completed in %v", elapsed.Round(time.Millisecond))
	}
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(float64(len(all)-1)*p)]) / float64(time.Millisecond) }
	r.PerSecond = float64(r.Requests) / r.Seconds
	r.P50, r.P99 = pct(0.50), pct(0.99)
	r.CPUPerRequest = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(r.Requests)
	if db0 != nil && db1 != nil {
		// A backend that appeared in the window counts from zero; one
		// that ended in it is lost (the pool keeps them open).
		var d time.Duration
		for pid, t := range db1 {
			d += t - db0[pid]
		}
		r.DBCPUPerRequest = float64(d) / float64(time.Microsecond) / float64(r.Requests)
	}
	return r, nil
}

// send makes one request and reads the answer to its end; anything but a
// 2xx is an error.
func send(ctx context.Context, c *http.Client, sc scenario) error {
	var body io.Reader
	if sc.body != nil {
		body = bytes.NewReader(sc.body)
	}
	req, err := http.NewRequestWithContext(ctx, sc.method, sc.url, body)
	if err != nil {
		return err
	}
	for k, v := range sc.header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s", resp.Status)
	}
	return err
}

func size(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
