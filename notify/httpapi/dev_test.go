package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/httpapi"
)

// freeListener listens on a free loopback port (tests never take the
// fixed ports of govkit dev).
func freeListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func startDev(t *testing.T, dir string, demo bool, out *bytes.Buffer) *httpapi.Dev {
	t.Helper()
	d, err := httpapi.StartDev(context.Background(), httpapi.DevOptions{DataDir: dir, Host: "127.0.0.1", RSABits: 2048, Demo: demo,
		Listener: freeListener(t), SMTPListener: freeListener(t)}, out)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestStartDev(t *testing.T) {
	var out bytes.Buffer
	d, err := httpapi.StartDev(context.Background(), httpapi.DevOptions{DataDir: t.TempDir(), Host: "127.0.0.1", RSABits: 2048,
		Listener: freeListener(t), SMTPListener: freeListener(t)}, &out)
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
	t.Run("prints the API, explorer and mail page URLs", func(t *testing.T) {
		for _, want := range []string{d.URL + "/api", d.URL + "/api/explorer", d.MailURL} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %s:\n%s", want, out.String())
			}
		}
	})
	t.Run("a confirmation request lands in the mail catcher page", func(t *testing.T) {
		req, _ := http.NewRequest("POST", d.URL+"/api/subscriptions", strings.NewReader(`{"serviceName":"dev","channel":"email","userChannelId":"dev@example.org"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("is_anonymous", "true")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("create %d", resp.StatusCode)
		}
		resp, err = http.Get(d.MailURL + "api/mails")
		if err != nil {
			t.Fatal(err)
		}
		var mails []map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&mails)
		resp.Body.Close()
		if len(mails) != 1 || mails[0]["subject"] != "Subscription confirmation" {
			t.Fatalf("caught %v", mails)
		}
		resp, err = http.Get(d.MailURL)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(page), "Subscription confirmation") {
			t.Fatal("mail page does not list the mail")
		}
	})
	// The caught mail holds every confirmation code: another site, or a
	// DNS-rebinding page under another name, cannot read it; this
	// machine's browser at the printed address can.
	t.Run("the caught mail is for this machine's browser at the service's own name", func(t *testing.T) {
		status := func(host string, headers ...string) int {
			t.Helper()
			req, _ := http.NewRequest("GET", d.MailURL+"api/mails", nil)
			if host != "" {
				req.Host = host
			}
			for i := 0; i+1 < len(headers); i += 2 {
				req.Header.Set(headers[i], headers[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(d.URL, "http://"))
		for _, c := range []struct {
			name    string
			host    string
			headers []string
			want    int
		}{
			{"a DNS-rebinding page is refused", "rebind.evil.example:" + port, consoleGET, http.StatusForbidden},
			{"another site's fetch is refused", "", crossSite, http.StatusForbidden},
			{"an image elsewhere is refused", "", crossSiteImage, http.StatusForbidden},
			{"the page opened from the printed address is served", "", typed, http.StatusOK},
			{"the page's own fetch is served", "", consoleGET, http.StatusOK},
			{"localhost is the service's own name", "localhost:" + port, consoleGET, http.StatusOK},
			{"a program is served", "", nil, http.StatusOK},
		} {
			t.Run(c.name, func(t *testing.T) {
				if got := status(c.host, c.headers...); got != c.want {
					t.Fatalf("status %d, want %d", got, c.want)
				}
			})
		}
	})
	t.Run("a broadcast runs through the embedded queue to the mail catcher", func(t *testing.T) {
		if !strings.Contains(out.String(), "  queue               embedded Redis on 127.0.0.1:") {
			t.Errorf("output does not show the embedded queue:\n%s", out.String())
		}
		post(t, d.URL+"/api/subscriptions", `{"serviceName":"queue-check","channel":"email","userChannelId":"reader@example.org","state":"confirmed"}`)
		n := post(t, d.URL+"/api/notifications", `{"serviceName":"queue-check","channel":"email","isBroadcast":true,"message":{"from":"news@example.org","subject":"Extra","textBody":"Hello"}}`)
		if n["state"] != "sent" {
			t.Fatalf("broadcast %v", n)
		}
		d, _ := n["dispatch"].(map[string]any)
		if succ, _ := d["successful"].([]any); len(succ) != 1 {
			t.Fatalf("dispatch %v", d)
		}
	})
}

func post(t *testing.T, url, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	json.NewDecoder(resp.Body).Decode(&v)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %s %v", url, resp.Status, v)
	}
	return v
}

// The first start seeds confirmed demo subscriptions through the API; the
// broadcast the start-up text suggests reaches them in the caught mail and
// SMS; a restart keeps what was caught and seeds nothing again.
func TestDevDemoBroadcastAndRestart(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	d := startDev(t, dir, true, &out)
	if d.Demo == nil || len(d.Demo.Subscriptions) != 3 {
		t.Fatalf("demo %+v\n%s", d.Demo, out.String())
	}
	if !strings.Contains(out.String(), httpapi.DevDemoService) || !strings.Contains(out.String(), "3 confirmed subscriptions") {
		t.Errorf("output does not describe the demo:\n%s", out.String())
	}
	var subs []map[string]any
	getJSON(t, d.URL+"/api/subscriptions", &subs)
	if len(subs) != 3 {
		t.Fatalf("%d subscriptions", len(subs))
	}
	for _, s := range subs {
		if s["state"] != "confirmed" || s["serviceName"] != httpapi.DevDemoService {
			t.Errorf("subscription %v", s)
		}
	}
	if n := len(d.Mail.Mails()); n != 0 {
		t.Errorf("seeding sent %d mails (confirmation requests?)", n)
	}

	post(t, d.URL+"/api/notifications", `{"serviceName":"`+httpapi.DevDemoService+`","channel":"email","isBroadcast":true,"message":{"from":"roads@govkit.test","subject":"Main Street closed","textBody":"Main Street is closed today."}}`)
	post(t, d.URL+"/api/notifications", `{"serviceName":"`+httpapi.DevDemoService+`","channel":"sms","isBroadcast":true,"message":{"textBody":"Main Street is closed today."}}`)
	var mails []map[string]any
	getJSON(t, d.MailURL+"api/mails", &mails)
	var to []string
	for _, m := range mails {
		if m["subject"] == "Main Street closed" {
			to = append(to, m["to"].(string))
		}
	}
	if len(to) != 2 {
		t.Errorf("broadcast caught for %v, want alice and bob", to)
	}
	var texts []map[string]any
	getJSON(t, d.MailURL+"api/sms", &texts)
	if len(texts) != 1 || texts[0]["to"] != "+12505550101" || texts[0]["text"] != "Main Street is closed today." {
		t.Errorf("caught SMS %v", texts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	again := startDev(t, dir, true, &out)
	defer again.Stop(ctx)
	if again.Demo != nil {
		t.Error("the second start seeded the demo again")
	}
	if !strings.Contains(out.String(), "seeded at the first start") {
		t.Errorf("the second start does not say the demo exists:\n%s", out.String())
	}
	getJSON(t, again.URL+"/api/subscriptions", &subs)
	if len(subs) != 3 {
		t.Errorf("%d subscriptions after a restart, want the 3 seeded once", len(subs))
	}
	if got := len(again.Mail.Mails()); got != len(mails) {
		t.Errorf("%d mails kept across the restart, want %d", got, len(mails))
	}
	if got := again.Mail.Texts(); len(got) != 1 {
		t.Errorf("%d SMS kept across the restart, want 1", len(got))
	}
}

func TestDevNoDemo(t *testing.T) {
	var out bytes.Buffer
	d := startDev(t, t.TempDir(), false, &out)
	defer d.Stop(context.Background())
	var count struct{ Count int }
	getJSON(t, d.URL+"/api/subscriptions/count", &count)
	if d.Demo != nil || count.Count != 0 || !strings.Contains(out.String(), "not seeded (--no-demo)") {
		t.Errorf("--no-demo: demo %+v, %d subscriptions\n%s", d.Demo, count.Count, out.String())
	}
}

// govkit dev admits loopback for outbound requests, so a callback served
// on the developer's machine is posted to; it arrives as the service's
// own request, which the admin address does not make a super admin.
func TestDevPostsCallbacksToLoopback(t *testing.T) {
	got := make(chan string, 1)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Method + " " + r.Header.Get("is_anonymous")
	}))
	defer receiver.Close()
	d := startDev(t, t.TempDir(), false, &bytes.Buffer{})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = d.Stop(ctx)
	}()
	post(t, d.URL+"/api/notifications", `{"serviceName":"dev","channel":"email","isBroadcast":true,"message":{"from":"a@example.org","subject":"s","textBody":"t"},"asyncBroadcastPushNotification":"`+receiver.URL+`/hook"}`)
	select {
	case m := <-got:
		if m != "POST true" {
			t.Fatalf("the receiver got %q", m)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no callback")
	}
}
