package webui_test

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/docplatform"
)

// A browser that signed in before CSRF tokens were signed still holds an
// unsigned one (64 hex digits). Its writes are refused; the page's next
// refresh, which Chromium marks Sec-Fetch-Site: same-origin, exchanges the
// old token for a signed one, and writes work again without signing in.
func TestUnsignedCSRFTokenFromBeforeTheUpgrade(t *testing.T) {
	t.Parallel()
	w := newWorld(t, worldOptions{tokenLifetime: 12 * time.Second})
	finance := w.group("Finance", map[string]docplatform.Role{})
	b := newBrowser(t, w, 1280, 900)
	b.signIn("alice")

	const legacy = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if _, err := chromedp.Call(b.Ctx, network.SetCookie, network.SetCookieParams{Name: "csrf_token", Value: legacy, URL: w.base + "/", Path: "/", SameSite: network.CookieSameSiteStrict}); err != nil {
		t.Fatal(err)
	}
	// askToJoin writes from the page as its API client does: the CSRF
	// cookie's value in X-CSRF-Token.
	askToJoin := func() int {
		js := `fetch("/api/groups/` + finance.ID + `/requests", {method: "POST", credentials: "same-origin",
			headers: {"X-CSRF-Token": document.cookie.split("; ").find(c => c.startsWith("csrf_token=")).slice(11),
			          "Content-Type": "application/json"}, body: "{}"}).then(r => r.status)`
		status, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		return status
	}
	b.Expect(`status of 403`)
	if st := askToJoin(); st != http.StatusForbidden {
		t.Fatalf("a write with the unsigned token answered %d", st)
	}
	before := w.refreshes()
	b.untilServer("the timer's refresh", func() bool { return w.refreshes() > before })
	if last := w.served("/api/auth/refresh"); last[len(last)-1].Status != http.StatusOK {
		t.Fatalf("the refresh with the unsigned token answered %d", last[len(last)-1].Status)
	}
	if tok := b.cookie("csrf_token"); !regexp.MustCompile(`^[0-9a-f]{32}\.[0-9a-f]{32}\.[0-9a-f]{32}$`).MatchString(tok) {
		t.Fatalf("after the refresh the CSRF cookie is %q, not a signed token", tok)
	}
	if st := askToJoin(); st != http.StatusCreated {
		t.Fatalf("a write with the exchanged token answered %d", st)
	}
}
