package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/cron"
	"github.com/govkit/govkit/notify/httpapi"
	"github.com/govkit/govkit/notify/httpapi/apitest"
	"github.com/govkit/govkit/notify/outbound"
)

// outside is a server a configured URL names — a feed host or a callback
// receiver — on a loopback address of its own (127.0.0.2; Linux routes
// all of 127/8 to the loopback interface), so that admitting it admits
// nothing of the service's own 127.0.0.1. It records what it is asked.
type outside struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string // "METHOD path body"
}

func listenOutside(t *testing.T, h http.HandlerFunc) *outside {
	t.Helper()
	o := &outside{}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		o.mu.Lock()
		o.reqs = append(o.reqs, r.Method+" "+r.URL.Path+" "+string(b))
		o.mu.Unlock()
		h(w, r)
	})}}
	o.Start()
	t.Cleanup(o.Close)
	return o
}

func (o *outside) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.reqs...)
}

// unsubscribeAll is the URL that unsubscribes id from every service when
// a super admin asks: what a hostile feed or receiver points notify at.
func unsubscribeAll(e *apitest.Env, id string) string {
	return e.URL + "/api/subscriptions/" + id + "/unsubscribe?additionalServices=_all"
}

func redirect(to string, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, code) }
}

func subscriptionState(t *testing.T, e *apitest.Env, id string) string {
	t.Helper()
	s, err := e.Store.Subscriptions().FindByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s.State
}

// startWithCron starts a service whose cron runs on a clock that never
// moves: the test polls feeds itself, through the service's own fetcher.
func startWithCron(t *testing.T, allow ...any) *apitest.Env {
	t.Helper()
	return apitest.Start(t, apitest.Options{
		Config: []map[string]any{{"outboundRequests": map[string]any{"allow": allow}}},
		Cron:   &httpapi.CronOptions{Clock: cron.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))},
	})
}

// pollFeed configures url as the feed of service svc and polls it once.
func pollFeed(t *testing.T, e *apitest.Env, url string) (int, error) {
	t.Helper()
	c := e.Do(t, "POST", "/api/configurations", map[string]any{"name": "notification", "serviceName": "svc", "value": map[string]any{
		"rss":              map[string]any{"url": url, "timeSpec": "0 0 1 1 0"},
		"messageTemplates": map[string]any{"email": map[string]any{"from": "no_reply@invalid.local", "subject": "{title}", "textBody": "{link}"}},
	}}).Expect(t, http.StatusOK).Map(t)
	conf, err := e.Store.Configurations().FindByID(context.Background(), c["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Do(t, "DELETE", "/api/configurations/"+c["id"].(string), nil)
	return e.App.Cron().PollFeed(context.Background(), conf)
}

const oneItemFeed = `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><title>Closed</title><link>http://x/1</link><guid>1</guid></item></channel></rss>`

func TestAFeedCannotRedirectTheServiceIntoItsOwnAdminAddress(t *testing.T) {
	e := startWithCron(t, "127.0.0.2")
	victim := addSub(t, e, notify.Subscription{ServiceName: "roads", UserChannelID: "victim@example.org", UnsubscriptionCode: "12345"})
	addSub(t, e, notify.Subscription{ServiceName: "parks", UserChannelID: "victim@example.org", UnsubscriptionCode: "12345"})
	host := listenOutside(t, redirect(unsubscribeAll(e, victim), http.StatusFound))

	_, err := pollFeed(t, e, host.URL+"/rss")
	if s := subscriptionState(t, e, victim); s != notify.StateConfirmed {
		t.Fatalf("the victim is %s after the poll", s)
	}
	if !errors.Is(err, outbound.ErrRefused) {
		t.Fatalf("poll: %v, want the redirect refused", err)
	}
	t.Run("the admitted feed host is read", func(t *testing.T) {
		feed := listenOutside(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, oneItemFeed) })
		if n, err := pollFeed(t, e, feed.URL+"/rss"); err != nil || n != 1 {
			t.Fatalf("created %d notifications, %v", n, err)
		}
	})
}

