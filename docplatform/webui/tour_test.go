package webui_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/govkit/govkit/internal/browsertest"
)

// visit loads a page of the app from its address and waits until it has
// finished loading (no loading indicator left) and shows want.
func (b *browserTab) visit(path string, want ...string) {
	b.T.Helper()
	b.open(path)
	b.Until("the signed-in page at "+path, `document.getElementById("signed-in-as")`)
	for _, s := range want {
		b.untilText(s)
	}
	b.Until("the page at "+path+" loaded", `document.querySelectorAll(".loading").length === 0`)
	if b.audit {
		b.Accessible(path)
	}
}

// Every page, for a system admin, a group admin and a member: each loads
// without a console message, an exception or a CSP violation, shows its
// content, calls nothing the server refuses (no admin route for a member,
// no OCR result that does not exist, no API-key call for a non-admin), and
// passes axe-core at 1280×800 and 390×844 with no serious or critical
// violation and no sideways scrolling (WCAG 2.1 AA, which government
// services must meet).
func TestEveryPageLoadsCleanly(t *testing.T) {
	w := newWorld(t, worldOptions{})
	d := seedDemo(t, w)
	seeded := len(w.served(""))

	t.Run("system admin", func(t *testing.T) {
		b := newBrowser(t, w, 1280, 900)
		b.audit = true
		b.open("/")
		b.untilText("Sign in")
		b.Accessible("the signed-out home")
		b.signIn("admin")
		b.visit("/documents", "Upload a document", "Invoice 1042")
		b.visit("/documents/"+d.invoice.ID, "tesseract 5.4", "Northwind Supplies", "completed")
		b.visit("/documents/"+d.plan.ID, "No OCR result yet", "has not been reviewed yet")
		b.visit("/review", "Waiting for review", "Locked")
		b.visit("/reviews/"+d.bobSession, "This document is locked")
		b.visit("/workflows", "Invoice intake", "Permit triage")
		b.visit("/workflows/"+d.workflow, "Versions", "v2", "fra")
		b.visit("/groups", "My membership requests")
		b.visit("/groups/"+d.finance.ID, "API key", "Last used", "Alice Member", "Bob Member")
		b.visit("/groups/"+d.permits.ID, "I audit the permit office", "Approve")
		b.visit("/audit", "Report by day", "API key created", "Signed in")
		// Sign-ins belong to no group; they name the person all the same.
		signIns := browsertest.Eval[[]string](b.Tab, `[...document.querySelectorAll("main tr")].filter(tr => tr.textContent.includes("Signed in")).map(tr => tr.textContent)`)
		if len(signIns) == 0 || !slices.ContainsFunc(signIns, func(s string) bool { return strings.Contains(s, "Alice Member") }) || slices.ContainsFunc(signIns, func(s string) bool { return strings.Contains(s, "…") }) {
			t.Errorf("the sign-in rows do not all name the person: %q", signIns)
		}
		b.Do(chromedp.Click(browsertest.ByText("button", "Show report")))
		b.untilText("days counted in")
		b.visit("/admin/users", "Ada Admin", "Alice Member", "Bob Member")
		b.visit("/admin/groups", "Finance", "Permits")
		b.visit("/profile", "System admin", "admin@govkit.test")
		b.visit("/no/such/page", "Page not found")

		// The API's own page, with every operation open (their forms and
		// tables are what a reader of it uses), and filtered.
		b.open("/api/docs")
		b.Until("the operations", `document.querySelectorAll("details.op").length > 20`)
		browsertest.Eval[bool](b.Tab, `(document.querySelectorAll("details.op").forEach(d => d.open = true), true)`)
		b.Accessible("/api/docs")

		t.Run("the check itself sees a CSP violation", func(t *testing.T) {
			// Both reports of it (the browser's log and the page's
			// securitypolicyviolation event) are expected here, and looked for.
			b.Expect(`Content Security Policy|CSP violation`)
			browsertest.Eval[bool](b.Tab, `(() => { const s = document.createElement("script"); s.textContent = "window.__ran = 1"; document.body.appendChild(s); return true; })()`)
			reported := func() bool {
				return b.Saw(func(p string) bool { return strings.Contains(p, "CSP violation: script-src") })
			}
			// The report is an event that comes soon after; wait for it.
			for deadline := time.Now().Add(wait); !reported() && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			if !reported() {
				t.Fatalf("an injected inline script went unreported: %v", b.Seen())
			}
			if browsertest.Eval[bool](b.Tab, `window.__ran === 1`) {
				t.Fatal("an inline script ran under the CSP")
			}
		})
	})

	t.Run("group admin", func(t *testing.T) {
		b := newBrowser(t, w, 1280, 900)
		b.audit = true
		b.signIn("alice")
		b.visit("/review", "Waiting for review", "Locked", "Bob Member", "You, until")
		b.visit("/reviews/"+d.aliceSession, "Correct the OCR result", "merchant", "Complete review")
		// Fields by their labels, the engine's confidence read-only, words
		// wrapped whole.
		labels := browsertest.Eval[[]string](b.Tab, `[...document.querySelectorAll(".correction-row label")].map(l => l.firstChild.textContent)`)
		for _, want := range []string{"Merchant", "Total", "Items 1 › Name", "Items 2 › Qty"} {
			if !slices.Contains(labels, want) {
				t.Errorf("the review form's labels %q lack %q", labels, want)
			}
		}
		if n := browsertest.Eval[int](b.Tab, `[...document.querySelectorAll(".correction-row")].filter(r => /confidence/i.test(r.querySelector("label").textContent)).length`); n != 0 {
			t.Errorf("%d confidence scores are offered as fields to edit", n)
		}
		for _, want := range []string{"Confidence 62%", "Confidence 91%"} {
			if !b.has(want) {
				t.Errorf("the review form does not show %q", want)
			}
		}
		if wrap := browsertest.Eval[string](b.Tab, `getComputedStyle(document.querySelector(".correction-row label")).overflowWrap + " " + getComputedStyle(document.querySelector(".correction-row .original")).overflowWrap`); wrap != "break-word break-word" {
			t.Errorf("the review form's columns wrap with %q, want whole words (break-word)", wrap)
		}
		b.visit("/documents/"+d.lease.ID, "Being reviewed by", "Bob Member")
		b.visit("/groups/"+d.finance.ID, "API key", "Membership requests", "No one is waiting to join.")
		b.visit("/groups/"+d.permits.ID, "You are a member", "Bob Member")
		if b.has(`API key`) {
			t.Error("a member of Permits sees its API key section")
		}
		b.visit("/audit", "Report by day")
		b.visit("/admin/users", "Page not found")
		if b.has("System administration") {
			t.Error("a group admin sees the system administration menu")
		}
	})

	t.Run("member", func(t *testing.T) {
		b := newBrowser(t, w, 390, 844) // a phone
		b.audit = true
		b.signIn("bob")
		b.visit("/documents", "Office lease 2026.pdf")
		b.visit("/groups/"+d.finance.ID, "You are a member")
		b.visit("/profile", "Bob Member", "bob@govkit.test")
		b.visit("/audit", "Report by day") // bob administers Permits

		// The phone's menu opens from its button and Escape closes it,
		// giving the focus back to the button.
		b.Do(chromedp.Click(`.menu-toggle`))
		b.Until("the menu open", `document.getElementById("sidenav").classList.contains("open")`)
		b.Accessible("the open phone menu")
		b.Do(chromedp.KeyEvent(kb.Escape))
		b.Until("the menu closed by Escape", `!document.getElementById("sidenav").classList.contains("open") && document.activeElement.classList.contains("menu-toggle")`)
	})

	var refused []served
	for _, r := range w.served("")[seeded:] {
		if r.Status >= 400 {
			refused = append(refused, r)
		}
	}
	if len(refused) > 0 {
		t.Errorf("the UI made calls the server refused: %v", refused)
	}
	for _, r := range w.served("")[seeded:] {
		if strings.HasPrefix(r.Path, "/api/admin/") && r.Status != 200 {
			t.Errorf("admin route called without the right: %v", r)
		}
	}
}

// has reports whether the page's text contains s.
func (b *browserTab) has(s string) bool {
	return browsertest.Eval[bool](b.Tab, `document.body.textContent.includes(`+browsertest.JSString(s)+`)`)
}
