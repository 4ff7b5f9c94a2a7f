package platform

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/govkit/govkit/docplatform/httpapi"
)

// newMetrics makes the API's metrics and adds the pools the platform
// owns: the database's connections (go_sql_* with db_name "docplatform",
// or "docplatform_write" and "docplatform_read" on SQLite, whose writer
// is a pool of one) and Redis's.
func newMetrics(pools map[string]*sql.DB, rc *redis.Client) *httpapi.Metrics {
	m := httpapi.NewMetrics()
	for name, db := range pools {
		m.Registry.MustRegister(collectors.NewDBStatsCollector(db, name))
	}
	if rc != nil {
		stat := func(f func(*redis.PoolStats) uint32) func() float64 {
			return func() float64 { return float64(f(rc.PoolStats())) }
		}
		m.Registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "docplatform_redis_pool_connections", Help: "Redis connections open (idle and in use).", ConstLabels: prometheus.Labels{"state": "total"}},
				stat(func(s *redis.PoolStats) uint32 { return s.TotalConns })),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "docplatform_redis_pool_connections", Help: "Redis connections open (idle and in use).", ConstLabels: prometheus.Labels{"state": "idle"}},
				stat(func(s *redis.PoolStats) uint32 { return s.IdleConns })),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "docplatform_redis_pool_timeouts_total", Help: "Waits for a free Redis connection that timed out."},
				stat(func(s *redis.PoolStats) uint32 { return s.Timeouts })),
		)
	}
	return m
}

// serveMetrics serves the metrics at /metrics on a listener of their own
// (METRICS_LISTEN), apart from the API: a proxy or ingress in front of
// the platform never exposes them, and a scraper needs no credential.
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, log *slog.Logger) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	srv := &http.Server{
		Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout,
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener failed", slog.String("error", err.Error()))
		}
	}()
	return srv, "http://" + ln.Addr().String() + "/metrics", nil
}
