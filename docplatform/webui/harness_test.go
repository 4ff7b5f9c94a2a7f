package webui_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/dev"
	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/internal/testsvc"
)

// These tests drive the web UI in a real headless Chromium against the real
// stack of `govkit dev` (development OpenID provider, platform, SQLite),
// sign in through the provider's form, and count what reaches the server in
// the platform's own request log. Every console message, uncaught exception,
// browser log error and Content-Security-Policy violation fails the test
// that saw it, unless the test names it as expected (the 401s it provokes).
// Waits are on conditions with generous deadlines, never on durations.

// wait is the deadline of one condition; none is a speed check.
const wait = 60 * time.Second

// served is one request as the platform logged it.
type served struct {
	Method, Path string
	Status       int
}

// requestLog is the platform's slog handler in these tests: it keeps the
// one line the platform writes per request, and passes warnings on to the
// test log.
type requestLog struct {
	t    *testing.T
	mu   *sync.Mutex
	reqs *[]served
}

func (l requestLog) Enabled(context.Context, slog.Level) bool { return true }
func (l requestLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l requestLog) WithGroup(string) slog.Handler            { return l }

func (l requestLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "request" {
		if r.Level >= slog.LevelWarn && !strings.Contains(r.Message, "REDIS_URL") {
			l.t.Logf("server %s: %s", r.Level, r.Message)
		}
		return nil
	}
	var s served
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "method":
			s.Method = a.Value.String()
		case "path":
			s.Path = a.Value.String()
		case "status":
			s.Status = int(a.Value.Int64())
		}
		return true
	})
	l.mu.Lock()
	*l.reqs = append(*l.reqs, s)
	l.mu.Unlock()
	return nil
}

// world is a running dev stack with its demo users.
type world struct {
	t     *testing.T
	stack *dev.Stack
	base  string
	users map[string]devidp.User
	mu    sync.Mutex
	reqs  []served
}

type worldOptions struct {
	tokenLifetime time.Duration
}

