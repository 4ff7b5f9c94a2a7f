package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// BenchmarkCreateSubscription is POST /api/subscriptions by an admin over
// loopback HTTP into the embedded store (no message sent).
func BenchmarkCreateSubscription(b *testing.B) {
	e := apitest.Start(b, apitest.Options{})
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		e.Do(b, "POST", "/api/subscriptions", map[string]any{
			"serviceName": "bench", "channel": "email", "userChannelId": fmt.Sprintf("u%d@example.org", i), "state": "confirmed",
			"confirmationRequest": map[string]any{"sendRequest": false},
		}).Expect(b, http.StatusOK)
	}
}

// BenchmarkVerify is the anonymous confirmation link: find, merged config,
// update, text answer.
func BenchmarkVerify(b *testing.B) {
	e := apitest.Start(b, apitest.Options{})
	id := e.Do(b, "POST", "/api/subscriptions", map[string]any{
		"serviceName": "bench", "channel": "email", "userChannelId": "v@example.org",
		"confirmationRequest": map[string]any{"sendRequest": false, "confirmationCode": "12345"},
	}).Expect(b, http.StatusOK).Map(b)["id"].(string)
	b.ReportAllocs()
	for b.Loop() {
		e.Do(b, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode=12345", nil, apitest.Anonymous...).Expect(b, http.StatusOK)
	}
}

// BenchmarkListSubscriptions is GET /api/subscriptions with a filter over
// 200 records, as a SiteMinder user (access filter and field stripping).
func BenchmarkListSubscriptions(b *testing.B) {
	e := apitest.Start(b, apitest.Options{})
	for i := range 200 {
		e.Do(b, "POST", "/api/subscriptions", map[string]any{
			"serviceName": "bench", "channel": "email", "userId": "bob", "userChannelId": fmt.Sprintf("u%d@example.org", i), "state": "confirmed",
		}).Expect(b, http.StatusOK)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Do(b, "GET", "/api/subscriptions?filter="+q(`{"where":{"serviceName":"bench"},"limit":50}`), nil, apitest.SMUser("bob")...).Expect(b, http.StatusOK)
	}
}