func TestTheServicesOwnRequestsNeverArriveAsAnAdmin(t *testing.T) {
	// Loopback admitted, as `govkit dev` does: the service's own address
	// can be reached, and is still not super admin to its own requests.
	e := startWithCron(t, "127.0.0.1")
	victim := addSub(t, e, notify.Subscription{ServiceName: "roads", UserChannelID: "victim@example.org", UnsubscriptionCode: "12345"})
	if _, err := pollFeed(t, e, unsubscribeAll(e, victim)); err == nil {
		t.Fatal("the unsubscribe page was read as a feed")
	}
	if s := subscriptionState(t, e, victim); s != notify.StateConfirmed {
		t.Fatalf("the victim is %s after the service fetched its unsubscribe URL", s)
	}
	t.Run("a callback posted to the one-click unsubscribe URL is anonymous", func(t *testing.T) {
		var logs syncBuffer
		e := apitest.Start(t, apitest.Options{
			Config: []map[string]any{{"outboundRequests": map[string]any{"allow": []any{"127.0.0.1"}}}},
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		})
		victim := addSub(t, e, notify.Subscription{ServiceName: "roads", UserChannelID: "victim@example.org", UnsubscriptionCode: "12345"})
		e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "roads", "channel": "email", "isBroadcast": true,
			"message": emailMsg("x"), "asyncBroadcastPushNotification": unsubscribeAll(e, victim)}).Expect(t, http.StatusOK)
		waitLog(t, e, victim, &logs, "async callback answered", 1)
		if s := subscriptionState(t, e, victim); s != notify.StateConfirmed {
			t.Fatalf("the victim is %s after the service posted its callback to the unsubscribe URL", s)
		}
	})
}

func TestACallbackCannotRedirectTheServiceIntoItsOwnAdminAddress(t *testing.T) {
	var logs syncBuffer
	e := apitest.Start(t, apitest.Options{
		Config: []map[string]any{{"outboundRequests": map[string]any{"allow": []any{"127.0.0.2"}}}},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	victim := addSub(t, e, notify.Subscription{ServiceName: "roads", UserChannelID: "victim@example.org", UnsubscriptionCode: "12345"})
	broadcast := func(callback string) {
		t.Helper()
		e.Do(t, "POST", "/api/notifications", map[string]any{"serviceName": "roads", "channel": "email", "isBroadcast": true,
			"message": emailMsg("x"), "asyncBroadcastPushNotification": callback}).Expect(t, http.StatusOK)
	}
	failed := 0
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		receiver := listenOutside(t, redirect(unsubscribeAll(e, victim), code))
		broadcast(receiver.URL + "/hook")
		failed++
		waitLog(t, e, victim, &logs, "async callback failed", failed)
		if s := subscriptionState(t, e, victim); s != notify.StateConfirmed {
			t.Fatalf("%d: the victim is %s", code, s)
		}
		if got := receiver.requests(); len(got) != 1 || !strings.HasPrefix(got[0], "POST /hook {") {
			t.Fatalf("%d: the receiver was asked %q", code, got)
		}
	}
	t.Run("a 302 to the receiver's own host is not followed as a GET", func(t *testing.T) {
		final := listenOutside(t, func(http.ResponseWriter, *http.Request) {})
		receiver := listenOutside(t, redirect(final.URL+"/moved", http.StatusFound))
		broadcast(receiver.URL + "/hook")
		failed++
		waitLog(t, e, victim, &logs, "async callback failed", failed)
		if got := final.requests(); len(got) != 0 {
			t.Fatalf("the redirect target was asked %q", got)
		}
	})
	t.Run("a 307 within admitted hosts repeats the POST", func(t *testing.T) {
		final := listenOutside(t, func(http.ResponseWriter, *http.Request) {})
		receiver := listenOutside(t, redirect(final.URL+"/moved", http.StatusTemporaryRedirect))
		broadcast(receiver.URL + "/hook")
		waitFor(t, "the callback to reach the redirect target", func() bool { return len(final.requests()) == 1 })
		if got := final.requests()[0]; !strings.HasPrefix(got, "POST /moved {") || !strings.Contains(got, `"state":"sent"`) {
			t.Fatalf("the redirect target got %q", got)
		}
	})
}

// waitLog waits until the service has logged n lines containing msg, or
// the victim is no longer confirmed (what the attack does); the bound only
// keeps a broken test from hanging.
func waitLog(t *testing.T, e *apitest.Env, victim string, logs *syncBuffer, msg string, n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the log to say %q %d times", msg, n), func() bool {
		return strings.Count(logs.String(), msg) >= n || subscriptionState(t, e, victim) != notify.StateConfirmed
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
