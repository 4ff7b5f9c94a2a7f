package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/internal/testsvc"
)

// recordViolations runs before any script of a page and collects the
// page's Content-Security-Policy violations (the browser's own report).
const recordViolations = `window.__csp = []; document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`

// The API documentation page loads in a real browser under the platform's
// CSP, with no violation and no console error, and renders every route.
func TestDocsPageInBrowser(t *testing.T) {
	chrome := testsvc.RequireChromium(t)
	rw := newRWorld(t, sqliteStore)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	var mu sync.Mutex
	var problems []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				problems = append(problems, fmt.Sprintf("console %s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+ev.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Source == cdplog.EntrySourceSecurity {
				problems = append(problems, fmt.Sprintf("log %s/%s: %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text))
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	_, err = chromedp.Call(ctx, cdplog.Enable, cdp.Empty{})
	must(t, err)
	_, err = chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
	must(t, err)
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordViolations})
	must(t, err)
	must(t, chromedp.Do(ctx,
		chromedp.Navigate(rw.url("/api/docs")),
		chromedp.WaitVisible(`details.op`),
		chromedp.Click(`details.op summary`),
	))
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	must(t, err)
	violations, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp`))
	must(t, err)
	mu.Lock()
	got := append([]string(nil), problems...)
	mu.Unlock()
	if len(violations) > 0 || len(got) > 0 {
		t.Fatalf("CSP violations %v, console problems %v", violations, got)
	}
	for _, want := range []string{"/api/documents/{id}/content", "Upload a document", "/api/groups/{groupId}/members/{userId}", "system admin", "group (ADMIN, groupId from path)", "/api/auth/login", "OpenAPI 3.1"} {
		if !strings.Contains(text, want) {
			t.Errorf("page does not show %q", want)
		}
	}

	t.Run("the check itself sees a violation: an injected inline script is refused and reported", func(t *testing.T) {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[any](`(() => { const s = document.createElement("script"); s.textContent = "window.__ran = 1"; document.body.appendChild(s); return null; })()`))
		must(t, err)
		// The report is an event the browser fires soon after; wait for it
		// with a generous bound (this is not a speed check).
		var after []string
		for deadline := time.Now().Add(10 * time.Second); len(after) == 0 && time.Now().Before(deadline); {
			after, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp`))
			must(t, err)
			if len(after) == 0 {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if len(after) == 0 {
			t.Fatal("an inline script ran or went unreported: the violation check would miss real violations")
		}
	})
}
