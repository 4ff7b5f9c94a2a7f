package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// FuzzAPI sends any filter, where and body to the subscription,
// configuration and bounce routes as a super admin and as an anonymous
// caller: hostile input is a 4xx, never a 500 or a panic.
func FuzzAPI(f *testing.F) {
	e := apitest.Start(f, apitest.Options{})
	seedSub := e.Do(f, "POST", "/api/subscriptions", map[string]any{"serviceName": "fz", "channel": "email", "userChannelId": "f@example.org", "confirmationRequest": map[string]any{"sendRequest": false}})
	id, _ := seedSub.Map(f)["id"].(string)
	for _, s := range []struct {
		route     uint8
		query     string
		body      string
		anonymous bool
	}{
		{0, `{"where":{"serviceName":"fz"},"limit":1}`, ``, false},
		{1, `{"serviceName":{"$regex":"^f"}}`, ``, false},
		{2, ``, `{"serviceName":"fz","channel":"email","userChannelId":"x@example.org","data":{"a":[1,{"b":2}]}}`, true},
		{3, ``, `{"data":{"k":"v"},"userChannelId":"y@example.org"}`, false},
		{4, `{"name":"x"}`, `{"value":{"a":1}}`, false},
		{5, ``, `{"name":"n","value":[1,2]}`, false},
		{6, `{"order":[["created","desc"]],"fields":{"id":true}}`, ``, false},
		{2, ``, `{"serviceName":"fz","userChannelId":"z@example.org","created":"2020-01-01"}`, false},
	} {
		f.Add(s.route, s.query, s.body, s.anonymous)
	}
	f.Fuzz(func(t *testing.T, route uint8, q, body string, anonymous bool) {
		var method, path string
		switch route % 8 {
		case 0:
			method, path = "GET", "/api/subscriptions?filter="+url.QueryEscape(q)
		case 1:
			method, path = "GET", "/api/subscriptions/count?where="+url.QueryEscape(q)
		case 2:
			method, path = "POST", "/api/subscriptions"
		case 3:
			method, path = "PATCH", "/api/subscriptions/"+id
		case 4:
			method, path = "PATCH", "/api/configurations?where="+url.QueryEscape(q)
		case 5:
			method, path = "POST", "/api/configurations"
		case 6:
			method, path = "GET", "/api/bounces?filter="+url.QueryEscape(q)
		case 7:
			method, path = "POST", "/api/bounces"
		}
		var b any
		if body != "" {
			b = body
		}
		var h []string
		if anonymous {
			h = apitest.Anonymous
		}
		r := e.Do(t, method, path, b, h...)
		// 502 is the documented answer when a confirmation request cannot be
		// sent (an address the mail server refuses)
		if r.Status >= http.StatusInternalServerError && r.Status != http.StatusBadGateway {
			t.Fatalf("%s %s %q: %d %s", method, path, body, r.Status, r.Body)
		}
	})
}
