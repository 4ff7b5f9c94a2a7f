package httpapi

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/filestore"
)

// Metrics are the platform's Prometheus metrics (the original has none):
//
//	docplatform_http_requests_total{route,status}         requests answered
//	docplatform_http_request_duration_seconds{route}      their latency
//	docplatform_audit_events_total{action,outcome}        sign-ins (auth.login, auth.login_failed),
//	                                                      refresh failures, API-key failures,
//	                                                      denials, and every other audited event
//	docplatform_ratelimit_refusals_total{limit}           429s of check 1 (global, auth, refresh)
//	                                                      and of the API-key lockout (api_key)
//	docplatform_uploads_total{outcome}                    uploads: stored, refused (too large,
//	                                                      empty, malformed), failed (storage)
//	docplatform_upload_bytes_total                        bytes of stored uploads
//	docplatform_internal_errors_total{part}               500s by what failed: database or
//	                                                      object_store
//
// plus the Go runtime's and the process's, and what the caller registers
// on Registry (platform adds the database and Redis pools). Labels hold
// route patterns, status codes and fixed names only: never a path, an
// id, an address or a user, so a scrape tells nothing about who did what.
//
// Counting is cheap enough for the request chain: every series a request
// touches is made once (per route when the server is built, per status
// the first time a route answers it) and after that a request costs a
// few atomic additions and no allocation (TestChainAllocations).
type Metrics struct {
	// Registry holds every metric; serve it with promhttp.
	Registry *prometheus.Registry

	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	audit      *prometheus.CounterVec
	refusals   *prometheus.CounterVec
	uploads    *prometheus.CounterVec
	bytes      prometheus.Counter
	errorsByIn *prometheus.CounterVec

	// unrouted counts requests refused before routing (431).
	unrouted *routeMetrics
}

// NewMetrics makes the platform's metrics in a registry of their own.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docplatform_http_requests_total", Help: "HTTP requests answered, by route pattern and status.",
		}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "docplatform_http_request_duration_seconds", Help: "HTTP request duration by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route"}),
		audit: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docplatform_audit_events_total", Help: "Audited events (sign-ins, refresh and API-key failures, denials, changes) by action and outcome.",
		}, []string{"action", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docplatform_ratelimit_refusals_total", Help: "Requests refused with 429 by a per-client budget.",
		}, []string{"limit"}),
		uploads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docplatform_uploads_total", Help: "Document uploads by outcome.",
		}, []string{"outcome"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "docplatform_upload_bytes_total", Help: "Bytes of documents stored.",
		}),
		errorsByIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "docplatform_internal_errors_total", Help: "Requests that failed with 500, by the part that failed.",
		}, []string{"part"}),
	}
	m.Registry.MustRegister(m.requests, m.duration, m.audit, m.refusals, m.uploads, m.bytes, m.errorsByIn,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Series that alert rules divide by exist from the start, at zero.
	for _, l := range []string{"global", "auth", "refresh", "api_key"} {
		m.refusals.WithLabelValues(l)
	}
	for _, o := range []string{"stored", "refused", "failed"} {
		m.uploads.WithLabelValues(o)
	}
	for _, p := range []string{"database", "object_store"} {
		m.errorsByIn.WithLabelValues(p)
	}
	for _, a := range []struct {
		action  docplatform.AuditAction
		outcome docplatform.AuditOutcome
	}{
		{docplatform.AuditLogin, docplatform.OutcomeSuccess},
		{docplatform.AuditLoginFailed, docplatform.OutcomeFailure},
		{docplatform.AuditRefreshFailed, docplatform.OutcomeFailure},
		{docplatform.AuditAPIKeyFailed, docplatform.OutcomeFailure},
	} {
		m.audit.WithLabelValues(string(a.action), string(a.outcome))
	}
	m.unrouted = m.route("none")
	return m
}

// routeMetrics are one route's series: its latency histogram, made with
// the route, and a counter per status it has answered, looked up without
// a lock or an allocation once made.
type routeMetrics struct {
	m        *Metrics
	route    string
	duration prometheus.Observer
	mu       sync.Mutex // serialises adding a status
	statuses atomic.Pointer[[]statusCounter]
}

type statusCounter struct {
	code int
	c    prometheus.Counter
}

func (m *Metrics) route(pattern string) *routeMetrics {
	return &routeMetrics{m: m, route: pattern, duration: m.duration.WithLabelValues(pattern)}
}

// observe counts one answer of the route.
func (rm *routeMetrics) observe(status int, d time.Duration) {
	rm.duration.Observe(d.Seconds())
	if l := rm.statuses.Load(); l != nil {
		for i := range *l {
			if (*l)[i].code == status {
				(*l)[i].c.Inc()
				return
			}
		}
	}
	rm.addStatus(status).Inc()
}

// addStatus makes the counter of a status the route has not answered yet
// (copy on write: readers never wait).
func (rm *routeMetrics) addStatus(status int) prometheus.Counter {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	var cur []statusCounter
	if l := rm.statuses.Load(); l != nil {
		cur = *l
	}
	for _, s := range cur {
		if s.code == status {
			return s.c
		}
	}
	c := rm.m.requests.WithLabelValues(rm.route, strconv.Itoa(status))
	next := append(append(make([]statusCounter, 0, len(cur)+1), cur...), statusCounter{status, c})
	rm.statuses.Store(&next)
	return c
}

// refusal is the counter of one budget's 429s.
func (m *Metrics) refusal(limit string) prometheus.Counter { return m.refusals.WithLabelValues(limit) }

func (m *Metrics) audited(action docplatform.AuditAction, outcome docplatform.AuditOutcome) {
	m.audit.WithLabelValues(string(action), string(outcome)).Inc()
}

// upload counts one upload: outcome stored (with its bytes), refused or
// failed.
func (m *Metrics) upload(outcome string, bytes int64) {
	m.uploads.WithLabelValues(outcome).Inc()
	if bytes > 0 {
		m.bytes.Add(float64(bytes))
	}
}

// internalError counts an unexpected error (a 500, or a part's outage
// answered 503) by the part that failed: the object store (or document
// directory) when the error says so, else the database, which is behind
// every other such error of a handler.
func (m *Metrics) internalError(err error) {
	part := "database"
	if errors.Is(err, filestore.ErrStorage) {
		part = "object_store"
	}
	m.errorsByIn.WithLabelValues(part).Inc()
}
