package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// Finding 5: decoding a body is linear in its size, on every route; a
// repeated key keeps its last value, at the place of its first, as
// JSON.parse does.
func TestManyKeysAndRepeatedKeys(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	t.Run("a repeated key keeps its last value in the place of the first", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/subscriptions", `{"serviceName":"s","channel":"email","userChannelId":"r@invalid.local","data":{"a":1,"b":2,"a":3}}`, apitest.Anonymous...).Expect(t, http.StatusOK)
		if !strings.Contains(r.Text(), `"data":{"a":3,"b":2}`) {
			t.Fatalf("body %s", r.Body)
		}
	})
	t.Run("an object of more keys than the store can handle is refused, naming the rule", func(t *testing.T) {
		var keys strings.Builder
		for i := 0; i <= notify.MaxKeys; i++ {
			fmt.Fprintf(&keys, `"k%d":0,`, i)
		}
		r := e.Do(t, "POST", "/api/subscriptions", `{"serviceName":"s","channel":"email","userChannelId":"k@invalid.local","data":{`+keys.String()+`"last":1}}`, apitest.Anonymous...).Expect(t, http.StatusBadRequest)
		if m := r.Map(t)["message"].(string); !strings.Contains(m, "at most 1000 keys") {
			t.Errorf("message %q", m)
		}
	})
	// Linearity itself is shown by BenchmarkDecodeJSONValue (notify), not
	// by timing requests here: an object is refused at its 1,001st key and
	// every key is placed through a map, so no body can make decoding
	// quadratic.
}

// Finding 8: deeply nested JSON is refused at decode time with 400 on
// every route that reads a body.
func TestDeeplyNestedBodies(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	deep := func(levels int, open, close string) string {
		return strings.Repeat(open, levels) + "1" + strings.Repeat(close, levels)
	}
	for _, nested := range []string{deep(5000, `{"a":`, `}`), deep(5000, `[`, `]`), deep(100, `{"a":`, `}`)} {
		for _, tc := range []struct {
			method, path string
			headers      []string
			body         string
		}{
			{"POST", "/api/subscriptions", apitest.Anonymous, `{"serviceName":"s","channel":"email","userChannelId":"n@invalid.local","data":` + nested + `}`},
			{"POST", "/api/subscriptions/swift", apitest.Anonymous, `{"notifyBCSwiftKey":` + nested + `}`},
			{"POST", "/api/notifications", nil, `{"serviceName":"s","channel":"inApp","data":` + nested + `}`},
			{"POST", "/api/configurations", nil, `{"name":"x","value":` + nested + `}`},
			{"PATCH", "/api/configurations", nil, `{"value":` + nested + `}`},
			{"POST", "/api/bounces", nil, `{"channel":"email","userChannelId":"x","x":` + nested + `}`},
			{"POST", "/api/administrators/login", apitest.Anonymous, `{"email":` + nested + `}`},
		} {
			r := e.Do(t, tc.method, tc.path, tc.body, tc.headers...)
			if r.Status != http.StatusBadRequest || !strings.Contains(r.Map(t)["message"].(string), "nested") {
				t.Errorf("%s %s with %d bytes of nesting: %d %s", tc.method, tc.path, len(nested), r.Status, r.Body)
			}
		}
	}
	e.Do(t, "POST", "/api/notifications", `{"serviceName":"s","channel":"inApp","data":`+deep(30, `{"a":`, `}`)+`}`, nil...).Expect(t, http.StatusOK)
}

// Callers who are not administrators may send 100 KB, the original's body
// limit: every broadcast reads their subscriptions again.
func TestPublicBodyLimit(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	big := `{"serviceName":"s","channel":"email","userChannelId":"b@invalid.local","data":{"x":"` + strings.Repeat("x", 200<<10) + `"}}`
	e.Do(t, "POST", "/api/subscriptions", big, apitest.Anonymous...).Expect(t, http.StatusRequestEntityTooLarge)
	e.Do(t, "POST", "/api/subscriptions", big, apitest.SMUser("u")...).Expect(t, http.StatusRequestEntityTooLarge)
	e.Do(t, "POST", "/api/subscriptions", `{"serviceName":"s","channel":"email","userChannelId":"b@invalid.local","confirmationRequest":{"sendRequest":false},"data":{"x":"`+strings.Repeat("x", 200<<10)+`"}}`).Expect(t, http.StatusOK)
	e.Do(t, "POST", "/api/subscriptions", `{"serviceName":"s","channel":"email","userChannelId":"c@invalid.local","data":{"x":"`+strings.Repeat("x", 90<<10)+`"}}`, apitest.Anonymous...).Expect(t, http.StatusOK)
}

// An address is matched as a pattern the embedded store compiles per
// document: it is bounded on every write.
func TestLongAddressesAreRefused(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	long := strings.Repeat("a", 1025) + "@invalid.local"
	e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "email", "userChannelId": long}, apitest.Anonymous...).Expect(t, http.StatusBadRequest)
	id := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "email", "userChannelId": "u@invalid.local"}, apitest.SMUser("u")...).Expect(t, http.StatusOK).Map(t)["id"].(string)
	e.Do(t, "PATCH", "/api/subscriptions/"+id, map[string]any{"userChannelId": long}, apitest.SMUser("u")...).Expect(t, http.StatusBadRequest)
	e.Do(t, "PUT", "/api/subscriptions/"+id, map[string]any{"serviceName": "s", "channel": "email", "userChannelId": long}).Expect(t, http.StatusBadRequest)
}
