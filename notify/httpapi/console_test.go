package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

func TestConsoleRoles(t *testing.T) {
	a := newAdminEnv(t)
	preview := map[string]any{"notification": map[string]any{"serviceName": "s", "channel": "email", "message": emailMsg("x")}, "subscriptionId": "000000000000000000000000"}
	for _, c := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"anonymous", apitest.Anonymous, http.StatusForbidden},
		{"an authenticated user", apitest.SMUser("bob"), http.StatusForbidden},
		{"an access-token admin", apitest.Token(a.tok), http.StatusOK},
		{"super admin", apitest.SuperAdmin, http.StatusOK},
	} {
		t.Run("stats and preview for "+c.name, func(t *testing.T) {
			r := a.Do(t, "GET", "/api/console/stats", nil, c.headers...).Expect(t, c.status)
			pr := a.Do(t, "POST", "/api/console/preview", preview, c.headers...)
			if c.status == http.StatusForbidden {
				if m := r.Map(t); m["statusCode"] != 403.0 || m["message"] != "Forbidden resource" {
					t.Errorf("stats refusal %v", m)
				}
				pr.Expect(t, http.StatusForbidden)
				return
			}
			pr.Expect(t, http.StatusNotFound) // admitted: the subscription is unknown
		})
	}
	t.Run("whoami gives an access-token holder the role Admin", func(t *testing.T) {
		if m := whoami(t, a.Env, apitest.Token(a.tok)...); m["role"] != "Admin" || m["authnStrategy"] != "accessToken" {
			t.Fatalf("got %v", m)
		}
	})
}

func TestConsoleStats(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"email": map[string]any{"throttle": map[string]any{"enabled": true, "max": 5.0, "duration": 1000.0}}}}})
	for i := range 3 {
		addSub(t, e, notify.Subscription{ServiceName: "alpha", UserChannelID: "a" + string(rune('0'+i)) + "@invalid.local"})
	}
	addSub(t, e, notify.Subscription{ServiceName: "alpha", State: notify.StateUnconfirmed, UserChannelID: "u@invalid.local"})
	addSub(t, e, notify.Subscription{ServiceName: "beta", Channel: notify.ChannelSMS, UserChannelID: "12345"})
	seed(t, e, "/api/bounces", map[string]any{"channel": "email", "userChannelId": "b1@invalid.local"})
	seed(t, e, "/api/bounces", map[string]any{"channel": "email", "userChannelId": "b2@invalid.local", "state": "deleted"})
	bc := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "alpha", "channel": "email", "isBroadcast": true, "message": emailMsg("hi")}).Expect(t, http.StatusOK).Map(t)
	// an in-app broadcast sends nothing and is not listed
	e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "alpha", "isBroadcast": true, "message": map[string]any{"body": "x"}}).Expect(t, http.StatusOK)

	var st struct {
		Subscriptions []struct {
			ServiceName, Channel, State string
			Count                       int64
		}
		SubscriptionsTruncated bool
		Broadcasts             []struct {
			ID, ServiceName, Channel, State string
			Created, Updated                time.Time
			Counts                          struct{ Sent, Failed, Skipped, Remaining int64 }
			PerSecond                       float64
		}
		Queue struct {
			Known, Pending, Active, Delayed int64
			Embedded                        bool
		}
		Throttle map[string]struct {
			Enabled       bool
			Max, Duration int
		}
		Bounces []struct {
			State string
			Count int64
		}
		Generated       time.Time
		CountsGenerated *time.Time
		CountsPending   bool
	}
	// The counts are made in the background; a small store has them by
	// the first answer, unless the machine is very busy. The deadline only
	// guards against a hang.
	deadline := time.Now().Add(30 * time.Second)
	for {
		e.Do(t, "GET", "/api/console/stats", nil).Expect(t, http.StatusOK).JSON(t, &st)
		if !st.CountsPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the counts never came")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.CountsGenerated == nil || st.CountsGenerated.After(st.Generated) {
		t.Errorf("counts generated %v, answer generated %v", st.CountsGenerated, st.Generated)
	}
	t.Run("subscriptions are counted by service, channel and state, largest first", func(t *testing.T) {
		got := map[string]int64{}
		for _, g := range st.Subscriptions {
			got[g.ServiceName+"/"+g.Channel+"/"+g.State] = g.Count
		}
		want := map[string]int64{"alpha/email/confirmed": 3, "alpha/email/unconfirmed": 1, "beta/sms/confirmed": 1}
		if len(got) != len(want) || st.SubscriptionsTruncated {
			t.Fatalf("groups %v (truncated %v)", st.Subscriptions, st.SubscriptionsTruncated)
		}
		for k, n := range want {
			if got[k] != n {
				t.Errorf("%s: %d, want %d", k, got[k], n)
			}
		}
		if st.Subscriptions[0].Count != 3 {
			t.Errorf("first group %v", st.Subscriptions[0])
		}
	})
	t.Run("the finished broadcast is listed with its counts", func(t *testing.T) {
		if len(st.Broadcasts) != 1 {
			t.Fatalf("broadcasts %+v", st.Broadcasts)
		}
		b := st.Broadcasts[0]
		if b.ID != bc["id"] || b.ServiceName != "alpha" || b.Channel != "email" || b.State != "sent" || b.Counts.Sent != 3 || b.Counts.Failed != 0 || b.Counts.Remaining != 0 || b.Created.IsZero() {
			t.Errorf("broadcast %+v", b)
		}
		if b.PerSecond <= 0 {
			t.Errorf("perSecond %v", b.PerSecond)
		}
	})
	t.Run("queue, throttles and bounces", func(t *testing.T) {
		if !st.Queue.Embedded || st.Queue.Known != 0 {
			t.Errorf("queue %+v", st.Queue)
		}
		if th := st.Throttle["email"]; !th.Enabled || th.Max != 5 || th.Duration != 1000 {
			t.Errorf("email throttle %+v", th)
		}
		// the original's default: 4 a second
		if th := st.Throttle["sms"]; !th.Enabled || th.Max != 4 || th.Duration != 1000 {
			t.Errorf("sms throttle %+v", th)
		}
		got := map[string]int64{}
		for _, b := range st.Bounces {
			got[b.State] = b.Count
		}
		if got["active"] != 1 || got["deleted"] != 1 {
			t.Errorf("bounces %+v", st.Bounces)
		}
		if st.Generated.IsZero() {
			t.Error("no generated date")
		}
	})
	t.Run("the document describes the route", func(t *testing.T) {
		doc := e.Do(t, "GET", "/api/explorer-json", nil).Expect(t, http.StatusOK).Map(t)
		paths, _ := doc["paths"].(map[string]any)
		op, _ := paths["/api/console/stats"].(map[string]any)
		if op["get"] == nil {
			t.Fatalf("no /api/console/stats in %v", paths)
		}
		schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
		for _, name := range []string{"ConsoleStats", "ConsolePreviewRequest", "ConsolePreview"} {
			if schemas[name] == nil {
				t.Errorf("no schema %s", name)
			}
		}
	})
}