func newWorld(t *testing.T, o worldOptions) *world {
	t.Helper()
	w := &world{t: t, users: map[string]devidp.User{}}
	// Budgets are raised through their variables: a browser test signs in,
	// reloads and refreshes more often than the defaults allow one address.
	getenv := func(k string) string {
		switch k {
		case "THROTTLE_GLOBAL_LIMIT", "THROTTLE_AUTH_LIMIT", "THROTTLE_AUTH_REFRESH_LIMIT":
			return "100000"
		}
		return ""
	}
	log := slog.New(requestLog{t: t, mu: &w.mu, reqs: &w.reqs})
	s, err := dev.Start(context.Background(), dev.Options{
		DataDir: t.TempDir(), PlatformPort: "0", ProviderPort: "0",
		Logger: log, Getenv: getenv, TokenLifetime: o.tokenLifetime,
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	w.stack, w.base = s, s.Platform.URL
	for _, u := range s.Users {
		w.users[u.Username] = u
	}
	return w
}

// served returns the requests logged so far whose path is path ("" for
// all), in the order they finished.
func (w *world) served(path string) []served {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []served
	for _, r := range w.reqs {
		if path == "" || r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func (w *world) refreshes() int { return len(w.served("/api/auth/refresh")) }

// user makes sure a demo user has a row (as after a first sign-in), so
// that groups can be set up for them before the browser signs in.
func (w *world) user(name string) devidp.User {
	w.t.Helper()
	u, ok := w.users[name]
	if !ok {
		w.t.Fatalf("no demo user %s", name)
	}
	if _, err := w.stack.Platform.Store.UpsertUser(context.Background(), docplatform.User{ID: u.Subject, Email: u.Email, Name: u.Name, PreferredUsername: u.Username}); err != nil {
		w.t.Fatal(err)
	}
	return u
}

// group creates a group with the given members (username → role).
func (w *world) group(name string, members map[string]docplatform.Role) docplatform.Group {
	w.t.Helper()
	ctx := context.Background()
	admin := w.user("admin")
	g, err := w.stack.Platform.Store.CreateGroup(ctx, name, "The "+name+" team's documents", admin.Subject)
	if err != nil {
		w.t.Fatal(err)
	}
	for username, role := range members {
		if _, err := w.stack.Platform.Store.ChangeMembership(ctx, g.ID, w.user(username).Subject, role); err != nil {
			w.t.Fatal(err)
		}
	}
	return g
}

// client is a Go HTTP client with a cookie jar, signed in through the
// provider's form as a browser would be; it seeds data through the API.
type client struct {
	w *world
	c *http.Client
}

var requestIDField = regexp.MustCompile(`name="authRequestID" value="([^"]+)"`)

func (w *world) signedInClient(username string) *client {
	w.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(w.base + "/api/auth/login")
	if err != nil {
		w.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := requestIDField.FindSubmatch(body)
	if m == nil {
		w.t.Fatalf("no login form at %s", resp.Request.URL)
	}
	u := w.users[username]
	resp, err = c.PostForm(w.stack.Provider.Issuer()+"/login", url.Values{"authRequestID": {string(m[1])}, "username": {u.Username}, "password": {u.Password}, "login": {"1"}})
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.String() != w.base {
		w.t.Fatalf("login of %s ended at %s", username, resp.Request.URL)
	}
	return &client{w: w, c: c}
}

func (c *client) csrf() string {
	u, _ := url.Parse(c.w.base + "/")
	for _, ck := range c.c.Jar.Cookies(u) {
		if ck.Name == "csrf_token" {
			return ck.Value
		}
	}
	return ""
}

// browser is one headless Chromium with a fresh profile, and what went
// wrong in its pages.
type browserTab struct {
	t        *testing.T
	w        *world
	ctx      context.Context
	mu       sync.Mutex
	problems []string
	seen     []string // every message, expected ones included
	// expected are log entries a test provokes on purpose (a 401 before
	// the shared refresh); anything else is a problem.
	expected []*regexp.Regexp
}

// recordViolations runs before any script of every page and turns each
// CSP violation into a console error, which the listener below collects.
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
		chromedp.Flag("use-mock-keychain", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 5*time.Minute)
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
	if width < 500 {
		// Below the smallest window Chromium opens: a phone's viewport.
		b.do(chromedp.EmulateViewport(int64(width), int64(height), chromedp.EmulateMobile))
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
	b.seen = append(b.seen, p)
	for _, re := range b.expected {
		if re.MatchString(p) {
			return
		}
	}
	b.problems = append(b.problems, p)
}

// expect names log entries this test provokes on purpose.
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

// snippet is the start of the page's text, for failure messages.
func (b *browserTab) snippet() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "")`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	if len(s) > 1500 {
		s = s[:1500] + "…"
	}
	return s
}

// until polls a JavaScript condition (evaluated through the DevTools
// protocol, which the page's CSP does not restrict) until it is true.
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

// untilServer waits for a condition on what the server logged.
func (b *browserTab) untilServer(what string, cond func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			b.t.Fatalf("waited %v for %s; served %v\npage: %s", wait, what, b.w.served(""), b.snippet())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// untilText waits until the page's visible text contains s.
func (b *browserTab) untilText(s string) {
	b.t.Helper()
	b.until("text "+s, `document.body && document.body.textContent.includes(`+jsString(s)+`)`)
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// byText is an XPath selector for an element of a kind whose normalised
// text is text.
func byText(kind, text string) chromedp.Search {
	return chromedp.Search(fmt.Sprintf(`//%s[normalize-space(.)=%q]`, kind, text))
}

func (b *browserTab) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.w.base + path))
}

// signIn goes through the signed-out home's Sign in button and the
// provider's login form, and waits for the signed-in page.
func (b *browserTab) signIn(username string) {
	b.t.Helper()
	u := b.w.users[username]
	b.open("/")
	b.until("the Sign in button", `[...document.querySelectorAll("a")].some(a => a.textContent.trim() === "Sign in" && a.getAttribute("href") === "/api/auth/login")`)
	b.do(chromedp.Click(byText("a", "Sign in")))
	b.do(chromedp.WaitVisible(chromedp.ID("username")))
	b.do(
		chromedp.SendKeys(chromedp.ID("username"), u.Username),
		chromedp.SendKeys(chromedp.ID("password"), u.Password),
		chromedp.Click(chromedp.CSS(`button[name="login"]`)),
	)
	b.until("the signed-in page", `document.getElementById("signed-in-as")`)
	b.untilText(u.Name)
}

