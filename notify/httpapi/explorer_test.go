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
// operations of the document and sends a request from the page, under the
// page's Content Security Policy, with no violation and no console error
// (internal/browsertest fails the test on any).
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
