package httpapi_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/internal/browsertest"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// TestExplorerInBrowser loads the explorer page in Chromium: it lists the
// operations of the document, passes axe-core, and sends a request from
// the page, under the page's Content Security Policy, with no violation
// and no console error (internal/browsertest fails the test on any).
func TestExplorerInBrowser(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Width: 1280, Height: 900})
	ctx := b.Ctx
	e := apitest.Start(t, apitest.Options{})
	b.Do(chromedp.Navigate(e.URL + "/api/explorer"))
	poll := func(what, expr string, ok func(string) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			out, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
			if err != nil {
				t.Fatal(err)
			}
			if ok(out) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: page shows %q", what, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	poll("operations listed", `String(document.querySelectorAll("details.op").length)`, func(s string) bool {
		n, _ := strconv.Atoi(s)
		return n >= 30
	})
	// Every operation open, its fields labelled and its badge legible
	// (axe-core at a laptop's and a phone's width).
	browsertest.Eval[bool](b, `(document.querySelectorAll("details.op").forEach(d => d.open = true), true)`)
	b.Accessible("/api/explorer with every operation open")
	if n := browsertest.Eval[int](b, `document.querySelectorAll("details.op textarea:not([id]), details.op input:not([id])").length`); n != 0 {
		t.Errorf("%d fields of the explorer have no id for a label", n)
	}
	// open GET /api/health and send it from the page
	_, err := chromedp.Run(ctx, chromedp.Evaluate[any](`(() => {
		const op = [...document.querySelectorAll("details.op")].find(d => d.querySelector("summary").textContent.includes("/api/health"));
		op.open = true;
		op.querySelector("button").click();
		return null;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	poll("health answer", `[...document.querySelectorAll("details.op")].find(d => d.querySelector("summary").textContent.includes("/api/health")).querySelector("pre").textContent`,
		func(out string) bool { return strings.HasPrefix(out, "200") && strings.Contains(out, `"status": "ok"`) })
}

// TestExplorerFramedBySameOrigin shows the explorer in an iframe of a page
// of its own origin, as NotifyBC's console does on its "API Explorer"
// page; the console page itself may not be framed by anyone.
func TestExplorerFramedBySameOrigin(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Width: 1280, Height: 900})
	e := apitest.Start(t, apitest.Options{})
	b.Do(chromedp.Navigate(e.URL + "/"))
	b.Until("the console page", `document.querySelector("#app")`)
	browsertest.Eval[bool](b, `(() => { const f = document.createElement("iframe"); f.id = "explorer"; f.title = "API explorer"; f.src = "/api/explorer"; document.body.appendChild(f); return true; })()`)
	b.Until("the framed explorer's operations", `(() => { const d = document.getElementById("explorer").contentDocument; return d && d.querySelectorAll("details.op").length >= 30; })()`)

	t.Run("the console itself is not framed", func(t *testing.T) {
		b.Expect(`Refused to display|frame-ancestors`)
		browsertest.Eval[bool](b, `(() => { const f = document.createElement("iframe"); f.id = "console"; f.src = "/subscriptions"; document.body.appendChild(f); return true; })()`)
		refused := func(m string) bool { return strings.Contains(m, "frame-ancestors") }
		// The refusal is a log entry the browser writes once it has the
		// answer; the bound only guards against a hang.
		for deadline := time.Now().Add(30 * time.Second); !b.Saw(refused) && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if !b.Saw(refused) {
			t.Fatalf("framing the console was not refused; saw %v", b.Seen())
		}
		if browsertest.Eval[bool](b, `(() => { try { const d = document.getElementById("console").contentDocument; return !!(d && d.querySelector("#app")); } catch (e) { return false; } })()`) {
			t.Error("the console's page shows inside a frame")
		}
	})
}
