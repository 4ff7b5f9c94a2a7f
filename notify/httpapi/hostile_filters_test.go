package httpapi_test

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// These tests replay, over HTTP against the real service, the attacks a
// hostile review of the notification service found (issue 9), and check
// what must hold instead.

var codeInMail = regexp.MustCompile(`\b\d{5}\b`)

// anonymousSubscriber subscribes addr to service as an anonymous caller,
// reads the confirmation code from the mail the service sent, and verifies
// the subscription: a confirmed subscription as an attacker with a mailbox
// gets one. extra fields go into the subscription body.
func anonymousSubscriber(t *testing.T, e *apitest.Env, service, addr string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"serviceName": service, "channel": "email", "userChannelId": addr}
	for k, v := range extra {
		body[k] = v
	}
	id := e.Do(t, "POST", "/api/subscriptions", body, apitest.Anonymous...).Expect(t, http.StatusOK).Map(t)["id"].(string)
	var code string
	deadline := time.Now().Add(20 * time.Second)
	for code == "" {
		for _, m := range mailTo(e, addr) {
			if c := codeInMail.FindString(m.Text); c != "" {
				code = c
			}
		}
		if code == "" {
			if time.Now().After(deadline) {
				t.Fatalf("no confirmation mail for %s", addr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	e.Do(t, "GET", "/api/subscriptions/"+id+"/verify?confirmationCode="+code, nil, apitest.Anonymous...).Expect(t, http.StatusOK)
	return id
}

// Finding 1: a filter is bounded in time and memory: refused when written
// if it cannot be evaluated within bounds, and "no match" at run time when
// it goes over its budget, without stopping the broadcast or the process.
func TestHostileFilterExpressions(t *testing.T) {
	spin := `module.exports = {notification: {broadcastCustomFilterFunctions: {
  spin: {_func: function (args) { for (;;) {} }, _signature: [{types: [2]}]},
  huge: {_func: function (args) { var a = []; for (var i = 0; i < 300000; i++) a.push('xxxxxxxxxx'); return a; }, _signature: [{types: [2]}]},
}}};`
	var log syncBuffer
	e := apitest.Start(t, apitest.Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), Config: []map[string]any{{"notification": map[string]any{
		"broadcastCustomFilterFunctions": jsFunctions(t, spin),
	}}}})

	t.Run("impossible literals and deep nesting are refused when written, naming the field", func(t *testing.T) {
		for _, f := range []string{
			"pad_left('x', `1000000000000`) == 'y'",
			"pad_right('x', `1e12`) == 'y'",
			"pad_left(name, `100000000`)",
			strings.Repeat("(", 300) + "a" + strings.Repeat(")", 300),
			strings.Repeat("!", 500) + "a",
			"a" + strings.Repeat(".a", 1000),
		} {
			r := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "email", "userChannelId": "x@invalid.local", "broadcastPushNotificationFilter": f}, apitest.Anonymous...)
			r.Expect(t, http.StatusBadRequest)
			if m := r.Map(t)["message"].(string); !strings.Contains(m, "broadcastPushNotificationFilter") {
				t.Errorf("filter %.40q: message %q does not name the field", f, m)
			}
		}
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "s", "channel": "email", "isBroadcast": true, "message": emailMsg("x"),
			"broadcastPushNotificationSubscriptionFilter": "pad_left('x', `1000000000000`) == 'y'"})
		r.Expect(t, http.StatusBadRequest)
		if m := r.Map(t)["message"].(string); !strings.Contains(m, "broadcastPushNotificationSubscriptionFilter") {
			t.Errorf("message %q does not name the field", m)
		}
	})

	t.Run("a subscription filter that blows up at run time does not match, and everyone else still gets the broadcast", func(t *testing.T) {
		bomb := anonymousSubscriber(t, e, "bombed", "bomb@invalid.local", map[string]any{"broadcastPushNotificationFilter": "pad_left('x', w) == 'y'"})
		// "w > 1 &&" keeps these from doing their damage without data,
		// where the write-time trial run would refuse them.
		doubling := "w > `1` && length(" + strings.Repeat("[@,@][] | ", 40) + "@) > `0`"
		dag := anonymousSubscriber(t, e, "bombed", "dag@invalid.local", map[string]any{"broadcastPushNotificationFilter": doubling})
		nested := "w > `1` && to_string(" + strings.Repeat("[@,@] | ", 40) + "@) == 'x'"
		str := anonymousSubscriber(t, e, "bombed", "str@invalid.local", map[string]any{"broadcastPushNotificationFilter": nested})
		spun := anonymousSubscriber(t, e, "bombed", "spin@invalid.local", map[string]any{"broadcastPushNotificationFilter": "spin('x')"})
		big := anonymousSubscriber(t, e, "bombed", "huge@invalid.local", map[string]any{"broadcastPushNotificationFilter": "length(huge('x')) > `0`"})
		good := anonymousSubscriber(t, e, "bombed", "good@invalid.local", map[string]any{"broadcastPushNotificationFilter": "w > `1`"})
		plain := anonymousSubscriber(t, e, "bombed", "plain@invalid.local", nil)

		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "bombed", "channel": "email", "isBroadcast": true,
			"message": emailMsg("hello"), "data": map[string]any{"w": 1e12}}).Expect(t, http.StatusOK).Map(t)
		if r["state"] != "sent" {
			t.Fatalf("broadcast state %v", r["state"])
		}
		d := dispatchOf(t, r)
		ok := strs(d["successful"])
		slices.Sort(ok)
		want := []string{good, plain}
		slices.Sort(want)
		if !slices.Equal(ok, want) {
			t.Errorf("successful %v, want %v", ok, want)
		}
		for _, id := range []string{bomb, dag, str, spun, big} {
			if slices.Contains(ok, id) {
				t.Errorf("subscription %s with a filter over budget got the broadcast", id)
			}
		}
		if len(mailTo(e, "good@invalid.local")) != 2 || len(mailTo(e, "plain@invalid.local")) != 2 {
			t.Error("the well-behaved subscribers did not get the broadcast")
		}
		for _, id := range []string{bomb, dag, str, spun, big} {
			if n := strings.Count(log.String(), "subscription="+id); n != 1 {
				t.Errorf("subscription %s is named %d times in the log, want once with the notification id", id, n)
			}
		}
		if !strings.Contains(log.String(), "notification="+r["id"].(string)) {
			t.Error("the log does not name the notification")
		}
	})

	t.Run("a notification filter over budget on one subscriber's data skips that subscriber only", func(t *testing.T) {
		bomb := anonymousSubscriber(t, e, "bydata", "d1@invalid.local", map[string]any{"data": map[string]any{"w": 1e12}})
		fine := anonymousSubscriber(t, e, "bydata", "d2@invalid.local", map[string]any{"data": map[string]any{"w": 3}})
		r := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "bydata", "channel": "email", "isBroadcast": true,
			"message": emailMsg("hello"), "broadcastPushNotificationSubscriptionFilter": "length(pad_left('x', w)) > `1`"}).Expect(t, http.StatusOK).Map(t)
		if ok := strs(dispatchOf(t, r)["successful"]); !slices.Equal(ok, []string{fine}) || slices.Contains(ok, bomb) {
			t.Errorf("successful %v, want [%s]", ok, fine)
		}
	})
}

// jsFunctions loads notification.broadcastCustomFilterFunctions from a
// config.local.js file holding js, as a deployment writes it.
func jsFunctions(t *testing.T, js string) map[string]any {
	t.Helper()
	dir := t.TempDir()
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