func TestConsolePreview(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	mailID := addSub(t, e, notify.Subscription{ServiceName: "myService", UserChannelID: "bar@invalid.local", UserID: "bar",
		ConfirmationRequest: notifDoc("confirmationCode", "12345"), UnsubscriptionCode: "54321", Data: notifDoc("gender", "male")})
	smsID := addSub(t, e, notify.Subscription{ServiceName: "myService", Channel: notify.ChannelSMS, UserChannelID: "250-555-0100", UnsubscriptionCode: "777", Data: notifDoc("name", "Kim")})
	otherID := addSub(t, e, notify.Subscription{ServiceName: "otherService", UserChannelID: "x@invalid.local"})
	tmpl := "{confirmation_code} {service_name} {http_host} {rest_api_root} {subscription_id} {unsubscription_code} {unsubscription_url} {notification::1} {subscription::gender}"
	before := len(e.Mail.Mails())

	t.Run("an email is merged for the subscriber as the sender merges it", func(t *testing.T) {
		m := e.Do(t, "POST", "/api/console/preview", map[string]any{
			"notification": map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": true,
				"message": map[string]any{"from": "no_reply@invalid.local", "subject": "hello {subscription::gender}", "textBody": tmpl, "htmlBody": "<p>" + tmpl + "</p>"},
				"data":    map[string]any{"1": "foo"}},
			"subscriptionId": mailID,
		}).Expect(t, http.StatusOK).Map(t)
		unsub := e.URL + "/api/subscriptions/" + mailID + "/unsubscribe?unsubscriptionCode=54321"
		want := "12345 myService " + e.URL + " /api " + mailID + " 54321 " + unsub + " foo male"
		if m["channel"] != "email" || m["to"] != "bar@invalid.local" || m["from"] != "no_reply@invalid.local" || m["subject"] != "hello male" || m["textBody"] != want || m["htmlBody"] != "<p>"+want+"</p>" {
			t.Errorf("preview %v\nwant text %q", m, want)
		}
	})
	t.Run("an sms has a text body only", func(t *testing.T) {
		m := e.Do(t, "POST", "/api/console/preview", map[string]any{
			"notification":   map[string]any{"serviceName": "myService", "channel": "sms", "message": map[string]any{"textBody": "Hi {subscription::name}, code {unsubscription_code}"}},
			"subscriptionId": smsID,
		}).Expect(t, http.StatusOK).Map(t)
		if m["channel"] != "sms" || m["to"] != "250-555-0100" || m["textBody"] != "Hi Kim, code 777" {
			t.Errorf("preview %v", m)
		}
		for _, k := range []string{"subject", "htmlBody", "from"} {
			if _, ok := m[k]; ok {
				t.Errorf("sms preview has %s: %v", k, m)
			}
		}
	})
	t.Run("nothing is sent or stored", func(t *testing.T) {
		if n := len(e.Mail.Mails()); n != before {
			t.Errorf("%d mails sent", n-before)
		}
		if n := len(e.SMS.Requests()); n != 0 {
			t.Errorf("%d sms sent", n)
		}
		if n := countNotifications(t, e); n != 0 {
			t.Errorf("%d notifications stored", n)
		}
	})
	msg := map[string]any{"serviceName": "myService", "channel": "email", "message": emailMsg("x")}
	for _, c := range []struct {
		name   string
		body   any
		status int
		words  string
	}{
		{"a body that is not an object", `[1]`, 400, "JSON object"},
		{"no notification", map[string]any{"subscriptionId": mailID}, 400, "notification is required"},
		{"a notification that is not an object", map[string]any{"notification": "x", "subscriptionId": mailID}, 400, "notification must be an object"},
		{"no subscriptionId", map[string]any{"notification": msg}, 400, "subscriptionId"},
		{"a subscriptionId that is not a string", map[string]any{"notification": msg, "subscriptionId": 5}, 400, "subscriptionId"},
		{"an unknown field", map[string]any{"notification": msg, "subscriptionId": mailID, "send": true}, 400, "send"},
		{"no serviceName", map[string]any{"notification": map[string]any{"channel": "email"}, "subscriptionId": mailID}, 400, "serviceName"},
		{"a bad channel", map[string]any{"notification": map[string]any{"serviceName": "myService", "channel": "fax"}, "subscriptionId": mailID}, 400, "channel"},
		{"an in-app notification", map[string]any{"notification": map[string]any{"serviceName": "myService", "channel": "inApp"}, "subscriptionId": mailID}, 400, "channel"},
		{"a bad field type", map[string]any{"notification": map[string]any{"serviceName": "myService", "channel": "email", "isBroadcast": "yes"}, "subscriptionId": mailID}, 400, "isBroadcast"},
		{"an unknown subscription", map[string]any{"notification": msg, "subscriptionId": "000000000000000000000000"}, 404, ""},
		{"a malformed subscription id", map[string]any{"notification": msg, "subscriptionId": "nope"}, 404, ""},
		{"another service's subscriber", map[string]any{"notification": msg, "subscriptionId": otherID}, 400, "subscriptionId"},
		{"a subscriber of another channel", map[string]any{"notification": msg, "subscriptionId": smsID}, 400, "subscriptionId"},
	} {
		t.Run("refused: "+c.name, func(t *testing.T) {
			m := e.Do(t, "POST", "/api/console/preview", c.body).Expect(t, c.status).Map(t)
			if msg, _ := m["message"].(string); !strings.Contains(msg, c.words) || m["statusCode"] != float64(c.status) {
				t.Errorf("answer %v, want a message naming %q", m, c.words)
			}
		})
	}
}

