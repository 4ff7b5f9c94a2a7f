package webui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/browsertest"
)

// The three refresh rules, each watched in a real browser with a short
// token lifetime, and counted at the server.

// signedOutCleanly checks the signed-out home after a failed refresh: the
// page itself (not a dialog over the old one), with none of the person.
func signedOutCleanly(t *testing.T, b *browserTab, username string) {
	t.Helper()
	b.Until("the signed-out home", `[...document.querySelectorAll("a")].some(a => a.textContent.trim() === "Sign in" && a.getAttribute("href") === "/api/auth/login")`)
	b.untilText("Your session has ended")
	u := b.w.users[username]
	text := browsertest.Eval[string](b.Tab, `document.documentElement.textContent + " " + document.title`)
	for _, s := range []string{u.Name, u.Email, u.Username} {
		if strings.Contains(text, s) {
			t.Errorf("the signed-out page still shows %q", s)
		}
	}
	if browsertest.Eval[bool](b.Tab, `!!document.getElementById("signed-in-as") || !!document.getElementById("sidenav")`) {
		t.Error("the signed-in page is still there under the signed-out view")
	}
}

// Rule 1: a timer at 75 % of the token's life (at least 10 s) refreshes,
// and reschedules from the refresh's answer; when a refresh is refused,
// the person is signed out.
func TestRefreshTimer(t *testing.T) {
	t.Parallel()
	w := newWorld(t, worldOptions{tokenLifetime: 12 * time.Second})
	w.group("Finance", map[string]docplatform.Role{"alice": docplatform.RoleMember})
	b := newBrowser(t, w, 1280, 900)

	b.signIn("alice")
	if n := w.refreshes(); n != 0 {
		t.Fatalf("%d refresh(es) right after sign-in", n)
	}
	if got := w.expiresIn(b); got <= 0 || got > 12 {
		t.Errorf("/api/auth/me says expires_in %d; --token-lifetime 12s should bound it", got)
	}
	b.untilServer("the timer's refresh", func() bool { return w.refreshes() >= 1 })
	b.untilServer("the rescheduled timer's refresh", func() bool { return w.refreshes() >= 2 })
	for _, r := range w.served("/api/auth/refresh") {
		if r.Status != http.StatusOK {
			t.Errorf("refresh answered %d", r.Status)
		}
	}
	// The timer kept the cookies alive: nothing was ever refused.
	b.Do(chromedp.Click(browsertest.ByText("a", "Groups")))
	b.untilText("My membership requests")
	b.Until("the groups listed", `[...document.querySelectorAll("main table a")].some(a => a.textContent === "Finance")`)
	if failed := w.failedRequests(); len(failed) > 0 {
		t.Errorf("requests refused while the timer refreshed: %v", failed)
	}

	// The provider refuses the next refresh: signed out by the timer.
	b.Expect(`/api/auth/refresh.*|status of 401`)
	before := w.refreshes()
	b.revokeRefreshToken()
	b.untilServer("the refused refresh", func() bool { return w.refreshes() > before })
	signedOutCleanly(t, b, "alice")
	if last := w.served("/api/auth/refresh"); last[len(last)-1].Status != http.StatusUnauthorized {
		t.Errorf("the refused refresh answered %d", last[len(last)-1].Status)
	}
}

// revokeRefreshToken has the provider revoke the browser's refresh token,
// so that its next refresh is refused there. (Swapping the cookie for
// another value no longer reaches the provider: the CSRF token is signed
// for the refresh token it came with, and the platform refuses the pair
// first, with 403.)
func (b *browserTab) revokeRefreshToken() {
	b.T.Helper()
	if err := b.w.stack.Platform.OIDC.RevokeToken(context.Background(), b.cookie("refresh_token"), "refresh_token"); err != nil {
		b.T.Fatal(err)
	}
}

