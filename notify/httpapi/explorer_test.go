package httpapi_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// TestExplorerInBrowser loads the explorer page in Chromium: it lists the
// operations of the document and sends a request from the page, under the
// page's Content Security Policy.
func TestExplorerInBrowser(t *testing.T) {
	chrome := testsvc.RequireChromium(t)
	e := apitest.Start(t, apitest.Options{})
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/api/explorer")); err != nil {
		t.Fatal(err)
	}
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
