package metrics

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestListenServesOnlyMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "served_total", Help: "h"})
	reg.MustRegister(c)
	c.Inc()
	url, shutdown, err := Listen("127.0.0.1:0", reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(url); code != 200 || !strings.Contains(body, "served_total 1") {
		t.Fatalf("%d %s", code, body)
	}
	if code, _ := get(strings.TrimSuffix(url, "/metrics") + "/api/health"); code != 404 {
		t.Fatalf("another path: %d", code)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("still serving after shutdown")
	}
}