// expiresIn asks the platform how long the browser's access token has left,
// with the browser's own cookie (from Go, so the page's counts stay its own).
func (w *world) expiresIn(b *browserTab) int {
	w.t.Helper()
	req, _ := http.NewRequest("GET", w.base+"/api/auth/me", nil)
	req.AddCookie(&http.Cookie{Name: "access_token", Value: b.cookie("access_token")})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var me struct {
		ExpiresIn int `json:"expires_in"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&me) != nil {
		w.t.Fatalf("/api/auth/me with the browser's cookie: %s", resp.Status)
	}
	return me.ExpiresIn
}

// indexOf finds the first logged request to path at or after from.
func indexOf(reqs []served, path string, from int) int {
	for i := from; i < len(reqs); i++ {
		if reqs[i].Path == path {
			return i
		}
	}
	return -1
}

// Rule 2: becoming visible with under 60 s of token life left refreshes at
// once; with 60 s or more, it does not.
func TestRefreshOnVisibility(t *testing.T) {
	t.Parallel()
	w := newWorld(t, worldOptions{tokenLifetime: 70 * time.Second})
	w.group("Finance", map[string]docplatform.Role{"alice": docplatform.RoleMember})
	b := newBrowser(t, w, 1280, 900)
	b.signIn("alice")

	// 70 s left: hidden and shown again, no refresh. The page's next
	// requests wait for any refresh in flight, so once they are served a
	// refresh the visibility change started would be in the log.
	b.setVisible(false)
	b.setVisible(true)
	n := len(w.served("/api/groups"))
	b.Do(chromedp.Click(browsertest.ByText("a", "Groups")))
	b.untilServer("the Groups page's requests", func() bool { return len(w.served("/api/groups")) > n })
	if got := w.refreshes(); got != 0 {
		t.Fatalf("%d refresh(es) on becoming visible with about 70 s left", got)
	}

	// Under 60 s left (the timer is due at 52 s): hidden and shown again,
	// the refresh comes at once, before the page's next request.
	deadline := time.Now().Add(wait)
	for w.expiresIn(b) >= 58 {
		if time.Now().After(deadline) {
			t.Fatal("the token's life never went under 58 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.setVisible(false)
	b.setVisible(true)
	from := len(w.served(""))
	b.Do(chromedp.Click(browsertest.ByText("a", "Documents")))
	b.untilServer("the Documents page's request", func() bool { return indexOf(w.served(""), "/api/documents", from) >= 0 })
	log := w.served("")
	refresh, docs := indexOf(log, "/api/auth/refresh", 0), indexOf(log, "/api/documents", from)
	if refresh < 0 || refresh > docs {
		t.Fatalf("no refresh before the first request after becoming visible with under 60 s left: %v", log[from:])
	}
	if got := w.refreshes(); got != 1 || log[refresh].Status != http.StatusOK {
		t.Errorf("%d refreshes (first answered %d), want exactly one, 200", got, log[refresh].Status)
	}
	// The refresh's answer moved the token's life back up.
	if got := w.expiresIn(b); got < 60 {
		t.Errorf("after the refresh the token has %d s left", got)
	}
}

// Rule 3: requests in flight that get 401 share one refresh and are each
// retried once.
func TestSharedRefreshOn401(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.group("Finance", map[string]docplatform.Role{"alice": docplatform.RoleMember})
	b := newBrowser(t, w, 1280, 900)
	b.signIn("alice")
	// The landing page (Documents) asks for its list after the name shows:
	// had that request left after the cookie went, its 401 would start the
	// refresh before the Groups page asked for anything.
	b.untilServer("the landing page's request", func() bool { return len(w.served("/api/documents")) > 0 })

	// The access cookie goes, as when the token expires: the Groups page's
	// two requests, sent together, both come back 401.
	b.Expect(`status of 401`)
	b.deleteCookie("access_token", "/")
	b.Do(chromedp.Click(browsertest.ByText("a", "Groups")))
	b.Until("the groups listed", `[...document.querySelectorAll("main table a")].some(a => a.textContent === "Finance")`)
	b.untilText("You have not asked to join a group.")
	for _, path := range []string{"/api/groups", "/api/membership-requests"} {
		got := w.served(path)
		if len(got) != 2 || got[0].Status != http.StatusUnauthorized || got[1].Status != http.StatusOK {
			t.Errorf("%s served %v, want 401 then one retry answered 200", path, got)
		}
	}
	if got := w.served("/api/auth/refresh"); len(got) != 1 || got[0].Status != http.StatusOK {
		t.Errorf("refreshes %v, want exactly one shared refresh", got)
	}
	if !strings.Contains(browsertest.Eval[string](b.Tab, `document.getElementById("signed-in-as").innerText`), "Alice Member") {
		t.Error("signed out although the refresh worked")
	}
	if b.cookie("access_token") == "" {
		t.Error("the refresh set no new access cookie")
	}
}

// Rule 3, failing: a 401 whose shared refresh is refused signs the person
// out, without retrying the request.
func TestSignOutWhenRefreshFails(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.group("Finance", map[string]docplatform.Role{"alice": docplatform.RoleMember})
	b := newBrowser(t, w, 1280, 900)
	b.signIn("alice")

	b.Expect(`status of 401`)
	b.deleteCookie("access_token", "/")
	b.revokeRefreshToken()
	b.Do(chromedp.Click(browsertest.ByText("a", "Groups")))
	signedOutCleanly(t, b, "alice")
	if got := w.served("/api/auth/refresh"); len(got) != 1 || got[0].Status != http.StatusUnauthorized {
		t.Errorf("refreshes %v, want one, refused", got)
	}
	for _, path := range []string{"/api/groups", "/api/membership-requests"} {
		if got := w.served(path); len(got) != 1 || got[0].Status != http.StatusUnauthorized {
			t.Errorf("%s served %v, want one 401 and no retry", path, got)
		}
	}
	if b.cookie("csrf_token") != "" {
		t.Error("the refused refresh left the CSRF cookie")
	}
	// Reloading stays signed out, and asks nothing of the API.
	n := len(w.served(""))
	b.Do(chromedp.Reload())
	b.Until("the signed-out home", `[...document.querySelectorAll("a")].some(a => a.textContent.trim() === "Sign in")`)
	if extra := w.served("")[n:]; slices.ContainsFunc(extra, func(r served) bool { return strings.HasPrefix(r.Path, "/api/") }) {
		t.Errorf("the signed-out home called the API: %v", extra)
	}
}
