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

// The documentation page sends requests: with the signed-in session (the
// cookies, and X-CSRF-Token on writes, added by the page) and with an API
// key typed into it.
func TestDocsPageTriesRequests(t *testing.T) {
	chrome := testsvc.RequireChromium(t)
	rw := newRWorld(t, sqliteStore)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

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
