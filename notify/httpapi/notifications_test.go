package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/httpapi"
	"github.com/govkit/govkit/notify/httpapi/apitest"
	"github.com/govkit/govkit/notify/mailcatcher"
	"github.com/govkit/govkit/notify/sms/provider"
)

// These acceptance tests port the behaviour of the original's notification
// suite (written anew) and add the places where we differ on purpose.
// Records a test starts from are written to the store directly, as the
// original's tests create them through its services; what is under test
// goes through HTTP, and sent mail is read from the SMTP server the service
// sends to.

func addSub(t *testing.T, e *apitest.Env, s notify.Subscription) string {
	t.Helper()
	if s.State == "" {
		s.State = notify.StateConfirmed
	}
	if s.Channel == "" {
		s.Channel = notify.ChannelEmail
	}
	if err := e.Store.Subscriptions().Insert(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	return s.ID.Hex()
}

func addNotification(t *testing.T, e *apitest.Env, n notify.Notification) string {
	t.Helper()
	if err := e.Store.Notifications().Insert(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n.ID.Hex()
}

func storedNotification(t *testing.T, e *apitest.Env, id string) *notify.Notification {
	t.Helper()
	n, err := e.Store.Notifications().FindByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.LoadDispatch(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	return n
}

func countNotifications(t *testing.T, e *apitest.Env) int64 {
	t.Helper()
	n, err := e.Store.Notifications().Count(context.Background(), notify.Fields{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func header(m mailcatcher.Mail, name string) string {
	for k, v := range m.Headers {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// mailTo returns the mails caught for rcpt.
func mailTo(e *apitest.Env, rcpt string) []mailcatcher.Mail {
	var out []mailcatcher.Mail
	for _, m := range e.Mail.Mails() {
		if slices.ContainsFunc(m.Envelope.To, func(s string) bool { return strings.EqualFold(s, rcpt) }) {
			out = append(out, m)
		}
	}
	return out
}

func emailMsg(text string) map[string]any {
	return map[string]any{"from": "no_reply@invalid.local", "subject": "test", "textBody": text}
}

func dispatchOf(t *testing.T, n map[string]any) map[string]any {
	t.Helper()
	d, ok := n["dispatch"].(map[string]any)
	if !ok {
		t.Fatalf("no dispatch in %v", n)
	}
	return d
}

func strs(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// customFilterFunctions loads the original test configuration's custom
// filter function, contains_ci, from a config.local.js file as a
// deployment writes it: an async JavaScript function run by the config
// runtime.
func customFilterFunctions(t *testing.T) map[string]any {
	t.Helper()
	dir := t.TempDir()
	js := `module.exports = {
  notification: {
    broadcastCustomFilterFunctions: {
      contains_ci: {
        _func: async function (resolvedArgs) {
          if (!resolvedArgs[0] || !resolvedArgs[1]) return false;
          return resolvedArgs[0].toLowerCase().indexOf(resolvedArgs[1].toLowerCase()) >= 0;
        },
        _signature: [{ types: [2] }, { types: [2] }],
      },
    },
  },
};
`
	if err := os.WriteFile(filepath.Join(dir, "config.local.js"), []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Options{Dir: dir, NodeEnv: "development", JSPoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	fns, ok := cfg.Lookup("notification.broadcastCustomFilterFunctions")
	if !ok {
		t.Fatal("custom functions not loaded")
	}
	return fns.(map[string]any)
}

func TestNotificationList(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	past := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	future := time.Date(3017, 5, 30, 0, 0, 0, 0, time.UTC)
	inApp := func(n notify.Notification) notify.Notification {
		n.Channel, n.ServiceName = notify.ChannelInApp, "myService"
		n.Message = notifDoc("title", "test", "body", "this is a test")
		n.State = notify.StateNew
		return n
	}
	addNotification(t, e, inApp(notify.Notification{IsBroadcast: true, ValidTill: past}))
	readID := addNotification(t, e, inApp(notify.Notification{IsBroadcast: true, ReadBy: []string{"bar", "baz"}}))
	addNotification(t, e, inApp(notify.Notification{IsBroadcast: true, DeletedBy: []string{"bar"}}))
	addNotification(t, e, inApp(notify.Notification{IsBroadcast: true, InvalidBefore: future}))
	mineID := addNotification(t, e, inApp(notify.Notification{UserChannelID: "bar"}))
	addNotification(t, e, inApp(notify.Notification{UserChannelID: "qux"}))
	addNotification(t, e, notify.Notification{Channel: "email", IsBroadcast: true, ServiceName: "myService", State: "sent", Message: notifDoc("from", "no_reply@invalid.local")})

	t.Run("anonymous callers are forbidden", func(t *testing.T) {
		e.Do(t, "GET", "/api/notifications", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "GET", "/api/notifications/count", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "GET", "/api/notifications/"+mineID, nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("a SiteMinder user sees only current, non-expired, non-deleted in-app notifications for them or broadcast", func(t *testing.T) {
		got := list(t, e, "/api/notifications", apitest.SMUser("bar")...)
		var ids []string
		for _, n := range got {
			ids = append(ids, n["id"].(string))
		}
		slices.Sort(ids)
		want := []string{readID, mineID}
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Fatalf("user sees %v, want %v", ids, want)
		}
	})
	t.Run("a broadcast the user read shows state read to them and new to others", func(t *testing.T) {
		states := map[string]any{}
		for _, user := range []string{"bar", "other"} {
			for _, n := range list(t, e, "/api/notifications", apitest.SMUser(user)...) {
				if n["id"] == readID {
					states[user] = n["state"]
				}
			}
		}
		if states["bar"] != "read" || states["other"] != "new" {
			t.Fatalf("states %v", states)
		}
	})
	t.Run("users never see readBy, deletedBy, createdBy or updatedBy", func(t *testing.T) {
		for _, n := range list(t, e, "/api/notifications", apitest.SMUser("baz")...) {
			for _, k := range []string{"readBy", "deletedBy", "createdBy", "updatedBy"} {
				if _, ok := n[k]; ok {
					t.Errorf("%s shown to a user: %v", k, n)
				}
			}
		}
		one := e.Do(t, "GET", "/api/notifications/"+readID, nil, apitest.SMUser("baz")...).Expect(t, http.StatusOK).Map(t)
		if _, ok := one["readBy"]; ok {
			t.Errorf("readBy shown by id: %v", one)
		}
	})
	t.Run("count applies the same restriction as the list", func(t *testing.T) {
		for _, user := range []string{"bar", "qux", "nobody"} {
			var c map[string]float64
			e.Do(t, "GET", "/api/notifications/count", nil, apitest.SMUser(user)...).Expect(t, http.StatusOK).JSON(t, &c)
			if n := len(list(t, e, "/api/notifications", apitest.SMUser(user)...)); c["count"] != float64(n) {
				t.Errorf("%s: count %v, list %d", user, c["count"], n)
			}
		}
		var c map[string]float64
		e.Do(t, "GET", "/api/notifications/count?where="+q(`{"channel":"inApp"}`), nil, apitest.SMUser("bar")...).Expect(t, http.StatusOK).JSON(t, &c)
		if c["count"] != 2 {
			t.Errorf("user count with where = %v, want 2", c["count"])
		}
	})
	t.Run("admins see every notification with readBy and deletedBy", func(t *testing.T) {
		got := list(t, e, "/api/notifications")
		if len(got) != 7 {
			t.Fatalf("admin sees %d, want 7", len(got))
		}
		var c map[string]float64
		e.Do(t, "GET", "/api/notifications/count", nil).Expect(t, http.StatusOK).JSON(t, &c)
		if c["count"] != 7 {
			t.Errorf("admin count %v", c["count"])
		}
		one := e.Do(t, "GET", "/api/notifications/"+readID, nil).Expect(t, http.StatusOK).Map(t)
		if !slices.Equal(strs(one["readBy"]), []string{"bar", "baz"}) {
			t.Errorf("readBy = %v", one["readBy"])
		}
	})
	t.Run("filters use $ operators, in JSON or bracket form", func(t *testing.T) {
		if got := list(t, e, "/api/notifications?filter="+q(`{"where":{"channel":{"$eq":"email"}}}`)); len(got) != 1 {
			t.Errorf("JSON filter: %d", len(got))
		}
		if got := list(t, e, "/api/notifications?filter[where][channel]=email"); len(got) != 1 {
			t.Errorf("bracket filter: %d", len(got))
		}
		e.Do(t, "GET", "/api/notifications?filter="+q(`{"where":{"channel":{"neq":"email"}}}`), nil).Expect(t, http.StatusBadRequest)
	})
	t.Run("fields limits what is shown", func(t *testing.T) {
		one := e.Do(t, "GET", "/api/notifications/"+mineID+"?filter="+q(`{"fields":{"channel":true}}`), nil).Expect(t, http.StatusOK).Map(t)
		if one["channel"] != "inApp" || one["message"] != nil {
			t.Errorf("projected: %v", one)
		}
	})
	t.Run("get by id", func(t *testing.T) {
		tests := []struct {
			name    string
			id      string
			headers []string
			status  int
		}{
			{"an admin reads any notification", mineID, nil, http.StatusOK},
			{"a user reads one addressed to them", mineID, apitest.SMUser("bar"), http.StatusOK},
			{"another user's notification is not found", mineID, apitest.SMUser("qux2"), http.StatusNotFound},
			{"an unknown id is 404, not an empty 200", notify.NewID().Hex(), nil, http.StatusNotFound},
			{"a malformed id is 404", "nope", nil, http.StatusNotFound},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				e.Do(t, "GET", "/api/notifications/"+tc.id, nil, tc.headers...).Expect(t, tc.status)
			})
		}
	})
}

func TestNotificationPostRights(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	body := map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x")}
	t.Run("anonymous callers may not post", func(t *testing.T) {
		e.Do(t, "POST", "/api/notifications", body, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("SiteMinder users may not post", func(t *testing.T) {
		e.Do(t, "POST", "/api/notifications", body, apitest.SMUser("bar")...).Expect(t, http.StatusForbidden)
	})
	if n := countNotifications(t, e); n != 0 {
		t.Fatalf("%d notifications stored", n)
	}
}

func TestNotificationPostValidation(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar@foo.com", UserID: "bar"})
	tests := []struct {
		name   string
		body   map[string]any
		status int
		msg    string
	}{
		{"skipSubscriptionConfirmationCheck without userChannelId is refused", map[string]any{"serviceName": "myService", "channel": "email", "userId": "bar", "skipSubscriptionConfirmationCheck": true, "message": emailMsg("x")}, http.StatusForbidden, "invalid user"},
		{"a unicast without userChannelId and userId is refused", map[string]any{"serviceName": "myService", "channel": "email", "message": emailMsg("x")}, http.StatusForbidden, "invalid user"},
		{"a unicast without a confirmed subscription is refused", map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "stranger@foo.com", "message": emailMsg("x")}, http.StatusForbidden, "invalid user"},
		{"part of a subscribed address is not a match", map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "ar@foo.com", "message": emailMsg("x")}, http.StatusForbidden, "invalid user"},
		{"an invalid subscription filter is 400", map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x"), "broadcastPushNotificationSubscriptionFilter": "a === 'b'"}, http.StatusBadRequest, "broadcastPushNotificationSubscriptionFilter"},
		{"a date-only validTill is 400", map[string]any{"serviceName": "myService", "channel": "inApp", "isBroadcast": true, "validTill": "2030-01-01"}, http.StatusBadRequest, "validTill"},
		{"an invalidBefore with an offset is 400", map[string]any{"serviceName": "myService", "channel": "inApp", "isBroadcast": true, "invalidBefore": "2030-01-01T00:00:00+01:00"}, http.StatusBadRequest, "invalidBefore"},
		{"an unknown channel is 400", map[string]any{"serviceName": "myService", "channel": "fax", "isBroadcast": true}, http.StatusBadRequest, "channel"},
		{"serviceName is required", map[string]any{"channel": "inApp", "isBroadcast": true}, http.StatusBadRequest, "serviceName"},
		{"a body that is not JSON is 400", nil, http.StatusBadRequest, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body any = tc.body
			if tc.body == nil {
				body = "{not json"
			}
			r := e.Do(t, "POST", "/api/notifications", body).Expect(t, tc.status)
			if m := r.Map(t); !strings.Contains(fmt.Sprint(m["message"]), tc.msg) {
				t.Errorf("message %q lacks %q", m["message"], tc.msg)
			}
		})
	}
	if n := countNotifications(t, e); n != 0 {
		t.Fatalf("refused notifications were stored: %d", n)
	}
	if len(e.Mail.Mails()) != 0 {
		t.Fatal("mail sent for a refused notification")
	}
	t.Run("a full date-time is accepted and written back with milliseconds", func(t *testing.T) {
		m := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "inApp", "isBroadcast": true, "validTill": "2030-01-02T03:04:05Z"}).Expect(t, http.StatusOK).Map(t)
		if m["validTill"] != "2030-01-02T03:04:05.000Z" || m["state"] != "new" {
			t.Errorf("stored %v", m)
		}
	})
}

func TestNotificationBroadcastEmailMailMerge(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	subID := addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar@foo.com", UserID: "bar",
		ConfirmationRequest: notifDoc("confirmationCode", "12345"), UnsubscriptionCode: "54321", Data: notifDoc("gender", "male")})
	addSub(t, e, notify.Subscription{ServiceName: "myService", Channel: "sms", UserChannelID: "12345"})
	tmpl := `\{1\} \{2\}, This is a broadcast test {confirmation_code} {service_name} {http_host} {rest_api_root} {subscription_id} {unsubscription_code} {2} {notification::1} {subscription::gender}`
	r := e.Do(t, "POST", "/api/notifications", map[string]any{
		"serviceName": "myService", "channel": "email", "isBroadcast": true,
		"message": map[string]any{"from": "no_reply@bar.com", "subject": "test", "textBody": tmpl, "htmlBody": tmpl},
		"data":    map[string]any{"1": "foo", "2": "bar"},
	}).Expect(t, http.StatusOK).Map(t)
	mails := e.WaitMail(t, 1)
	if len(mails) != 1 {
		t.Fatalf("%d mails, want 1", len(mails))
	}
	m := mails[0]
	want := "{1} {2}, This is a broadcast test 12345 myService " + e.URL + " /api " + subID + " 54321 bar foo male"
	t.Run("text and HTML bodies are merged", func(t *testing.T) {
		if !strings.Contains(m.Text, want) {
			t.Errorf("text %q lacks %q", m.Text, want)
		}
		if !strings.Contains(m.HTML, want) {
			t.Errorf("html %q lacks %q", m.HTML, want)
		}
	})
	t.Run("List-Unsubscribe names the un- address and the unsubscribe URL", func(t *testing.T) {
		lu := header(m, "List-Unsubscribe")
		if !strings.Contains(lu, "mailto:un-"+subID+"-54321@invalid.local") || !strings.Contains(lu, e.URL+"/api/subscriptions/"+subID+"/unsubscribe?unsubscriptionCode=54321") {
			t.Errorf("List-Unsubscribe %q", lu)
		}
		if header(m, "List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" {
			t.Errorf("List-Unsubscribe-Post %q", header(m, "List-Unsubscribe-Post"))
		}
	})
	t.Run("the final state is sent and dispatch names the subscriber", func(t *testing.T) {
		if r["state"] != "sent" {
			t.Errorf("state %v", r["state"])
		}
		d := dispatchOf(t, r)
		if !slices.Equal(strs(d["candidates"]), []string{subID}) || !slices.Equal(strs(d["successful"]), []string{subID}) {
			t.Errorf("dispatch %v", d)
		}
	})
	t.Run("output field names are dispatch.failed and dispatch.successful", func(t *testing.T) {
		d := dispatchOf(t, r)
		if _, ok := d["failed"]; !ok {
			t.Error("dispatch.failed missing")
		}
		for _, old := range []string{"failedDispatches", "successDispatches"} {
			if _, ok := r[old]; ok {
				t.Errorf("%s present", old)
			}
		}
		got := e.Do(t, "GET", "/api/notifications/"+r["id"].(string), nil).Expect(t, http.StatusOK).Map(t)
		if !slices.Equal(strs(dispatchOf(t, got)["successful"]), []string{subID}) {
			t.Errorf("GET dispatch %v", got["dispatch"])
		}
		listed := list(t, e, "/api/notifications?filter="+q(`{"fields":{"dispatch":true}}`))
		if len(listed) != 1 || !slices.Equal(strs(dispatchOf(t, listed[0])["successful"]), []string{subID}) || listed[0]["isBroadcast"] != nil {
			t.Errorf("listed with fields: %v", listed)
		}
	})
}

func TestNotificationUnicastEmail(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	subID := addSub(t, e, notify.Subscription{ServiceName: "my service", UserChannelID: "bar@foo.com", UserID: "bar", UnsubscriptionCode: "54321",
		ConfirmationRequest: notifDoc("confirmationCode", "12345")})
	ctx := context.Background()
	bounce := &notify.Bounce{Channel: "email", UserChannelID: "bar@foo.com", HardBounceCount: 1}
	if err := e.Store.Bounces().Insert(ctx, bounce); err != nil {
		t.Fatal(err)
	}
	r := e.Do(t, "POST", "/api/notifications", map[string]any{
		"serviceName": "my service", "channel": "email", "userId": "bar", "userChannelId": "bar@foo.COM",
		"message": emailMsg("This is a unicast test {confirmation_code} {service_name} {http_host} {rest_api_root} {subscription_id} {unsubscription_code}"),
	}).Expect(t, http.StatusOK).Map(t)
	m := e.WaitMail(t, 1)[0]

	t.Run("the subscription is matched ignoring case and the state is sent", func(t *testing.T) {
		if r["state"] != "sent" || r["userChannelId"] != "bar@foo.com" {
			t.Errorf("answer %v", r)
		}
		if st := storedNotification(t, e, r["id"].(string)).State; st != "sent" {
			t.Errorf("stored state %q", st)
		}
	})
	t.Run("the mail reaches the SMTP server merged", func(t *testing.T) {
		want := "This is a unicast test 12345 my service " + e.URL + " /api " + subID + " 54321"
		if !strings.Contains(m.Text, want) || m.Subject != "test" {
			t.Errorf("subject %q text %q", m.Subject, m.Text)
		}
		if !slices.Equal(m.Envelope.To, []string{"bar@foo.com"}) {
			t.Errorf("envelope to %v", m.Envelope.To)
		}
	})
	t.Run("List-Id is the host and the encoded service name", func(t *testing.T) {
		if got, want := header(m, "List-Id"), "<"+e.URL+"/my%20service>"; got != want {
			t.Errorf("List-Id %q, want %q", got, want)
		}
	})
	t.Run("List-Unsubscribe has the un- address and the URL", func(t *testing.T) {
		lu := header(m, "List-Unsubscribe")
		if !strings.Contains(lu, "<mailto:un-"+subID+"-54321@invalid.local>") || !strings.Contains(lu, "/api/subscriptions/"+subID+"/unsubscribe?unsubscriptionCode=54321>") {
			t.Errorf("List-Unsubscribe %q", lu)
		}
	})
	t.Run("the envelope sender is the VERP bounce address", func(t *testing.T) {
		if got, want := m.Envelope.From, "bn-"+subID+"-54321@invalid.local"; got != want {
			t.Errorf("MAIL FROM %q, want %q", got, want)
		}
		if !strings.Contains(m.From, "no_reply@invalid.local") {
			t.Errorf("From header %q", m.From)
		}
	})
	t.Run("the bounce record is stamped", func(t *testing.T) {
		b, err := e.Store.Bounces().FindByID(ctx, bounce.ID.Hex())
		if err != nil {
			t.Fatal(err)
		}
		if b.LatestNotificationStarted == nil || b.LatestNotificationEnded == nil || b.LatestNotificationEnded.Before(*b.LatestNotificationStarted) {
			t.Errorf("bounce %+v", b)
		}
	})
	t.Run("userId alone finds the subscription and fills userChannelId", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "my service", "channel": "email", "userId": "bar", "message": emailMsg("by user id")}).Expect(t, http.StatusOK).Map(t)
		if r["userChannelId"] != "bar@foo.com" || r["state"] != "sent" {
			t.Errorf("answer %v", r)
		}
		e.WaitMail(t, 2)
	})
	t.Run("a future-dated notification is stored and not sent", func(t *testing.T) {
		before := len(e.Mail.Mails())
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "my service", "channel": "email", "userId": "bar", "invalidBefore": "3017-06-01T00:00:00Z", "message": emailMsg("later")}).Expect(t, http.StatusOK).Map(t)
		if r["state"] != "new" || len(e.Mail.Mails()) != before {
			t.Errorf("state %v, mails %d → %d", r["state"], before, len(e.Mail.Mails()))
		}
	})
	t.Run("a unicast the SMTP server cannot take ends in state error", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "my service", "channel": "email", "skipSubscriptionConfirmationCheck": true, "userChannelId": "not an address", "message": emailMsg("x")}).Expect(t, http.StatusOK).Map(t)
		if r["state"] != "error" {
			t.Errorf("state %v", r["state"])
		}
	})
}

func TestNotificationEnvelopeSender(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]any
		bounce bool
	}{
		{"set when bounce handling is on and a domain is set", nil, true},
		{"not set when bounce handling is off", map[string]any{"email": map[string]any{"bounce": map[string]any{"enabled": false}}}, false},
		{"not set when no inbound domain is set", map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"domain": nil}}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := apitest.Options{}
			if tc.config != nil {
				o.Config = append(o.Config, tc.config)
			}
			e := apitest.Start(t, o)
			subID := addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar@foo.com", UnsubscriptionCode: "54321"})
			e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x")}).Expect(t, http.StatusOK)
			m := e.WaitMail(t, 1)[0]
			bn := "bn-" + subID + "-54321@invalid.local"
			if got := m.Envelope.From; (got == bn) != tc.bounce || (!tc.bounce && got != "no_reply@invalid.local") {
				t.Errorf("MAIL FROM %q (bounce address expected: %v)", got, tc.bounce)
			}
		})
	}
}

