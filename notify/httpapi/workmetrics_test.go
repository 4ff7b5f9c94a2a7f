package httpapi_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// scrape reads one sample of the super admin's /metrics: the value of the
// series written exactly as series (name and labels), or -1 when absent.
func scrape(t *testing.T, body, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestWorkMetrics: what the service does beyond HTTP is in its metrics —
// sends by channel and outcome as the SMTP server and the SMS provider
// answered, and a broadcast left in state sending with how long it has
// not progressed.
func TestWorkMetrics(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	for _, to := range []string{"a@example.org", "b@example.org"} {
		e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "roads", "channel": "email", "userChannelId": to, "state": "confirmed"}).Expect(t, http.StatusOK)
	}
	e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "roads", "channel": "email", "isBroadcast": true,
		"message": map[string]any{"from": "roads@example.org", "subject": "closed", "textBody": "Main Street is closed."}}).Expect(t, http.StatusOK)
	e.WaitMail(t, 2)

	e.SMS.SetStatus(http.StatusBadRequest) // the provider refuses: permanent
	e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "roads", "channel": "sms", "userChannelId": "12505550101", "state": "confirmed"}).Expect(t, http.StatusOK)
	e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "roads", "channel": "sms", "userChannelId": "12505550101",
		"message": map[string]any{"textBody": "closed"}})

	// A broadcast a dead node left in state sending an hour ago.
	stuck := notify.Notification{Channel: "email", IsBroadcast: true, ServiceName: "roads", State: notify.StateSending}
	if err := e.Store.Notifications().Insert(context.Background(), &stuck); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.Notifications().UpdateByID(context.Background(), stuck.ID.Hex(), bson.D{{Key: "$set", Value: bson.D{{Key: "updated", Value: time.Now().Add(-time.Hour)}}}}); err != nil {
		t.Fatal(err)
	}

	body := e.Do(t, "GET", "/metrics", nil).Expect(t, http.StatusOK).Text()
	for series, want := range map[string]float64{
		`notify_sends_total{channel="email",outcome="sent"}`:   2,
		`notify_sends_total{channel="email",outcome="failed"}`: 0,
		`notify_sends_total{channel="sms",outcome="refused"}`:  1,
		`notify_broadcasts_sending`:                            1,
		`notify_broadcast_queue_jobs`:                          0,
		`notify_inbound_mails_total{kind="hard_bounce"}`:       0,
	} {
		if got := scrape(t, body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if got := scrape(t, body, "notify_broadcast_stalled_seconds"); got < 3500 || got > 4000 {
		t.Errorf("notify_broadcast_stalled_seconds = %v, want about 3600", got)
	}
}
