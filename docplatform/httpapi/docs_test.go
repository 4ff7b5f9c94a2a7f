package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/internal/browsertest"
)

// The API documentation page loads in a real browser under the platform's
// CSP, with no violation and no console error (internal/browsertest fails
// the test on any), and renders every route.
func TestDocsPageInBrowser(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Width: 1280, Height: 900})
	rw := newRWorld(t, sqliteStore)
	b.Do(
		chromedp.Navigate(rw.url("/api/docs")),
		chromedp.WaitVisible(`details.op`),
		chromedp.Click(`details.op summary`),
	)
	text := browsertest.Eval[string](b, `document.body.innerText`)
	for _, want := range []string{"/api/documents/{id}/content", "Upload a document", "/api/groups/{groupId}/members/{userId}", "system admin", "group (ADMIN, groupId from path)", "/api/auth/login", "OpenAPI 3.1"} {
		if !strings.Contains(text, want) {
			t.Errorf("page does not show %q", want)
		}
	}

	t.Run("accessible", func(t *testing.T) {
		// Every operation open: its table and its form's labelled fields
		// are what a reader uses; the tall Schemas block scrolls by
		// keyboard.
		browsertest.Eval[bool](b, `(document.querySelectorAll("details.op").forEach(d => d.open = true), true)`)
		b.Accessible("/api/docs with every operation open")
		if !browsertest.Eval[bool](b, `(() => { const p = document.querySelector("#tag-schemas ~ details pre"); return p.tabIndex === 0 && p.getAttribute("aria-label") === "Schemas (JSON)"; })()`) {
			t.Error("the Schemas block is not focusable and labelled")
		}
	})

	t.Run("filtering hides the headings of empty sections", func(t *testing.T) {
		setFilter := func(q string) {
			browsertest.Eval[bool](b, `(() => { const f = document.getElementById("filter"); f.value = `+browsertest.JSString(q)+`; f.dispatchEvent(new Event("input")); return true; })()`)
		}
		setFilter("/content")
		b.Until("the filter applied", `/^[1-9]\d* operations? match/.test(document.getElementById("filter-count").textContent)`)
		shown := browsertest.Eval[[]string](b, `[...document.querySelectorAll("section.tag")].filter(s => s.offsetParent !== null).map(s => s.querySelector("h2").textContent)`)
		if len(shown) == 0 {
			t.Fatal("no section shown for /content")
		}
		for _, h := range shown {
			if !browsertest.Eval[bool](b, `[...document.querySelectorAll("section.tag")].find(s => s.querySelector("h2").textContent === `+browsertest.JSString(h)+`).querySelector("details.op:not(.hidden)") !== null`) {
				t.Errorf("section %q shown with no operation", h)
			}
		}
		if browsertest.Eval[bool](b, `document.getElementById("tag-schemas").offsetParent !== null`) {
			t.Error("the schemas heading is shown though nothing under it matches")
		}
		setFilter("")
		if browsertest.Eval[bool](b, `document.getElementById("tag-schemas").offsetParent === null`) {
			t.Error("an empty filter leaves the schemas hidden")
		}
	})

	t.Run("the check itself sees a violation: an injected inline script is refused and reported", func(t *testing.T) {
		b.Expect(`Content Security Policy|CSP violation`)
		browsertest.Eval[bool](b, `(() => { const s = document.createElement("script"); s.textContent = "window.__ran = 1"; document.body.appendChild(s); return true; })()`)
		// The report is an event the browser fires soon after; wait for it
		// (the bound only guards against a hang).
		for deadline := time.Now().Add(30 * time.Second); !b.Saw(isScriptViolation) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if !b.Saw(isScriptViolation) {
			t.Fatalf("an inline script went unreported: the violation check would miss real violations; saw %v", b.Seen())
		}
		if browsertest.Eval[bool](b, `window.__ran === 1`) {
			t.Fatal("an inline script ran under the CSP")
		}
	})
}

func isScriptViolation(message string) bool {
	return strings.Contains(message, "CSP violation: script-src")
}

// The documentation page sends requests: with the signed-in session (the
// cookies, and X-CSRF-Token on writes, added by the page) and with an API
// key typed into it.
func TestDocsPageTriesRequests(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Width: 1280, Height: 900})
	// A request refused on purpose below is in the browser's log.
	b.Expect(`status of 403`)
	ctx := b.Ctx
	rw := newRWorld(t, sqliteStore)

	// Sign in as ada (ADMIN of alpha) in the browser, through the
	// provider, as a person would.
	rw.idp.SetUser(ada)
	must(t, chromedp.Do(ctx, chromedp.Navigate(rw.url("/api/auth/login")), chromedp.WaitReady("body")))
	must(t, chromedp.Do(ctx, chromedp.Navigate(rw.url("/api/docs")), chromedp.WaitVisible(`#putApiGroupsByGroupId`)))
	who, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("who").textContent`))
	must(t, err)
	if !strings.Contains(who, "Signed in as") {
		t.Fatalf("the page does not show the session: %q", who)
	}

	send := func(op string, fill map[string]string) (status, text string) {
		t.Helper()
		form := "#" + op + " form.try"
		actions := []chromedp.Action[chromedp.Void]{chromedp.Click("#" + op + " summary")}
		for field, v := range fill {
			actions = append(actions, chromedp.SetValue(form+" [name="+field+"]", v))
		}
		actions = append(actions, chromedp.Click(form+" button"), chromedp.WaitVisible(form+" pre.result[data-status]"))
		must(t, chromedp.Do(ctx, actions...))
		status, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("`+form+` pre.result").dataset.status`))
		must(t, err)
		text, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("`+form+` pre.result").textContent`))
		must(t, err)
		return status, text
	}

	t.Run("a write with the session carries the CSRF token", func(t *testing.T) {
		status, text := send("putApiGroupsByGroupId", map[string]string{"groupId": rw.alpha, "body": `{"description":"changed from the docs page"}`})
		if status != "200" || !strings.Contains(text, "changed from the docs page") {
			t.Fatalf("PUT from the docs page: %s\n%s", status, text)
		}
		g, err := rw.st.Group(context.Background(), rw.alpha)
		must(t, err)
		if g.Description != "changed from the docs page" {
			t.Errorf("description %q", g.Description)
		}
	})
	t.Run("the example body of a typed request is a starting point", func(t *testing.T) {
		body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#postApiWorkflows textarea").value`))
		must(t, err)
		if !strings.Contains(body, `"groupId"`) || !strings.Contains(body, `"config"`) {
			t.Errorf("example body %s", body)
		}
	})
	t.Run("an API key is sent instead of the session", func(t *testing.T) {
		must(t, chromedp.Do(ctx, chromedp.SetValue("#apikey", rw.betaKey)))
		status, text := send("getApiDocuments", nil)
		if status != "200" || !strings.Contains(text, `"documents"`) {
			t.Fatalf("GET with the API key: %s\n%s", status, text)
		}
		// The key's group is beta: alpha, ada's group, is out of its reach.
		status, _ = send("getApiGroupsByGroupId", map[string]string{"groupId": rw.alpha})
		if status != "403" {
			t.Errorf("GET alpha with beta's key: %s, want 403", status)
		}
	})
}