func TestNotificationSMS(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	subID := addSub(t, e, notify.Subscription{ServiceName: "myService", Channel: "sms", UserChannelID: "12345", UnsubscriptionCode: "54321"})
	text := "This is a test {service_name} {subscription_id} {unsubscription_code}"
	t.Run("a unicast SMS goes to Swift without a Reference when no subscription is involved", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "sms", "skipSubscriptionConfirmationCheck": true, "userChannelId": "67890", "message": map[string]any{"textBody": text}}).Expect(t, http.StatusOK).Map(t)
		if r["state"] != "sent" {
			t.Errorf("state %v", r["state"])
		}
		reqs := e.SMS.Requests()
		if len(reqs) != 1 || reqs[0].Path != "/123/67890" || reqs[0].Body["MessageBody"] != "This is a test myService {subscription_id} {unsubscription_code}" {
			t.Fatalf("swift requests %+v", reqs)
		}
		if _, ok := reqs[0].Body["Reference"]; ok {
			t.Errorf("Reference sent without a subscription: %v", reqs[0].Body)
		}
	})
	t.Run("a broadcast SMS carries the subscription id as Reference", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "sms", "isBroadcast": true, "message": map[string]any{"textBody": text}}).Expect(t, http.StatusOK).Map(t)
		reqs := e.SMS.Requests()
		last := reqs[len(reqs)-1]
		if last.Path != "/123/12345" || last.Body["Reference"] != subID || last.Body["MessageBody"] != "This is a test myService "+subID+" 54321" {
			t.Fatalf("swift request %+v", last)
		}
		if r["state"] != "sent" || !slices.Equal(strs(dispatchOf(t, r)["successful"]), []string{subID}) {
			t.Errorf("answer %v", r)
		}
	})
	t.Run("a refused SMS is recorded in dispatch.failed with the provider's status", func(t *testing.T) {
		e.SMS.SetStatus(http.StatusTooManyRequests)
		defer e.SMS.SetStatus(http.StatusOK)
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "sms", "isBroadcast": true, "message": map[string]any{"textBody": "x"}}).Expect(t, http.StatusOK).Map(t)
		if r["state"] != "sent" {
			t.Errorf("state %v, want sent despite the failure", r["state"])
		}
		failed, _ := dispatchOf(t, r)["failed"].([]any)
		if len(failed) != 1 {
			t.Fatalf("failed %v", failed)
		}
		f := failed[0].(map[string]any)
		errDoc, _ := f["error"].(map[string]any)
		if f["subscriptionId"] != subID || f["userChannelId"] != "12345" || errDoc["status"] != 429.0 {
			t.Errorf("failure %v", f)
		}
	})
}

