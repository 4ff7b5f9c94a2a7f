package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/bson"

	gkmetrics "github.com/govkit/govkit/internal/metrics"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/sms"
)

// countSend is channel.Sender.Observe's callback: one send's outcome.
func (m *metrics) countSend(channel string, err error) {
	outcome := "sent"
	switch {
	case err == nil:
	case email.IsPermanent(err), sms.IsPermanent(err):
		outcome = "refused"
	default:
		outcome = "failed"
	}
	m.sends.WithLabelValues(channel, outcome).Inc()
}

// countInbound counts one inbound mail applied: hard_bounce, soft_bounce
// or unsubscribe.
func (m *metrics) countInbound(kind string) { m.inbound.WithLabelValues(kind).Inc() }

// workCollector reads, when scraped, what only the store and the queue
// know:
//
//	notify_broadcast_queue_jobs               broadcast jobs the queue holds (all nodes)
//	notify_broadcasts_sending                 broadcasts in state sending
//	notify_broadcast_stalled_seconds          since the least recently progressed of them
//	                                          last progressed (0 when none): a broadcast
//	                                          at work refreshes its updated date every minute
//
// A scrape reads at most once per workCacheFor, so a scraper polling
// often costs the store one query per period; a part that does not answer
// within workScrapeTimeout leaves its series out of that scrape.
type workCollector struct {
	store   *mongostore.Store
	pending func(context.Context) (int64, error)

	mu     sync.Mutex
	at     time.Time
	cached []prometheus.Metric
}

const (
	workCacheFor      = 10 * time.Second
	workScrapeTimeout = 5 * time.Second
)

var (
	descQueueJobs = prometheus.NewDesc("notify_broadcast_queue_jobs", "Broadcast jobs the queue holds across the cluster: waiting, running or waiting for a retry.", nil, nil)
	descSending   = prometheus.NewDesc("notify_broadcasts_sending", "Broadcast notifications in state sending.", nil, nil)
	descStalled   = prometheus.NewDesc("notify_broadcast_stalled_seconds", "Seconds since the least recently progressed broadcast in state sending last progressed; 0 when none is sending.", nil, nil)
)

func (c *workCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descQueueJobs
	ch <- descSending
	ch <- descStalled
}

func (c *workCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached == nil || time.Since(c.at) >= workCacheFor {
		c.cached, c.at = c.read(), time.Now()
	}
	for _, m := range c.cached {
		ch <- m
	}
}

func (c *workCollector) read() []prometheus.Metric {
	ctx, cancel := context.WithTimeout(context.Background(), workScrapeTimeout)
	defer cancel()
	out := []prometheus.Metric{}
	if n, err := c.pending(ctx); err == nil {
		out = append(out, prometheus.MustNewConstMetric(descQueueJobs, prometheus.GaugeValue, float64(n)))
	}
	sending, err := c.store.Notifications().Find(ctx, mongostore.Query{
		Filter:     bson.D{{Key: "state", Value: notify.StateSending}, {Key: "isBroadcast", Value: true}},
		Projection: bson.D{{Key: "_id", Value: 1}, {Key: "updated", Value: 1}},
	})
	if err == nil {
		stalled := 0.0
		now := time.Now()
		for _, n := range sending {
			if !n.Updated.IsZero() {
				stalled = max(stalled, now.Sub(n.Updated).Seconds())
			}
		}
		out = append(out,
			prometheus.MustNewConstMetric(descSending, prometheus.GaugeValue, float64(len(sending))),
			prometheus.MustNewConstMetric(descStalled, prometheus.GaugeValue, stalled))
	}
	return out
}

// MetricNames lists every metric /metrics serves, series or not yet (the
// alert rules' test checks the names the rules use against it).
func MetricNames() []string {
	m := newMetrics()
	m.reg.MustRegister(&workCollector{})
	return gkmetrics.Names(m.reg)
}
