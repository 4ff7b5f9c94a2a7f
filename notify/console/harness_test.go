package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/httpapi"
	"github.com/govkit/govkit/notify/mailcatcher"
)

// These tests drive the console in a real headless Chromium against a real
// notification service: the HTTP server with the console mounted, the
// embedded document store and queue, mail and SMS to an in-process catcher,
// and for OIDC the development OpenID provider. Every console message,
// uncaught exception, browser log error and Content-Security-Policy
// violation fails the test that saw it, unless the test names it as
// expected. Waits are on conditions with generous deadlines (hang guards),
// never on durations.

// wait is the deadline of one condition; none is a speed check.
const wait = 90 * time.Second

// world is a running notification service for one test.
type world struct {
	t    *testing.T
	base string // http://127.0.0.1:port
	mail *mailcatcher.Catcher
	idp  *devidp.Server
	// admin is an HTTP client whose requests come from 127.0.0.2, an
	// admin address in worlds where the browser's 127.0.0.1 is not one.
	admin *http.Client
}

type worldOptions struct {
	// browserIsAdmin keeps 127.0.0.1 (the browser) among adminIps.
	browserIsAdmin bool
	// oidc starts the development provider with the public client
	// notify-console and configures notify's oidc against it.
	oidc bool
}

func newWorld(t *testing.T, o worldOptions) *world {
	t.Helper()
	testsvc.RequireChromium(t)
	ctx := context.Background()
	w := &world{t: t}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.base = "http://" + ln.Addr().String()

	w.mail = mailcatcher.New(mailcatcher.Options{})
	smtpAddr, stopMail, err := w.mail.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stopMail(context.Background()) })

	adminIPs := []any{"127.0.0.2"}
	if o.browserIsAdmin {
		adminIPs = append(adminIPs, "127.0.0.1")
	}
	tree := map[string]any{
		"host":     "127.0.0.1",
		"adminIps": adminIPs,
		"queue":    map[string]any{"connection": nil},
		"email":    map[string]any{"inboundSmtpServer": map[string]any{"domain": "localhost"}},
	}
	if o.oidc {
		w.idp, err = devidp.Start(ctx, "127.0.0.1:0", devidp.Config{
			Clients: []devidp.Client{{ID: "notify-console", ProfileInAccessToken: true, RedirectURIs: []string{w.base + "/oidc-callback"}}},
			Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.idp.Close() })
		tree["oidc"] = map[string]any{"discoveryUrl": w.idp.Issuer() + "/.well-known/openid-configuration", "clientId": "notify-console"}
	}
	cfg, err := config.New(tree)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(smtpAddr)
	p, _ := strconv.Atoi(port)
	app, err := httpapi.OpenApp(ctx, httpapi.AppOptions{
		Config:  cfg,
		DataDir: t.TempDir(),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		RSABits: 2048,
		ChannelOptions: channel.Options{
			SMTP: &email.SMTPConfig{Host: host, Port: p, IgnoreTLS: true, Name: "localhost"},
			SMS:  w.mail.SMSSender(),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: app.Server, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(c)
		_ = app.Server.Shutdown(c)
		_ = app.Close(c)
	})
	w.admin = &http.Client{
		Timeout:   60 * time.Second,
		Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext},
	}
	return w
}

// api calls the API as an administrator (from an admin address) and
// decodes the answer into out (nil: ignored). Bad statuses fail the test.
func (w *world) api(method, path string, body, out any) {
	w.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, w.base+"/api"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.admin.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		w.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			w.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// browserTab is one headless Chromium with a fresh profile, and what went
// wrong in its pages.
type browserTab struct {
	t        *testing.T
	w        *world
	ctx      context.Context
	mu       sync.Mutex
	problems []string
	expected []*regexp.Regexp
}

// recordViolations runs before every page's scripts and turns each CSP
// violation into a console error, which onEvent collects.
const recordViolations = `document.addEventListener("securitypolicyviolation", (e) => console.error("CSP violation: " + e.violatedDirective + " blocked " + e.blockedURI));`

func newBrowser(t *testing.T, w *world, width, height int) *browserTab {
	t.Helper()
	chrome := testsvc.RequireChromium(t)
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
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 8*time.Minute)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
	})
	b := &browserTab{t: t, w: w, ctx: ctx}
	if err := chromedp.Listen(ctx, b.onEvent); err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); return err },
		func() error { _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); return err },
		func() error {
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recordViolations})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(b.checkProblems)
	return b
}

