package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/cron"
	"github.com/govkit/govkit/notify/httpapi"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

func TestConfigurationsRefuseRssSettingsCronCannotRun(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	cases := map[string]struct {
		rss  map[string]any
		says string
	}{
		"a time spec that cannot be read": {map[string]any{"url": "http://feeds.example.org/rss", "timeSpec": "0 0 25 * * *"}, "value.rss.timeSpec"},
		"a url that is not http":          {map[string]any{"url": "file:///etc/passwd", "timeSpec": "0 * * * * *"}, "value.rss.url"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := e.Do(t, "POST", "/api/configurations", map[string]any{"name": "notification", "serviceName": "s", "value": map[string]any{"rss": c.rss}})
			r.Expect(t, http.StatusBadRequest)
			if !strings.Contains(r.Text(), c.says) {
				t.Errorf("body %s does not name %s", r.Text(), c.says)
			}
		})
	}
	seed(t, e, "/api/configurations", map[string]any{"name": "notification", "serviceName": "s", "value": map[string]any{
		"rss": map[string]any{"url": "http://feeds.example.org/rss", "timeSpec": "0 0 1 1 0"}}})
}

// govkit dev runs cron: a notification held until invalidBefore goes out
// at the first dispatchLiveNotifications run after it.
func TestDevRunsCron(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Minute)
	clock := cron.NewManualClock(now)
	var mu sync.Mutex
	var runs []cron.Run
	var out bytes.Buffer
	d, err := httpapi.StartDev(context.Background(), httpapi.DevOptions{DataDir: t.TempDir(), Host: "127.0.0.1", RSABits: 2048,
		Cron: httpapi.CronOptions{Clock: clock, OnRun: func(r cron.Run) { mu.Lock(); runs = append(runs, r); mu.Unlock() }}}, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	if !strings.Contains(out.String(), "cron") {
		t.Errorf("dev output does not say cron is on:\n%s", out.String())
	}
	post := func(path string, body map[string]any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(d.URL+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d %v", path, resp.StatusCode, m)
		}
		return m
	}
	post("/api/subscriptions", map[string]any{"serviceName": "dev", "channel": "email", "userChannelId": "held@example.org", "state": "confirmed"})
	// The dispatcher goes by the real clock: hold the notification for a
	// moment of real time.
	invalidBefore := time.Now().Add(time.Second).UTC()
	n := post("/api/notifications", map[string]any{"serviceName": "dev", "channel": "email", "userChannelId": "held@example.org",
		"invalidBefore": notify.FormatTime(invalidBefore), "message": map[string]any{"from": "no_reply@example.org", "subject": "held", "textBody": "x"}})
	if n["state"] != "new" {
		t.Fatalf("held notification state %v", n["state"])
	}
	time.Sleep(time.Until(invalidBefore) + 10*time.Millisecond)
	// Move the clock past invalidBefore. Not simply to the minute after
	// now: a slow start (a loaded machine) can carry invalidBefore past
	// it, and a run then would rightly hold the notification still. The
	// clock moves only here, so every run reported below happened after
	// this and read the time as tick (a jump of two minutes makes one run,
	// scheduled for the first of them).
	tick := invalidBefore.Truncate(time.Minute).Add(time.Minute)
	clock.Set(tick)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		done := false
		for _, r := range runs {
			done = done || r.Job == cron.DispatchLiveNotifications
		}
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("dispatchLiveNotifications did not run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The job hands the notification to the dispatcher, which sends it
	// in the background: wait for the mail (the deadline only guards
	// against a hang).
	var mails []map[string]any
	found := false
	for deadline := time.Now().Add(30 * time.Second); !found && time.Now().Before(deadline); {
		resp, err := http.Get(d.MailURL + "api/mails")
		if err != nil {
			t.Fatal(err)
		}
		mails = nil
		_ = json.NewDecoder(resp.Body).Decode(&mails)
		resp.Body.Close()
		for _, m := range mails {
			found = found || m["subject"] == "held"
		}
		if !found {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !found {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the held notification was not sent: %v\ncron runs: %+v\ndev output:\n%s", mails, runs, out.String())
	}
}
