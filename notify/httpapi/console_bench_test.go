package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// BenchmarkConsoleStatsPoll is what a dashboard polling GET
// /api/console/stats costs between two recounts of the subscriptions
// (those are cached 10 s; BenchmarkSubscriptionGroups in notify/mongostore
// measures a recount): 20 finished broadcasts read (notification, header
// with final counts), the queue's counters, the cached counts — over
// loopback HTTP with 10,000 subscriptions stored.
func BenchmarkConsoleStatsPoll(b *testing.B) {
	e := apitest.Start(b, apitest.Options{})
	subs := make([]*notify.Subscription, 0, 10000)
	for i := range 10000 {
		subs = append(subs, &notify.Subscription{ServiceName: fmt.Sprintf("service%d", i%10), Channel: notify.ChannelEmail, State: notify.StateConfirmed, UserChannelID: fmt.Sprintf("u%d@invalid.local", i)})
	}
	if err := e.Store.Subscriptions().InsertMany(context.Background(), subs); err != nil {
		b.Fatal(err)
	}
	if err := e.Store.Subscriptions().Insert(context.Background(), &notify.Subscription{ServiceName: "small", Channel: notify.ChannelEmail, State: notify.StateConfirmed, UserChannelID: "s@invalid.local"}); err != nil {
		b.Fatal(err)
	}
	for range 20 {
		e.Do(b, "POST", "/api/notifications", map[string]any{"serviceName": "small", "channel": "email", "isBroadcast": true, "message": emailMsg("x")}).Expect(b, http.StatusOK)
	}
	// wait for the background count, so that the loop measures polls only
	for {
		var st struct{ CountsPending bool }
		e.Do(b, "GET", "/api/console/stats", nil).Expect(b, http.StatusOK).JSON(b, &st)
		if !st.CountsPending {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Do(b, "GET", "/api/console/stats", nil).Expect(b, http.StatusOK)
	}
}
