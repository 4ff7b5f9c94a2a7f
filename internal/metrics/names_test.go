package metrics

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestNamesIncludeVectorsWithoutSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		prometheus.NewCounterVec(prometheus.CounterOpts{Name: "a_total", Help: "a"}, []string{"x"}),
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "b", Help: "b"}),
	)
	if got := Names(reg); !slices.Equal(got, []string{"a_total", "b"}) {
		t.Fatalf("Names = %v", got)
	}
}