// cookie returns the browser's cookie of that name ("" when none).
func (b *browserTab) cookie(name string) string {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.w.base + "/", b.w.base + "/api/auth/refresh", b.w.base + "/api/auth/logout"}})
	if err != nil {
		b.t.Fatal(err)
	}
	for _, c := range res.Cookies {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// deleteCookie removes a cookie from the browser, as its expiry would.
func (b *browserTab) deleteCookie(name, path string) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, network.DeleteCookies, network.DeleteCookiesParams{Name: name, URL: b.w.base + path, Path: path}); err != nil {
		b.t.Fatal(err)
	}
	if b.cookie(name) != "" {
		b.t.Fatalf("cookie %s still there", name)
	}
}

// setCookie replaces a cookie's value, keeping its path and flags.
func (b *browserTab) setCookie(name, path, value string) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, network.SetCookie, network.SetCookieParams{Name: name, Value: value, URL: b.w.base + path, Path: path, HTTPOnly: new(true), SameSite: network.CookieSameSiteLax}); err != nil {
		b.t.Fatal(err)
	}
}

// setVisible hides the page (by minimising its window, which headless
// Chromium reports to the page as document.visibilityState "hidden") or
// shows it again, and waits until the page sees it.
func (b *browserTab) setVisible(visible bool) {
	b.t.Helper()
	win, err := chromedp.Call(b.ctx, browser.GetWindowForTarget, browser.GetWindowForTargetParams{})
	if err != nil {
		b.t.Fatal(err)
	}
	state, want := browser.WindowStateMinimized, "hidden"
	if visible {
		state, want = browser.WindowStateNormal, "visible"
	}
	if _, err := chromedp.Call(b.ctx, browser.SetWindowBounds, browser.SetWindowBoundsParams{WindowID: win.WindowID, Bounds: &browser.Bounds{WindowState: state}}); err != nil {
		b.t.Fatal(err)
	}
	b.until("the page "+want, `document.visibilityState === "`+want+`"`)
}

// storageHoldsNoToken checks the promise that the UI keeps no token in
// web storage: nothing shaped like a JWT, nor any cookie value.
func (b *browserTab) storageHoldsNoToken() {
	b.t.Helper()
	dump := evalJS[string](b, `JSON.stringify({local: {...localStorage}, session: {...sessionStorage}})`)
	if strings.Contains(dump, "eyJ") {
		b.t.Errorf("web storage holds something JWT-shaped: %s", dump)
	}
	for _, name := range []string{"access_token", "refresh_token", "id_token", "csrf_token"} {
		if v := b.cookie(name); v != "" && strings.Contains(dump, v) {
			b.t.Errorf("web storage holds the %s cookie's value: %s", name, dump)
		}
	}
	for _, word := range []string{"token", "Bearer"} {
		if strings.Contains(strings.ToLower(dump), strings.ToLower(word)) {
			b.t.Errorf("web storage mentions %q: %s", word, dump)
		}
	}
}

// downloadsTo makes the browser save downloads in dir.
func (b *browserTab) downloadsTo(dir string) {
	b.t.Helper()
	if _, err := chromedp.CallBrowser(b.ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}); err != nil {
		b.t.Fatal(err)
	}
}

// untilFile waits for a finished download named name in dir.
func (b *browserTab) untilFile(dir, name string) []byte {
	b.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		data, err := os.ReadFile(dir + "/" + name)
		if err == nil {
			// Chromium writes to a .crdownload file and renames it when done.
			entries, _ := os.ReadDir(dir)
			if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasSuffix(e.Name(), ".crdownload") }) {
				return data
			}
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("waited %v for the download %s in %s", wait, name, dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