// gate is an SMS gateway (Swift's API) that answers at once, except for
// the numbers held, which wait until released.
type gate struct {
	mu      sync.Mutex
	held    map[string]chan struct{}
	arrived chan string
}

func newGate(t *testing.T, held ...string) (*gate, string) {
	g := &gate{held: map[string]chan struct{}{}, arrived: make(chan string, 16)}
	for _, n := range held {
		g.held[n] = make(chan struct{})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		g.mu.Lock()
		ch := g.held[n]
		g.mu.Unlock()
		if ch != nil {
			g.arrived <- n
			select {
			case <-ch:
			case <-r.Context().Done():
			}
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.releaseAll)
	return g, srv.URL + "/"
}

func (g *gate) releaseAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for n, ch := range g.held {
		close(ch)
		delete(g.held, n)
	}
}

func TestConsoleBroadcastProgress(t *testing.T) {
	g, url := newGate(t, "3")
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{
		"notification": map[string]any{"broadcastSubscriberChunkSize": 1.0},
		"sms":          map[string]any{"providerSettings": map[string]any{"swift": map[string]any{"apiUrlPrefix": url}}},
	}}})
	for _, n := range []string{"1", "2", "3"} {
		addSub(t, e, notify.Subscription{ServiceName: "s", Channel: notify.ChannelSMS, UserChannelID: n})
	}
	n := e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "s", "channel": "sms", "isBroadcast": true,
		"asyncBroadcastPushNotification": true, "message": map[string]any{"textBody": "hi"}}).Expect(t, http.StatusOK).Map(t)
	id := n["id"].(string)
	select {
	case <-g.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("the held send never started")
	}
	type counts struct{ Candidates, Pending, Successful, Failed, Skipped int64 }
	read := func(filter string) (string, counts, map[string]any) {
		var got struct {
			State    string
			Dispatch map[string]any
		}
		path := "/api/notifications/" + id
		if filter != "" {
			path += "?filter=" + q(filter)
		}
		e.Do(t, "GET", path, nil).Expect(t, http.StatusOK).JSON(t, &got)
		var c counts
		if cm, ok := got.Dispatch["counts"].(map[string]any); ok {
			num := func(k string) int64 { f, _ := cm[k].(float64); return int64(f) }
			c = counts{num("candidates"), num("pending"), num("successful"), num("failed"), num("skipped")}
		}
		return got.State, c, got.Dispatch
	}
	// waitFor polls until cond holds; the deadline only guards against a hang.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("never: %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	countsOnly := `{"fields":{"id":true,"state":true,"dispatch.counts":true}}`
	t.Run("while the broadcast runs, dispatch.counts shows sent and remaining", func(t *testing.T) {
		var state string
		var c counts
		waitFor("two sent, one remaining", func() bool {
			state, c, _ = read(countsOnly)
			return c.Successful == 2
		})
		if state != "sending" || c.Candidates != 3 || c.Pending != 1 || c.Failed != 0 {
			t.Errorf("state %s counts %+v", state, c)
		}
	})
	t.Run("asked for dispatch.counts alone, dispatch holds counts only; the full read agrees", func(t *testing.T) {
		_, c, d := read(countsOnly)
		if len(d) != 1 {
			t.Errorf("dispatch %v", d)
		}
		_, full, fd := read("")
		if full != c || len(strs(fd["candidates"])) != 3 {
			t.Errorf("full read %+v %v, counts-only %+v", full, fd, c)
		}
	})
	t.Run("the dashboard shows the broadcast running", func(t *testing.T) {
		var st struct {
			Broadcasts []struct {
				ID, State string
				Counts    struct{ Sent, Failed, Skipped, Remaining int64 }
			}
		}
		e.Do(t, "GET", "/api/console/stats", nil).Expect(t, http.StatusOK).JSON(t, &st)
		if len(st.Broadcasts) != 1 || st.Broadcasts[0].ID != id || st.Broadcasts[0].State != "sending" || st.Broadcasts[0].Counts.Sent != 2 || st.Broadcasts[0].Counts.Remaining != 1 {
			t.Errorf("broadcasts %+v", st.Broadcasts)
		}
	})
	g.releaseAll()
	t.Run("when it ends, nothing remains", func(t *testing.T) {
		var state string
		var c counts
		waitFor("state sent", func() bool {
			state, c, _ = read(countsOnly)
			return state == "sent"
		})
		if c != (counts{Candidates: 3, Successful: 3}) {
			t.Errorf("counts %+v", c)
		}
	})
}

func TestConsoleSettings(t *testing.T) {
	t.Run("without oidc the console gets the API prefix only", func(t *testing.T) {
		e := apitest.Start(t, apitest.Options{})
		api, authority, client := e.App.Server.ConsoleSettings()
		if api != "/api" || authority != "" || client != "" {
			t.Errorf("got %q %q %q", api, authority, client)
		}
	})
	t.Run("with oidc the authority is the discovery URL without its well-known path", func(t *testing.T) {
		e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"restApiRoot": "/notify/api/", "oidc": map[string]any{
			"discoveryUrl": "https://idp.invalid/realms/gov/.well-known/openid-configuration", "clientId": "notify-console"}}}})
		api, authority, client := e.App.Server.ConsoleSettings()
		if api != "/notify/api" || authority != "https://idp.invalid/realms/gov" || client != "notify-console" {
			t.Errorf("got %q %q %q", api, authority, client)
		}
	})
}