// twilioFake answers Twilio's Messages API on loopback, in its wire format.
type twilioFake struct {
	mu   sync.Mutex
	reqs []*http.Request
	form []map[string]string
}

func (tf *twilioFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	tf.mu.Lock()
	tf.reqs = append(tf.reqs, r)
	tf.form = append(tf.form, map[string]string{"To": r.PostForm.Get("To"), "From": r.PostForm.Get("From"), "Body": r.PostForm.Get("Body")})
	tf.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"sid":"SM0123456789abcdef0123456789abcdef","status":"queued"}`)
}

// redirectTransport sends every request to a loopback server instead of
// the provider's host, as a proxy would: the request itself is unchanged.
type redirectTransport struct{ target string }

func (rt redirectTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme = "http"
	r.URL.Host = strings.TrimPrefix(rt.target, "http://")
	return http.DefaultTransport.RoundTrip(r)
}

func TestNotificationSMSThroughTwilio(t *testing.T) {
	fake := &twilioFake{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	e := startWithTwilio(t, srv.URL)
	subID := addSub(t, e, notify.Subscription{ServiceName: "myService", Channel: "sms", UserChannelID: "+15550001", UnsubscriptionCode: "11111", Data: notifDoc("count", 0)})
	r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "sms", "userChannelId": "+15550001",
		"message": map[string]any{"textBody": "You have {subscription::count} new items ({subscription_id})"}}).Expect(t, http.StatusOK).Map(t)
	if r["state"] != "sent" {
		t.Fatalf("state %v", r["state"])
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.reqs) != 1 {
		t.Fatalf("%d twilio requests", len(fake.reqs))
	}
	req := fake.reqs[0]
	user, pass, _ := req.BasicAuth()
	if req.Method != "POST" || req.URL.Path != "/2010-04-01/Accounts/AC0001/Messages.json" || user != "AC0001" || pass != "secret" {
		t.Errorf("request %s %s as %s", req.Method, req.URL.Path, user)
	}
	want := map[string]string{"To": "+15550001", "From": "+15559999", "Body": "You have 0 new items (" + subID + ")"}
	if fmt.Sprint(fake.form[0]) != fmt.Sprint(want) {
		t.Errorf("form %v, want %v", fake.form[0], want)
	}
}

func TestNotificationBroadcastDispatch(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"notification": map[string]any{
		"broadcastSubscriberChunkSize":      1.0,
		"logSkippedBroadcastPushDispatches": true,
		"broadcastCustomFilterFunctions":    customFilterFunctions(t),
	}}}})
	okID := addSub(t, e, notify.Subscription{ServiceName: "chunked", UserChannelID: "bar1@foo.com"})
	badID := addSub(t, e, notify.Subscription{ServiceName: "chunked", UserChannelID: "bar2 invalid"})
	filterID := addSub(t, e, notify.Subscription{ServiceName: "filterable", UserChannelID: "bar2@invalid", BroadcastPushNotificationFilter: "contains(name,'f')"})
	customID := addSub(t, e, notify.Subscription{ServiceName: "custom", UserChannelID: "bar3@invalid", BroadcastPushNotificationFilter: "contains_ci(name,'FOO')"})
	dataID := addSub(t, e, notify.Subscription{ServiceName: "bydata", UserChannelID: "bar4@invalid", Data: notifDoc("name", "foo")})
	addSub(t, e, notify.Subscription{ServiceName: "bydata", UserChannelID: "bar5@invalid", Data: notifDoc("name", "bar")})
	post := func(t *testing.T, body map[string]any) map[string]any {
		t.Helper()
		body["channel"], body["isBroadcast"] = "email", true
		if body["message"] == nil {
			body["message"] = emailMsg("test")
		}
		return e.Do(t, "POST", "/api/notifications", body).Expect(t, http.StatusOK).Map(t)
	}

	t.Run("a chunked synchronous broadcast records each subscriber and ends sent", func(t *testing.T) {
		r := post(t, map[string]any{"serviceName": "chunked"})
		d := dispatchOf(t, r)
		if r["state"] != "sent" || !slices.Equal(strs(d["successful"]), []string{okID}) {
			t.Fatalf("answer %v", r)
		}
		failed, _ := d["failed"].([]any)
		if len(failed) != 1 || failed[0].(map[string]any)["subscriptionId"] != badID || failed[0].(map[string]any)["userChannelId"] != "bar2 invalid" {
			t.Errorf("failed %v", failed)
		}
		if len(mailTo(e, "bar1@foo.com")) != 1 {
			t.Error("bar1@foo.com got no mail")
		}
		counts, _ := d["counts"].(map[string]any)
		if counts["candidates"] != 2.0 || counts["successful"] != 1.0 || counts["failed"] != 1.0 || counts["pending"] != 0.0 {
			t.Errorf("counts %v", d["counts"])
		}
		// Fields leaving dispatch out leave it out (and it is not read);
		// asking for it alone shows it.
		id := r["id"].(string)
		got := e.Do(t, "GET", "/api/notifications/"+id+`?filter={"fields":{"state":true}}`, nil).Expect(t, http.StatusOK).Map(t)
		if _, ok := got["dispatch"]; ok || got["state"] != "sent" {
			t.Errorf("state only: %v", got)
		}
		got = e.Do(t, "GET", "/api/notifications/"+id+`?filter={"fields":{"dispatch":true}}`, nil).Expect(t, http.StatusOK).Map(t)
		if d, _ := got["dispatch"].(map[string]any); len(strs(d["successful"])) != 1 {
			t.Errorf("dispatch only: %v", got)
		}
	})
	t.Run("results given in dispatch are honoured: nobody is sent to twice", func(t *testing.T) {
		before := len(e.Mail.Mails())
		r := post(t, map[string]any{"serviceName": "chunked", "dispatch": map[string]any{"successful": []any{okID}, "failed": []any{map[string]any{"subscriptionId": badID}}}})
		if len(e.Mail.Mails()) != before {
			t.Error("mail sent to subscribers already done")
		}
		c := strs(dispatchOf(t, r)["candidates"])
		if !slices.Contains(c, okID) || !slices.Contains(c, badID) {
			t.Errorf("candidates %v", c)
		}
	})
	t.Run("a matching subscription filter lets the mail through", func(t *testing.T) {
		r := post(t, map[string]any{"serviceName": "filterable", "data": map[string]any{"name": "foo"}})
		if len(mailTo(e, "bar2@invalid")) != 1 || !slices.Equal(strs(dispatchOf(t, r)["successful"]), []string{filterID}) {
			t.Errorf("dispatch %v", r["dispatch"])
		}
	})
	t.Run("a subscription filter that does not match skips the subscriber", func(t *testing.T) {
		before := len(mailTo(e, "bar2@invalid"))
		r := post(t, map[string]any{"serviceName": "filterable", "data": map[string]any{"name": "Foo"}})
		if len(mailTo(e, "bar2@invalid")) != before {
			t.Error("filtered subscriber got mail")
		}
		if r["state"] != "sent" || !slices.Equal(strs(dispatchOf(t, r)["skipped"]), []string{filterID}) {
			t.Errorf("answer %v", r)
		}
	})
	t.Run("custom filter functions from config work in subscription filters", func(t *testing.T) {
		r := post(t, map[string]any{"serviceName": "custom", "data": map[string]any{"name": "foo"}})
		if len(mailTo(e, "bar3@invalid")) != 1 || r["state"] != "sent" || !slices.Equal(strs(dispatchOf(t, r)["successful"]), []string{customID}) {
			t.Errorf("answer %v", r)
		}
	})
	t.Run("broadcastPushNotificationSubscriptionFilter selects subscribers by their data, with custom functions", func(t *testing.T) {
		r := post(t, map[string]any{"serviceName": "bydata", "broadcastPushNotificationSubscriptionFilter": "contains_ci(name,'FOO')"})
		if len(mailTo(e, "bar4@invalid")) != 1 || len(mailTo(e, "bar5@invalid")) != 0 {
			t.Errorf("mails: bar4 %d, bar5 %d", len(mailTo(e, "bar4@invalid")), len(mailTo(e, "bar5@invalid")))
		}
		if !slices.Equal(strs(dispatchOf(t, r)["successful"]), []string{dataID}) {
			t.Errorf("dispatch %v", r["dispatch"])
		}
	})
	t.Run("an unknown function in a filter is refused when written", func(t *testing.T) {
		e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "bydata", "channel": "email", "isBroadcast": true, "message": emailMsg("x"), "broadcastPushNotificationSubscriptionFilter": "nope(name)"}).Expect(t, http.StatusBadRequest)
	})
}

func TestNotificationFalsyMergeValues(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar@foo.com"})
	e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true,
		"message": emailMsg("count={count} flag={flag} empty=[{empty}] missing={missing}"),
		"data":    map[string]any{"count": 0, "flag": false, "empty": ""}}).Expect(t, http.StatusOK)
	m := e.WaitMail(t, 1)[0]
	if want := "count=0 flag=false empty=[] missing={missing}"; !strings.Contains(m.Text, want) {
		t.Errorf("text %q lacks %q (0, false and \"\" are values; a missing path stays a token)", m.Text, want)
	}
}

func TestNotificationSuccessRecording(t *testing.T) {
	t.Run("successful dispatches are recorded by default", func(t *testing.T) {
		e := apitest.Start(t, apitest.Options{})
		id := addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar@foo.com"})
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x")}).Expect(t, http.StatusOK).Map(t)
		d := dispatchOf(t, r)
		if !slices.Contains(strs(d["candidates"]), id) || !slices.Contains(strs(d["successful"]), id) {
			t.Errorf("dispatch %v", d)
		}
	})
	t.Run("without guaranteed processing and bounce handling successes are not recorded", func(t *testing.T) {
		e := apitest.Start(t, apitest.Options{Config: []map[string]any{{
			"notification": map[string]any{"guaranteedBroadcastPushDispatchProcessing": false},
			"email":        map[string]any{"bounce": map[string]any{"enabled": false}},
		}}})
		id := addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar@foo.com"})
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x")}).Expect(t, http.StatusOK).Map(t)
		d := dispatchOf(t, r)
		if len(strs(d["successful"])) != 0 || !slices.Contains(strs(d["candidates"]), id) || r["state"] != "sent" {
			t.Errorf("answer %v", r)
		}
		if len(e.Mail.Mails()) != 1 {
			t.Error("mail not sent")
		}
	})
}

func TestNotificationBroadcastStampsBounces(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar@foo.com"})
	ctx := context.Background()
	b := &notify.Bounce{Channel: "email", UserChannelID: "bar@foo.com", HardBounceCount: 1}
	other := &notify.Bounce{Channel: "email", UserChannelID: "elsewhere@foo.com", HardBounceCount: 1}
	for _, x := range []*notify.Bounce{b, other} {
		if err := e.Store.Bounces().Insert(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x")}).Expect(t, http.StatusOK)
	got, err := e.Store.Bounces().FindByID(ctx, b.ID.Hex())
	if err != nil {
		t.Fatal(err)
	}
	if got.LatestNotificationStarted == nil || got.LatestNotificationEnded == nil || got.LatestNotificationEnded.Before(*got.LatestNotificationStarted) {
		t.Errorf("bounce of the recipient not stamped: %+v", got)
	}
	if o, _ := e.Store.Bounces().FindByID(ctx, other.ID.Hex()); o.LatestNotificationStarted != nil {
		t.Errorf("bounce of a non-recipient stamped: %+v", o)
	}
}

func TestNotificationAsyncBroadcast(t *testing.T) {
	type call struct {
		contentType string
		body        map[string]any
	}
	calls := make(chan call, 4)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := call{contentType: r.Header.Get("Content-Type")}
		_ = json.NewDecoder(r.Body).Decode(&c.body)
		calls <- c
	}))
	defer cb.Close()
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"notification": map[string]any{"broadcastSubscriberChunkSize": 1.0},
		"outboundRequests": map[string]any{"allow": []any{"127.0.0.1"}}}}}) // the receiver is on loopback
	okID := addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar1@foo.com"})
	badID := addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar2 invalid"})

	t.Run("the answer comes at once and the final notification is posted to the callback URL", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x"),
			"asyncBroadcastPushNotification": cb.URL + "/hook"}).Expect(t, http.StatusOK).Map(t)
		if st := r["state"]; st != "new" && st != "sending" {
			t.Errorf("answer state %v", st)
		}
		var c call
		select {
		case c = <-calls:
		case <-time.After(20 * time.Second):
			t.Fatal("no callback")
		}
		if c.contentType != "application/json" || c.body["id"] != r["id"] || c.body["state"] != "sent" {
			t.Fatalf("callback %s %v", c.contentType, c.body)
		}
		d, _ := c.body["dispatch"].(map[string]any)
		failed, _ := d["failed"].([]any)
		if !slices.Equal(strs(d["successful"]), []string{okID}) || len(failed) != 1 || failed[0].(map[string]any)["subscriptionId"] != badID {
			t.Errorf("callback dispatch %v", d)
		}
		if st := storedNotification(t, e, r["id"].(string)).State; st != "sent" {
			t.Errorf("stored state %q", st)
		}
	})
	t.Run("asyncBroadcastPushNotification true runs in the background without a callback", func(t *testing.T) {
		before := len(mailTo(e, "bar1@foo.com"))
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x"),
			"asyncBroadcastPushNotification": true}).Expect(t, http.StatusOK).Map(t)
		deadline := time.Now().Add(20 * time.Second)
		for storedNotification(t, e, r["id"].(string)).State != "sent" {
			if time.Now().After(deadline) {
				t.Fatal("never sent")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(mailTo(e, "bar1@foo.com")) != before+1 {
			t.Error("no mail")
		}
		select {
		case c := <-calls:
			t.Errorf("unexpected callback %v", c.body)
		default:
		}
	})
}

func TestNotificationPatchAndDelete(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	newBroadcast := func() string {
		return addNotification(t, e, notify.Notification{Channel: "inApp", IsBroadcast: true, ServiceName: "myService", State: "new", Message: notifDoc("title", "test")})
	}
	mine := addNotification(t, e, notify.Notification{Channel: "inApp", UserChannelID: "bar", ServiceName: "myService", State: "new", Message: notifDoc("title", "t")})
	emailID := addNotification(t, e, notify.Notification{Channel: "email", IsBroadcast: true, ServiceName: "myService", State: "sent"})

	t.Run("a SiteMinder user marking a broadcast read is added to readBy; the state stays", func(t *testing.T) {
		id := newBroadcast()
		e.Do(t, "PATCH", "/api/notifications/"+id, map[string]any{"serviceName": "myService", "state": "read"}, apitest.SMUser("bar")...).Expect(t, http.StatusNoContent)
		n := storedNotification(t, e, id)
		if !slices.Equal(n.ReadBy, []string{"bar"}) || n.State != "new" {
			t.Errorf("readBy %v state %q", n.ReadBy, n.State)
		}
		e.Do(t, "PATCH", "/api/notifications/"+id, map[string]any{"state": "read"}, apitest.SMUser("bar")...).Expect(t, http.StatusNoContent)
		if n := storedNotification(t, e, id); len(n.ReadBy) != 1 {
			t.Errorf("readBy after a second read %v", n.ReadBy)
		}
		e.Do(t, "PATCH", "/api/notifications/"+id, map[string]any{"state": "new"}, apitest.SMUser("bar")...).Expect(t, http.StatusNoContent)
		if n := storedNotification(t, e, id); len(n.ReadBy) != 0 {
			t.Errorf("readBy after marking unread %v", n.ReadBy)
		}
	})
	t.Run("users changing other fields change only the state", func(t *testing.T) {
		e.Do(t, "PATCH", "/api/notifications/"+mine, map[string]any{"state": "read", "message": map[string]any{"title": "hacked"}}, apitest.SMUser("bar")...).Expect(t, http.StatusNoContent)
		n := storedNotification(t, e, mine)
		if title, _ := n.Message.String("title"); n.State != "read" || title != "t" {
			t.Errorf("state %q title %q", n.State, title)
		}
	})
	t.Run("many users marking one broadcast read at once are all recorded", func(t *testing.T) {
		id := newBroadcast()
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.Do(t, "PATCH", "/api/notifications/"+id, map[string]any{"state": "read"}, apitest.SMUser(fmt.Sprintf("user%d", i))...).Expect(t, http.StatusNoContent)
			}()
		}
		wg.Wait()
		if n := storedNotification(t, e, id); len(n.ReadBy) != 12 {
			t.Errorf("readBy has %d of 12 users", len(n.ReadBy))
		}
	})
	t.Run("user PATCH refusals", func(t *testing.T) {
		id := newBroadcast()
		tests := []struct {
			name    string
			id      string
			body    map[string]any
			headers []string
			status  int
		}{
			{"anonymous callers are forbidden", id, map[string]any{"state": "read"}, apitest.Anonymous, http.StatusForbidden},
			{"a state is required", id, map[string]any{"serviceName": "x"}, apitest.SMUser("bar"), http.StatusBadRequest},
			{"only new, read and deleted are user states", id, map[string]any{"state": "sent"}, apitest.SMUser("bar"), http.StatusBadRequest},
			{"another user's notification is not found", mine, map[string]any{"state": "read"}, apitest.SMUser("qux"), http.StatusNotFound},
			{"a push notification is not the user's to change", emailID, map[string]any{"state": "read"}, apitest.SMUser("bar"), http.StatusNotFound},
			{"an unknown id is 404", notify.NewID().Hex(), map[string]any{"state": "read"}, apitest.SMUser("bar"), http.StatusNotFound},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				e.Do(t, "PATCH", "/api/notifications/"+tc.id, tc.body, tc.headers...).Expect(t, tc.status)
			})
		}
	})
	t.Run("an admin sets the state of a broadcast itself", func(t *testing.T) {
		id := newBroadcast()
		e.Do(t, "PATCH", "/api/notifications/"+id, map[string]any{"state": "deleted"}).Expect(t, http.StatusNoContent)
		if n := storedNotification(t, e, id); n.State != "deleted" {
			t.Errorf("state %q", n.State)
		}
	})
	t.Run("admin PATCH checks what it writes", func(t *testing.T) {
		id := newBroadcast()
		e.Do(t, "PATCH", "/api/notifications/"+id, map[string]any{"validTill": "2030-01-01"}).Expect(t, http.StatusBadRequest)
		e.Do(t, "PATCH", "/api/notifications/"+id, map[string]any{"broadcastPushNotificationSubscriptionFilter": "a === 'b'"}).Expect(t, http.StatusBadRequest)
		e.Do(t, "PATCH", "/api/notifications/"+id, map[string]any{"channel": "fax"}).Expect(t, http.StatusBadRequest)
		if n := storedNotification(t, e, id); n.Channel != "inApp" || !n.ValidTill.IsZero() || n.BroadcastPushNotificationSubscriptionFilter != "" {
			t.Errorf("a refused PATCH changed the record: %+v", n)
		}
		e.Do(t, "PATCH", "/api/notifications/"+notify.NewID().Hex(), map[string]any{"state": "read"}).Expect(t, http.StatusNotFound)
	})
	t.Run("a SiteMinder user deleting a broadcast is added to deletedBy and no longer sees it", func(t *testing.T) {
		id := newBroadcast()
		e.Do(t, "DELETE", "/api/notifications/"+id, nil, apitest.SMUser("bar")...).Expect(t, http.StatusNoContent)
		n := storedNotification(t, e, id)
		if !slices.Equal(n.DeletedBy, []string{"bar"}) || n.State != "new" {
			t.Errorf("deletedBy %v state %q", n.DeletedBy, n.State)
		}
		seen := func(user string) bool {
			return slices.ContainsFunc(list(t, e, "/api/notifications", apitest.SMUser(user)...), func(m map[string]any) bool { return m["id"] == id })
		}
		if seen("bar") || !seen("other") {
			t.Errorf("visible to bar: %v, to other: %v", seen("bar"), seen("other"))
		}
		e.Do(t, "GET", "/api/notifications/"+id, nil, apitest.SMUser("bar")...).Expect(t, http.StatusNotFound)
	})
	t.Run("an admin DELETE sets state deleted, keeps the record and hides it from users", func(t *testing.T) {
		id := newBroadcast()
		e.Do(t, "DELETE", "/api/notifications/"+id, nil).Expect(t, http.StatusNoContent)
		if n := storedNotification(t, e, id); n.State != "deleted" {
			t.Errorf("state %q", n.State)
		}
		if slices.ContainsFunc(list(t, e, "/api/notifications", apitest.SMUser("bar")...), func(m map[string]any) bool { return m["id"] == id }) {
			t.Error("a deleted notification is still listed for users")
		}
		e.Do(t, "GET", "/api/notifications/"+id, nil).Expect(t, http.StatusOK)
	})
	t.Run("a user deleting their own notification no longer sees it", func(t *testing.T) {
		id := addNotification(t, e, notify.Notification{Channel: "inApp", UserID: "dave", ServiceName: "myService", State: "new", Message: notifDoc("title", "t")})
		e.Do(t, "DELETE", "/api/notifications/"+id, nil, apitest.SMUser("dave")...).Expect(t, http.StatusNoContent)
		if n := storedNotification(t, e, id); n.State != "deleted" {
			t.Errorf("state %q", n.State)
		}
		var c map[string]float64
		e.Do(t, "GET", "/api/notifications/count?where="+q(`{"isBroadcast":false}`), nil, apitest.SMUser("dave")...).Expect(t, http.StatusOK).JSON(t, &c)
		if c["count"] != 0 {
			t.Errorf("count %v after deleting", c["count"])
		}
	})
	t.Run("DELETE refusals", func(t *testing.T) {
		id := newBroadcast()
		e.Do(t, "DELETE", "/api/notifications/"+id, nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "DELETE", "/api/notifications/"+notify.NewID().Hex(), nil).Expect(t, http.StatusNotFound)
		e.Do(t, "DELETE", "/api/notifications/"+mine, nil, apitest.SMUser("qux")...).Expect(t, http.StatusNotFound)
	})
}

func TestNotificationPut(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar@foo.com", UserID: "bar"})
	id := addNotification(t, e, notify.Notification{Channel: "email", ServiceName: "myService", UserChannelID: "bar@foo.com", State: "new", InvalidBefore: time.Now().Add(time.Hour), Message: notifDoc("from", "no_reply@invalid.local", "textBody", "old")})
	t.Run("an admin replaces a notification and it is sent", func(t *testing.T) {
		e.Do(t, "PUT", "/api/notifications/"+id, map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "BAR@foo.com", "message": emailMsg("replaced")}).Expect(t, http.StatusNoContent)
		m := e.WaitMail(t, 1)[0]
		if !strings.Contains(m.Text, "replaced") {
			t.Errorf("text %q", m.Text)
		}
		n := storedNotification(t, e, id)
		if n.State != "sent" || !n.InvalidBefore.IsZero() || n.Created.IsZero() {
			t.Errorf("stored %+v", n)
		}
	})
	t.Run("PUT refusals", func(t *testing.T) {
		body := map[string]any{"serviceName": "myService", "channel": "inApp", "isBroadcast": true}
		e.Do(t, "PUT", "/api/notifications/"+id, body, apitest.SMUser("bar")...).Expect(t, http.StatusForbidden)
		e.Do(t, "PUT", "/api/notifications/"+id, body, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "PUT", "/api/notifications/"+notify.NewID().Hex(), body).Expect(t, http.StatusNotFound)
		e.Do(t, "PUT", "/api/notifications/"+id, map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "broadcastPushNotificationSubscriptionFilter": "a === 'b'"}).Expect(t, http.StatusBadRequest)
		e.Do(t, "PUT", "/api/notifications/"+id, map[string]any{"serviceName": "myService", "channel": "email", "userChannelId": "stranger@foo.com"}).Expect(t, http.StatusForbidden)
		if n := storedNotification(t, e, id); n.State != "sent" {
			t.Errorf("a refused PUT changed the record: %+v", n)
		}
	})
}

// startWithTwilio starts a service whose SMS provider is Twilio, its API
// host answered by a loopback fake (apitest's services use Swift).
func startWithTwilio(t *testing.T, fakeURL string) *apitest.Env {
	t.Helper()
	trees := []map[string]any{apitest.TestConfig(), {"sms": map[string]any{
		"provider":         "twilio",
		"providerSettings": map[string]any{"twilio": map[string]any{"accountSid": "AC0001", "authToken": "secret", "fromNumber": "+15559999"}},
	}}}
	cfg, err := config.New(trees...)
	if err != nil {
		t.Fatal(err)
	}
	settings, _ := cfg.Get("sms.providerSettings").(map[string]any)
	ss, _, err := provider.New(cfg.SMS.Provider, settings, &http.Client{Transport: redirectTransport{fakeURL}, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	app, err := httpapi.OpenApp(ctx, httpapi.AppOptions{
		Config:  cfg,
		DataDir: t.TempDir(),
		Channel: &channel.Sender{SMS: ss},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		RSABits: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Server)
	t.Cleanup(func() {
		srv.Close()
		_ = app.Close(context.Background())
	})
	return &apitest.Env{URL: srv.URL, App: app, Config: cfg, Store: app.Store, Mail: mailcatcher.New(mailcatcher.Options{}), Client: &http.Client{Timeout: 30 * time.Second}}
}

// notifDoc builds a document from alternating keys and values.
func notifDoc(kv ...any) notify.Fields {
	f := make(notify.Fields, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		f = append(f, notify.Field{Key: kv[i].(string), Value: kv[i+1]})
	}
	return f
}

func TestNotificationPutBroadcast(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	first := addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "first@foo.com"})
	body := map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x")}
	r := e.Do(t, "POST", "/api/notifications", body).Expect(t, http.StatusOK).Map(t)
	id := r["id"].(string)
	e.WaitMail(t, 1)
	late := addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "late@foo.com"})

	t.Run("PUT carrying dispatch as GET shows it resumes: nobody recorded gets mail again", func(t *testing.T) {
		got := e.Do(t, "GET", "/api/notifications/"+id, nil).Expect(t, http.StatusOK).Map(t)
		resend := map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true, "message": emailMsg("x"), "dispatch": got["dispatch"]}
		e.Do(t, "PUT", "/api/notifications/"+id, resend).Expect(t, http.StatusNoContent)
		if n := len(mailTo(e, "first@foo.com")); n != 1 {
			t.Errorf("first@foo.com got %d mails, want 1", n)
		}
		if n := len(mailTo(e, "late@foo.com")); n != 0 {
			t.Errorf("a subscriber who was no candidate got %d mails", n)
		}
		if st := storedNotification(t, e, id).State; st != "sent" {
			t.Errorf("state %q", st)
		}
	})
	t.Run("PUT without dispatch sends the replaced notification afresh", func(t *testing.T) {
		e.Do(t, "PUT", "/api/notifications/"+id, body).Expect(t, http.StatusNoContent)
		if len(mailTo(e, "first@foo.com")) != 2 || len(mailTo(e, "late@foo.com")) != 1 {
			t.Errorf("mails: first %d, late %d", len(mailTo(e, "first@foo.com")), len(mailTo(e, "late@foo.com")))
		}
		d := storedNotification(t, e, id).Dispatch
		got := slices.Clone(d.Successful)
		slices.Sort(got)
		want := []string{first, late}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("successful %v, want %v", got, want)
		}
	})
}

// TestListShowsLargeBroadcastsByTheirCounts: a list of notifications shows
// a broadcast to more subscribers than listDispatchMax by its counts only
// (its lists are the single record's), so that a page of large
// broadcasts reads counts, not every result; a small one keeps its lists.
func TestListShowsLargeBroadcastsByTheirCounts(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	ctx := context.Background()
	const big = 1001
	subs := make([]*notify.Subscription, big)
	for i := range subs {
		subs[i] = &notify.Subscription{ServiceName: "big", Channel: notify.ChannelEmail, State: notify.StateConfirmed, UserChannelID: fmt.Sprintf("reader%d@example.org", i)}
	}
	if err := e.Store.Subscriptions().InsertMany(ctx, subs); err != nil {
		t.Fatal(err)
	}
	smallID := addSub(t, e, notify.Subscription{ServiceName: "small", UserChannelID: "one@example.org"})
	send := func(service string) string {
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": service, "channel": "email", "isBroadcast": true, "message": emailMsg("hello")}).Expect(t, http.StatusOK).Map(t)
		if r["state"] != "sent" {
			t.Fatalf("%s broadcast: %v", service, r["state"])
		}
		return r["id"].(string)
	}
	bigID, smallNote := send("big"), send("small")
	var list []map[string]any
	e.Do(t, "GET", "/api/notifications?filter="+url.QueryEscape(`{"order":[["created","desc"]]}`), nil).Expect(t, http.StatusOK).JSON(t, &list)
	byID := map[string]map[string]any{}
	for _, n := range list {
		byID[n["id"].(string)] = n
	}
	d := dispatchOf(t, byID[bigID])
	if c, _ := d["counts"].(map[string]any); c["candidates"] != float64(big) || c["successful"] != float64(big) {
		t.Errorf("large broadcast's counts in the list: %v", d["counts"])
	}
	if len(strs(d["candidates"])) != 0 || len(strs(d["successful"])) != 0 {
		t.Errorf("large broadcast's lists in the list: %d candidates, %d successful", len(strs(d["candidates"])), len(strs(d["successful"])))
	}
	if got := strs(dispatchOf(t, byID[smallNote])["successful"]); !slices.Equal(got, []string{smallID}) {
		t.Errorf("small broadcast's lists in the list: %v", got)
	}
	one := e.Do(t, "GET", "/api/notifications/"+bigID, nil).Expect(t, http.StatusOK).Map(t)
	if got := len(strs(dispatchOf(t, one)["successful"])); got != big {
		t.Errorf("the large broadcast's own record lists %d successful, want %d", got, big)
	}
}