func (b *browserTab) onEvent(ev any) {
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
	for _, re := range b.expected {
		if re.MatchString(p) {
			return
		}
	}
	b.problems = append(b.problems, p)
}

// expect names log entries the test provokes on purpose (a refused
// request's status in the browser log).
func (b *browserTab) expect(pattern string) {
	b.mu.Lock()
	b.expected = append(b.expected, regexp.MustCompile(pattern))
	b.mu.Unlock()
}

func (b *browserTab) checkProblems() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.problems) > 0 {
		b.t.Errorf("the pages reported %d problem(s):\n  %s", len(b.problems), strings.Join(b.problems, "\n  "))
	}
}

func (b *browserTab) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v\npage: %s", err, b.snippet())
	}
}

func evalJS[T any](b *browserTab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browserTab) snippet() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
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

// until polls a JavaScript condition (through the DevTools protocol,
// which the page's CSP does not restrict) until it is true.
func (b *browserTab) until(what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`!!(`+cond+`)`))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waited %v for %s (%s): last error %v\npage: %s", wait, what, cond, err, b.snippet())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// untilText waits until the main text of the page contains s.
func (b *browserTab) untilText(s string) {
	b.t.Helper()
	b.until("text "+s, `document.body && document.body.innerText.includes(`+jsString(s)+`)`)
}

func jsString(s string) string {
	r, _ := json.Marshal(s)
	return string(r)
}

// byText is an XPath selector for an element of a kind whose normalised
// text is text.
func byText(kind, text string) chromedp.Search {
	return chromedp.Search(fmt.Sprintf(`//%s[normalize-space(.)=%q]`, kind, text))
}

// byLabel is the control labelled text.
func byLabel(text string) chromedp.Search {
	return chromedp.Search(fmt.Sprintf(`//*[@id=//label[normalize-space(.)=%q]/@for]`, text))
}

func (b *browserTab) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.w.base + path))
}

// click presses the button (or link) with that text.
func (b *browserTab) click(kind, text string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(byText(kind, text)), chromedp.Click(byText(kind, text)))
}

// role waits for the signed-in console and returns the role it shows.
func (b *browserTab) role() string {
	b.t.Helper()
	b.until("the signed-in console", `document.getElementById("role")`)
	return evalJS[string](b, `document.getElementById("role").textContent`)
}

// navItems are the labels of the side navigation's console pages.
func (b *browserTab) navItems() []string {
	b.t.Helper()
	return evalJS[[]string](b, `[...document.querySelectorAll("#sidenav ul:first-of-type a")].map(a => a.textContent.trim())`)
}

// setText puts text into the textarea or input labelled label at once (a
// JSON document is long to type key by key) and tells the page, as typing
// would.
func (b *browserTab) setText(label, text string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(byLabel(label)))
	ok := evalJS[bool](b, `(() => {
		const l = [...document.querySelectorAll("label")].find(l => l.textContent.trim() === `+jsString(label)+`);
		const el = l && document.getElementById(l.htmlFor);
		if (!el) return false;
		const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
		Object.getOwnPropertyDescriptor(proto, "value").set.call(el, `+jsString(text)+`);
		el.dispatchEvent(new Event("input", { bubbles: true }));
		return true;
	})()`)
	if !ok {
		b.t.Fatalf("no control labelled %q\npage: %s", label, b.snippet())
	}
}

// keys sends key presses to the focused element.
func (b *browserTab) keys(k string) {
	b.t.Helper()
	b.do(chromedp.KeyEvent(k))
}

// focused describes the focused element: its id, else its text.
func (b *browserTab) focused() string {
	b.t.Helper()
	return evalJS[string](b, `(document.activeElement.id || document.activeElement.textContent || "").trim()`)
}

// screenshot writes docs/screenshots/console-<name>.png, the README's
// pictures, when GOVKIT_SCREENSHOTS=1.
func (b *browserTab) screenshot(name string) {
	b.t.Helper()
	if os.Getenv("GOVKIT_SCREENSHOTS") != "1" {
		return
	}
	// The focus ring of the last click is not part of the page's look.
	evalJS[bool](b, `(document.activeElement && document.activeElement.blur && document.activeElement.blur(), window.scrollTo(0, 0), true)`)
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "screenshots", "console-"+name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
