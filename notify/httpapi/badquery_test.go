package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// TestQueriesTheDatabaseRefuses: a where the database cannot run is the
// caller's mistake — 400 with the database's reason, as the original
// answers — never a 500.
func TestQueriesTheDatabaseRefuses(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "bq", "channel": "email", "userChannelId": "q@example.org", "confirmationRequest": map[string]any{"sendRequest": false}})
	seed(t, e, "/api/configurations", map[string]any{"name": "bq", "value": 1})
	badRegex := `{"serviceName":{"$regex":"("}}`
	for _, c := range []struct {
		name, method, path, want string
	}{
		{"an invalid $regex in a list filter", "GET", "/api/subscriptions?filter=" + url.QueryEscape(`{"where":`+badRegex+`}`), "Regular expression"},
		{"an invalid $regex in a count", "GET", "/api/subscriptions/count?where=" + url.QueryEscape(badRegex), "Regular expression"},
		{"a $mod by zero", "GET", "/api/subscriptions?filter=" + url.QueryEscape(`{"where":{"serviceName":{"$mod":[0,1]}}}`), "divisor"},
		{"an invalid $regex in a bulk update", "PATCH", "/api/configurations?where=" + url.QueryEscape(`{"name":{"$regex":"("}}`), "Regular expression"},
	} {
		t.Run(c.name+" is 400 with the reason", func(t *testing.T) {
			var body any
			if c.method == "PATCH" {
				body = map[string]any{"value": 2}
			}
			r := e.Do(t, c.method, c.path, body).Expect(t, http.StatusBadRequest)
			if msg, _ := r.Map(t)["message"].(string); !strings.Contains(msg, c.want) {
				t.Fatalf("message %q", msg)
			}
		})
	}
	t.Run("the refused bulk update changed nothing", func(t *testing.T) {
		cs := list(t, e, "/api/configurations?filter="+url.QueryEscape(`{"where":{"name":"bq"}}`))
		if len(cs) != 1 || cs[0]["value"] != 1.0 {
			t.Fatalf("configurations %v", cs)
		}
	})
}
