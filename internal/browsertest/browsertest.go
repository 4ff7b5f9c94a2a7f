// Package browsertest drives a headless Chromium for the web UIs' tests
// (docplatform/webui, notify/console). Each [Tab] is a browser of its own
// with a fresh profile. Every console message, uncaught exception, browser
// log error or warning and Content-Security-Policy violation its pages
// produce is a problem that fails the test at its end, unless the test
// named it with [Tab.Expect]. Waits are on conditions with a deadline that
// only guards against a hang, never on durations.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/internal/testsvc"
)

// Options size a [Tab] and bound its waits.
type Options struct {
	// Width and Height of the window; below 500 pixels wide (smaller than
	// the smallest window Chromium opens) the tab emulates a phone's
	// viewport of that size instead.
	Width, Height int
	// Wait is the deadline of one [Tab.Until]; default 60 s.
	Wait time.Duration
	// Lifetime bounds everything the tab does; default 5 minutes.
	Lifetime time.Duration
	// HostResolverRules are Chromium's --host-resolver-rules, e.g.
	// "MAP *.test 127.0.0.1": other names for the loopback servers of a
	// test (another site, a DNS-rebinding name) without a DNS server.
	HostResolverRules string
}

// Tab is one headless Chromium and what went wrong in its pages.
type Tab struct {
	T *testing.T
	// Ctx is the tab's chromedp context, for actions this package does not
	// wrap.
	Ctx           context.Context
	wait          time.Duration
	width, height int

	mu       sync.Mutex
	problems []string
	seen     []string // every message, expected ones included
	expected []*regexp.Regexp
}

// recordViolations runs before any script of every page and turns each CSP
// violation into a console error, which the listener collects.
const recordViolations = `document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation: " + e.violatedDirective + " blocked " + e.blockedURI));`

// New starts a headless Chromium (the test is skipped or failed, per
// testsvc.RequireChromium, where there is none) and checks its pages'
// problems when the test ends.
func New(t *testing.T, o Options) *Tab {
	t.Helper()
	chrome := testsvc.RequireChromium(t)
	if o.Wait == 0 {
		o.Wait = 60 * time.Second
	}
	if o.Lifetime == 0 {
		o.Lifetime = 5 * time.Minute
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("use-mock-keychain", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(o.Width, o.Height),
	}
	if o.HostResolverRules != "" {
		opts = append(opts, chromedp.Flag("host-resolver-rules", o.HostResolverRules))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, o.Lifetime)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
	})
	b := &Tab{T: t, Ctx: ctx, wait: o.Wait, width: o.Width, height: o.Height}
	if err := chromedp.Listen(ctx, b.onEvent); err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); return err },
		func() error { _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); return err },
		func() error { _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); return err },
		func() error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordViolations})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if o.Width < 500 {
		b.Do(chromedp.EmulateViewport(int64(o.Width), int64(o.Height), chromedp.EmulateMobile))
	}
	t.Cleanup(b.checkProblems)
	return b
}

func (b *Tab) onEvent(ev any) {
	var p string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range ev.Args {
			if a.Value != nil {
				args = append(args, string(a.Value))
			} else {
				args = append(args, a.Description)
			}
		}
		p = fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
	case *runtime.EventExceptionThrown:
		p = "uncaught exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			p += " " + ev.ExceptionDetails.Exception.Description
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning || ev.Entry.Source == cdplog.EntrySourceSecurity {
			p = fmt.Sprintf("browser log %s/%s: %s %s", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
		}
	}
	if p == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seen = append(b.seen, p)
	for _, re := range b.expected {
		if re.MatchString(p) {
			return
		}
	}
	b.problems = append(b.problems, p)
}

// Expect names log entries (a regular expression) the test provokes on
// purpose, such as a refused request's status in the browser log.
func (b *Tab) Expect(pattern string) {
	b.mu.Lock()
	b.expected = append(b.expected, regexp.MustCompile(pattern))
	b.mu.Unlock()
}

// Saw reports whether any message so far, expected ones included, matches.
func (b *Tab) Saw(match func(message string) bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.ContainsFunc(b.seen, match)
}

// Seen returns every message so far, expected ones included.
func (b *Tab) Seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.seen)
}

func (b *Tab) checkProblems() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		b.T.Errorf("the pages reported %d problem(s):\n  %s", len(b.problems), strings.Join(b.problems, "\n  "))
	}
}

// Do runs chromedp actions; a failure ends the test with the page's text.
func (b *Tab) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.T.Helper()
	if err := chromedp.Do(b.Ctx, steps...); err != nil {
		b.T.Fatalf("browser: %v\npage: %s", err, b.Snippet())
	}
}

// Eval evaluates a JavaScript expression in the page (through the
// DevTools protocol, which the page's CSP does not restrict).
func Eval[T any](b *Tab, expr string) T {
	b.T.Helper()
	v, err := chromedp.Run(b.Ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.T.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// Snippet is the page's address and the start of its text, for failure
// messages.
func (b *Tab) Snippet() string {
	ctx, cancel := context.WithTimeout(b.Ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "")`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	if len(s) > 2000 {
		s = s[:2000] + "…"
	}
	return s
}

// Until polls a JavaScript condition until it is true.
func (b *Tab) Until(what, cond string) {
	b.T.Helper()
	deadline := time.Now().Add(b.wait)
	for {
		ok, err := chromedp.Run(b.Ctx, chromedp.Evaluate[bool](`!!(`+cond+`)`))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.T.Fatalf("waited %v for %s (%s): last error %v\npage: %s", b.wait, what, cond, err, b.Snippet())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// JSString quotes s as a JavaScript string literal.
func JSString(s string) string {
	r, _ := json.Marshal(s)
	return string(r)
}

// ByText is an XPath selector for an element of a kind whose normalised
// text is text.
func ByText(kind, text string) chromedp.Search {
	return chromedp.Search(fmt.Sprintf(`//%s[normalize-space(.)=%q]`, kind, text))
}
