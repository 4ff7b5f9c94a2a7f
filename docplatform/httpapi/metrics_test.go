package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/govkit/govkit/docplatform"
)

// metricValue is the value of the series of family name whose labels
// include want; 0 when there is none.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue series
				}
			}
			return value(m)
		}
	}
	return 0
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

// TestMetrics drives the platform over real HTTP — sign-ins, uploads
// stored, refused and failed, wrong API keys up to the lockout — and
// reads the metrics as a scraper would: every count is there, by route
// pattern and fixed names, and nothing names a document, a group, a user
// or an address.
func TestMetrics(t *testing.T) {
	rw := newRWorldSetup(t, sqliteStore, []func(*setup){func(s *setup) { s.failures = 2 }})
	reg := rw.api.Metrics().Registry

	if n := metricValue(t, reg, "docplatform_audit_events_total", map[string]string{"action": string(docplatform.AuditLogin), "outcome": "success"}); n != 4 {
		t.Errorf("sign-ins counted %v, want the world's 4", n)
	}

	content := []byte("metrics test document")
	resp := rw.call(member, upload(rw.alpha, "a.txt", content))
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %s", resp.Status)
	}
	var d struct{ ID string }
	readJSON(t, resp, &d)
	if resp := rw.call(member, upload(rw.alpha, "big.txt", make([]byte, 65<<10))); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("too large: %s", resp.Status)
	}
	// The document directory turned into a file: the storage fails, and
	// the answer is the storage's outage.
	must(t, os.RemoveAll(rw.files.String()))
	must(t, os.WriteFile(rw.files.String(), nil, 0o600))
	if resp := rw.call(member, upload(rw.alpha, "c.txt", content)); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("upload onto a broken store: %s", resp.Status)
	}
	for outcome, want := range map[string]float64{"stored": 1, "refused": 1, "failed": 1} {
		if n := metricValue(t, reg, "docplatform_uploads_total", map[string]string{"outcome": outcome}); n != want {
			t.Errorf("uploads %s = %v, want %v", outcome, n, want)
		}
	}
	if n := metricValue(t, reg, "docplatform_upload_bytes_total", nil); n != float64(len(content)) {
		t.Errorf("upload bytes %v, want %d", n, len(content))
	}
	if n := metricValue(t, reg, "docplatform_internal_errors_total", map[string]string{"part": "object_store"}); n != 1 {
		t.Errorf("object-store errors %v, want 1", n)
	}

	if resp := rw.call(member, request{method: "GET", path: "/api/documents/" + d.ID}); resp.StatusCode != http.StatusOK {
		t.Fatalf("get document: %s", resp.Status)
	}
	for i, want := range []int{401, 401, 429} {
		resp := rw.do(nil, request{method: "GET", path: "/api/documents?groupId=" + rw.alpha, header: map[string]string{"X-API-Key": "gk_wrong"}})
		if resp.StatusCode != want {
			t.Fatalf("wrong key %d: %s, want %d", i, resp.Status, want)
		}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"docplatform_audit_events_total", map[string]string{"action": string(docplatform.AuditAPIKeyFailed), "outcome": "failure"}, 2},
		{"docplatform_ratelimit_refusals_total", map[string]string{"limit": "api_key"}, 1},
		{"docplatform_http_requests_total", map[string]string{"route": "GET /api/documents/{id}", "status": "200"}, 1},
		{"docplatform_http_requests_total", map[string]string{"route": "POST /api/documents", "status": "201"}, 1},
		{"docplatform_http_requests_total", map[string]string{"route": "POST /api/documents", "status": "413"}, 1},
		{"docplatform_http_requests_total", map[string]string{"route": "GET /api/documents", "status": "401"}, 2},
		{"docplatform_http_requests_total", map[string]string{"route": "GET /api/documents", "status": "429"}, 1},
		{"docplatform_http_request_duration_seconds", map[string]string{"route": "POST /api/documents"}, 3},
	} {
		if n := metricValue(t, reg, c.name, c.labels); n != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, n, c.want)
		}
	}

	// The text a scraper reads names no document, group, user or address.
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	r, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	for _, secret := range []string{d.ID, rw.alpha, bob.Subject, ada.Subject, "127.0.0.1", "gk_wrong", "a.txt"} {
		if bytes.Contains(body, []byte(secret)) {
			t.Errorf("the metrics name %q", secret)
		}
	}
	if !strings.Contains(string(body), "go_goroutines") || !strings.Contains(string(body), "process_resident_memory_bytes") {
		t.Error("no runtime or process metrics")
	}
}

// TestRateLimitRefusalsAreCounted: a spent per-IP budget's 429s are
// counted by budget.
func TestRateLimitRefusalsAreCounted(t *testing.T) {
	h := newHarness(t, func(s *setup) { s.global = 2 })
	for i, want := range []int{200, 200, 429, 429} {
		if resp := h.do(nil, request{method: "GET", path: "/test/public"}); resp.StatusCode != want {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
	}
	reg := h.api.Metrics().Registry
	if n := metricValue(t, reg, "docplatform_ratelimit_refusals_total", map[string]string{"limit": "global"}); n != 2 {
		t.Fatalf("global refusals %v, want 2", n)
	}
	if n := metricValue(t, reg, "docplatform_ratelimit_refusals_total", map[string]string{"limit": "auth"}); n != 0 {
		t.Fatalf("auth refusals %v, want 0", n)
	}
}
