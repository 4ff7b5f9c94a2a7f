package console_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/internal/browsertest"
)

// attackPage is a page on another site that a person on an admin address
// opens: it signs up an administrator with a text/plain POST (a "simple"
// request, sent without asking) and unsubscribes a victim from every
// service with an image, then says it is done in its title.
const attackPage = `<!doctype html><title>cats</title><script src="/attack.js"></script>`

const attackScript = `
const api = %q;
Promise.allSettled([
  fetch(api + "/administrators", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"},
    body: JSON.stringify({email: "mallory@evil.test", password: "Evil-Admin!1234"})}),
  new Promise((done) => { const i = new Image(); i.onload = i.onerror = done; i.src = api + "/subscriptions/%s/unsubscribe?additionalServices=_all"; }),
]).then(() => { document.title = "attacked"; });
`

// TestOtherSitesCannotUseTheAdminAddress reproduces finding 1 of the
// second hostile review in a real browser on an admin address: a page on
// another site makes the browser sign up an administrator and unsubscribe
// someone from everything; a DNS-rebinding page opens the console under
// its own name. Neither gets the address's rights — the rebinding page's
// console offers a sign-in — while the console at the service's own
// names stays super admin without one.
func TestOtherSitesCannotUseTheAdminAddress(t *testing.T) {
	w := newWorld(t, worldOptions{browserIsAdmin: true})
	var victim struct{ ID string }
	w.api("POST", "/subscriptions", map[string]any{"serviceName": "news", "channel": "email", "userChannelId": "victim@example.com", "state": "confirmed", "unsubscriptionCode": "13579"}, &victim)
	w.api("POST", "/subscriptions", map[string]any{"serviceName": "roads", "channel": "email", "userChannelId": "victim@example.com", "state": "confirmed"}, nil)

	_, port, _ := net.SplitHostPort(strings.TrimPrefix(w.base, "http://"))
	evil := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/attack.js" {
			rw.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(rw, attackScript, "http://127.0.0.1:"+port+"/api", victim.ID)
			return
		}
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprint(rw, attackPage)
	}))
	t.Cleanup(evil.Close)
	_, evilPort, _ := net.SplitHostPort(strings.TrimPrefix(evil.URL, "http://"))

	b := &browserTab{Tab: browsertest.New(t, browsertest.Options{Width: 1280, Height: 900, Wait: wait, Lifetime: 8 * time.Minute,
		HostResolverRules: "MAP evil.test 127.0.0.1, MAP rebind.test 127.0.0.1"}), w: w}
	// the refused image and the rebinding page's refused read; Chromium's
	// note that a plain-HTTP origin other than localhost ignores the
	// console's Cross-Origin-Opener-Policy
	b.Expect(`status of 403`)
	b.Expect(`Cross-Origin-Opener-Policy header has been ignored`)

	b.Do(chromedp.Navigate("http://evil.test:" + evilPort + "/"))
	b.Until("the attack to finish", `document.title === "attacked"`)
	var admins []struct{ Email string }
	w.api("GET", "/administrators", nil, &admins)
	if len(admins) != 0 {
		t.Errorf("another site signed up %v", admins)
	}
	var subs []struct{ State string }
	w.api("GET", "/subscriptions", nil, &subs)
	for _, s := range subs {
		if s.State != "confirmed" {
			t.Errorf("another site unsubscribed the victim: %v", subs)
			break
		}
	}

	// A DNS-rebinding page: the console under the attacker's name is an
	// anonymous browser's, which is offered a sign-in, and cannot read
	// the subscriptions.
	b.Do(chromedp.Navigate("http://rebind.test:" + port + "/"))
	b.signInPage()
	status, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](`fetch("/api/subscriptions").then((r) => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusForbidden {
		t.Errorf("the rebinding page read the subscriptions: status %v", status)
	}

	// The control: the same browser at the service's own names.
	for _, origin := range []string{w.base, "http://localhost:" + port} {
		b.Do(chromedp.Navigate(origin + "/"))
		if got := b.role(); got != "Super administrator" {
			t.Fatalf("at %s the console's role is %q, want Super administrator", origin, got)
		}
	}
}
