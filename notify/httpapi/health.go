package httpapi

import (
	"context"
	"net/http"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func init() { routeGroups = append(routeGroups, (*Server).healthRoutes) }

func (s *Server) healthRoutes() {
	s.handle(route{method: "GET", path: "/health", tag: "health", summary: "get health status", response: "health", h: s.health})
}

type healthItem struct {
	Status string `json:"status"`
	Count  *int64 `json:"count,omitempty"`
	Error  string `json:"message,omitempty"`
}

// health answers as the original's terminus check: {status, info, error,
// details}, 200 when every check is up and 503 otherwise. The checks are
// MongoDB (a ping), config and redis (the queue backend; the in-process queue
// is always up). The original's config check wants at least two documents in
// the configuration collection (its RSA key pair and dbSchemaVersion, which
// every started primary writes, or a test-mail account); ours wants the RSA
// key pair, without which no confirmation can be decrypted, and reports the
// count of every record as the original does.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	results := map[string]healthItem{}
	if err := s.store.Ping(ctx); err != nil {
		results["MongoDB"] = healthItem{Status: "down", Error: "database does not answer"}
		results["config"] = healthItem{Status: "down", Error: "database does not answer"}
	} else {
		results["MongoDB"] = healthItem{Status: "up"}
		// count is every configuration record, as the original reports
		// it (the key pair and dbSchemaVersion on a fresh start).
		n, err := s.store.Configurations().Count(ctx, bson.D{})
		var keys int64
		if err == nil {
			keys, err = s.store.Configurations().Count(ctx, bson.D{{Key: "name", Value: "rsa"}})
		}
		switch {
		case err != nil:
			results["config"] = healthItem{Status: "down", Error: "cannot count configuration records"}
		case keys < 1:
			results["config"] = healthItem{Status: "down", Count: &n, Error: "the rsa key pair configuration is missing"}
		default:
			results["config"] = healthItem{Status: "up", Count: &n}
		}
	}
	if s.queue == nil {
		results["redis"] = healthItem{Status: "up"}
	} else if err := s.queue.Ping(ctx); err != nil {
		results["redis"] = healthItem{Status: "down", Error: "queue backend does not answer"}
	} else {
		results["redis"] = healthItem{Status: "up"}
	}
	info, failed := map[string]healthItem{}, map[string]healthItem{}
	for k, v := range results {
		if v.Status == "up" {
			info[k] = v
		} else {
			failed[k] = v
		}
	}
	body := map[string]any{"status": "ok", "info": info, "error": failed, "details": results}
	status := http.StatusOK
	if len(failed) > 0 {
		body["status"] = "error"
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, body)
}
