package httpapi_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// TestRoleGuardCoversEveryRoute walks the OpenAPI document, which is built
// from the route table: every operation that documents a security
// requirement refuses an anonymous caller before doing anything, and every
// other one is reachable anonymously.
func TestRoleGuardCoversEveryRoute(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	doc := e.Do(t, "GET", "/api/explorer-json", nil).Expect(t, 200).Map(t)
	paths := doc["paths"].(map[string]any)
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	open := map[string]bool{}
	for _, p := range keys {
		for method, op := range paths[p].(map[string]any) {
			url := strings.ReplaceAll(p, "{id}", "000000000000000000000000")
			guarded := op.(map[string]any)["security"] != nil
			name := strings.ToUpper(method) + " " + p
			if p == "/api/administrators/login" {
				t.Run("login refuses a caller who is already super admin", func(t *testing.T) {
					e.Do(t, "POST", url, map[string]any{"email": "a@b.c", "password": "x"}).Expect(t, http.StatusForbidden)
				})
				continue
			}
			if !guarded {
				open[name] = true
				continue
			}
			t.Run("anonymous is refused: "+name, func(t *testing.T) {
				r := e.Do(t, strings.ToUpper(method), url, map[string]any{}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
				if r.Map(t)["message"] != "Forbidden resource" {
					t.Fatalf("body %s", r.Body)
				}
			})
		}
	}
	// The operations open to anonymous callers are exactly the original's,
	// and log-out (ours), which deletes only the token it presents.
	want := []string{
		"POST /api/administrators/logout",
		"DELETE /api/subscriptions/{id}", "GET /api/administrators/whoami", "GET /api/health",
		"GET /api/subscriptions/{id}/unsubscribe", "GET /api/subscriptions/{id}/unsubscribe/undo", "GET /api/subscriptions/{id}/verify",
		"POST /api/subscriptions", "POST /api/subscriptions/{id}/unsubscribe",
	}
	for _, w := range want {
		if !open[w] {
			t.Errorf("%s is not open to anonymous callers", w)
		}
		delete(open, w)
	}
	for extra := range open {
		if !strings.Contains(extra, "/swift") {
			t.Errorf("%s is open to anonymous callers", extra)
		}
	}
}
