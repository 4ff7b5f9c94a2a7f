package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// Finding 2: only an authenticated identity may set userId.
func TestAnonymousUserID(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	anonymousSubscriber(t, e, "svc", "attacker@invalid.local", map[string]any{"userId": "victim"})

	t.Run("an anonymous caller's userId is dropped, so a unicast to the victim cannot reach the attacker", func(t *testing.T) {
		subs := list(t, e, "/api/subscriptions?filter="+q(`{"where":{"userChannelId":"attacker@invalid.local"}}`))
		if len(subs) != 1 || subs[0]["userId"] != nil {
			t.Fatalf("stored %v", subs)
		}
		e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "svc", "channel": "email", "userId": "victim", "message": emailMsg("secret")}).Expect(t, http.StatusForbidden)
		for _, m := range mailTo(e, "attacker@invalid.local") {
			if strings.Contains(m.Text, "secret") {
				t.Fatal("the victim's unicast went to the attacker")
			}
		}
	})
	t.Run("a logged-in user gets its own id whatever it sends; an admin sets what it wants", func(t *testing.T) {
		m := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "svc", "channel": "email", "userChannelId": "u@invalid.local", "userId": "victim"}, apitest.SMUser("alice")...).Expect(t, http.StatusOK).Map(t)
		if m["userId"] != "alice" {
			t.Errorf("user's subscription userId %v", m["userId"])
		}
		m = e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "svc", "channel": "email", "userChannelId": "v@invalid.local", "userId": "victim", "confirmationRequest": map[string]any{"sendRequest": false}}).Expect(t, http.StatusOK).Map(t)
		if m["userId"] != "victim" {
			t.Errorf("admin's subscription userId %v", m["userId"])
		}
	})
	t.Run("a user's PATCH cannot give a subscription to someone else", func(t *testing.T) {
		id := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "svc", "channel": "email", "userChannelId": "w@invalid.local"}, apitest.SMUser("alice")...).Expect(t, http.StatusOK).Map(t)["id"].(string)
		e.Do(t, "PATCH", "/api/subscriptions/"+id, map[string]any{"userId": "victim", "data": map[string]any{"a": 1}}, apitest.SMUser("alice")...).Expect(t, http.StatusOK)
		if got := sub(t, e, id)["userId"]; got != "alice" {
			t.Errorf("userId after PATCH %v", got)
		}
	})
}

// Finding 7: a user's PATCH of a notification it may not see is 404 and
// changes nothing.
func TestPatchInvisibleNotification(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	past := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	future := time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		n    notify.Notification
	}{
		{"deleted", notify.Notification{Channel: "inApp", UserID: "bar", ServiceName: "s", State: "deleted"}},
		{"not yet valid", notify.Notification{Channel: "inApp", UserID: "bar", ServiceName: "s", State: "new", InvalidBefore: future}},
		{"expired", notify.Notification{Channel: "inApp", UserID: "bar", ServiceName: "s", State: "new", ValidTill: past}},
		{"a broadcast the user deleted", notify.Notification{Channel: "inApp", IsBroadcast: true, ServiceName: "s", State: "new", DeletedBy: []string{"bar"}}},
		{"an expired broadcast", notify.Notification{Channel: "inApp", IsBroadcast: true, ServiceName: "s", State: "new", ValidTill: past}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.n.Message = notifDoc("title", "t")
			id := addNotification(t, e, tc.n)
			before := storedNotification(t, e, id)
			e.Do(t, "PATCH", "/api/notifications/"+id, map[string]any{"state": "read"}, apitest.SMUser("bar")...).Expect(t, http.StatusNotFound)
			e.Do(t, "DELETE", "/api/notifications/"+id, nil, apitest.SMUser("bar")...).Expect(t, http.StatusNotFound)
			after := storedNotification(t, e, id)
			if after.State != before.State || len(after.ReadBy) != len(before.ReadBy) || len(after.DeletedBy) != len(before.DeletedBy) || after.UpdatedBy != nil {
				t.Fatalf("changed: %+v", after)
			}
		})
	}
}
