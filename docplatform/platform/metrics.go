package platform

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
