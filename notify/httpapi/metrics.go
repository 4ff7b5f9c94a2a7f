package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the Prometheus metrics at /metrics (ours; the original has
// none): requests by route pattern and status, their duration, and the Go
// runtime's own. Routes are the table's patterns, never raw paths, so ids
// do not blow up the label space. OpenApp adds the work's (workmetrics.go):
// sends by channel and outcome, inbound mail, the broadcast queue and the
// broadcasts in state sending.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	sends    *prometheus.CounterVec
	inbound  *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "notify_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "notify_http_request_duration_seconds", Help: "HTTP request duration by route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route"}),
	}
	m.sends = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "notify_sends_total", Help: "Messages handed to the SMTP server or the SMS provider, by channel and outcome (sent, refused: permanent, failed: temporary or unreachable).",
	}, []string{"channel", "outcome"})
	m.inbound = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "notify_inbound_mails_total", Help: "Mail taken by the inbound SMTP server and applied: bounce (hard or soft) or unsubscribe.",
	}, []string{"kind"})
	m.reg.MustRegister(m.requests, m.duration, m.sends, m.inbound, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Series that alert rules divide by exist from the start, at zero.
	for _, ch := range []string{"email", "sms"} {
		for _, o := range []string{"sent", "refused", "failed"} {
			m.sends.WithLabelValues(ch, o)
		}
	}
	for _, k := range []string{"hard_bounce", "soft_bounce", "unsubscribe"} {
		m.inbound.WithLabelValues(k)
	}
	return m
}

// reqInfo is filled in while a request is served, for the log line and
// the metrics.
type reqInfo struct{ route string }

type reqInfoKey struct{}

func withReqInfo(ctx context.Context) (context.Context, *reqInfo) {
	ri := &reqInfo{route: "unmatched"}
	return context.WithValue(ctx, reqInfoKey{}, ri), ri
}

func setRoute(r *http.Request, route string) {
	if ri, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
		ri.route = route
	}
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}

// registerMetrics serves /metrics to super admins: scrapers call from an
// admin address or with a client certificate.
func (s *Server) registerMetrics() {
	h := promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
	s.mux.Handle("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setRoute(r, "GET /metrics")
		if !slices.Contains(superAdminOnly, caller(r).Role) {
			writeError(w, r, errForbiddenResource)
			return
		}
		h.ServeHTTP(w, r)
	}))
}
