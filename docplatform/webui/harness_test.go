package webui_test

import (
	"context"
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
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/dev"
	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/internal/browsertest"
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

// browserTab is one headless Chromium (internal/browsertest) on this
// world.
type browserTab struct {
	*browsertest.Tab
	w *world
	// audit makes visit check each page with axe-core at both sizes.
	audit bool
}

func newBrowser(t *testing.T, w *world, width, height int) *browserTab {
	t.Helper()
	return &browserTab{Tab: browsertest.New(t, browsertest.Options{Width: width, Height: height, Wait: wait}), w: w}
}

// untilServer waits for a condition on what the server logged.
func (b *browserTab) untilServer(what string, cond func() bool) {
	b.T.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			b.T.Fatalf("waited %v for %s; served %v\npage: %s", wait, what, b.w.served(""), b.Snippet())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// untilText waits until the page's visible text contains s.
func (b *browserTab) untilText(s string) {
	b.T.Helper()
	b.Until("text "+s, `document.body && document.body.textContent.includes(`+browsertest.JSString(s)+`)`)
}

func (b *browserTab) open(path string) {
	b.T.Helper()
	b.Do(chromedp.Navigate(b.w.base + path))
}

// signIn goes through the signed-out home's Sign in button and the
// provider's login form, and waits for the signed-in page.
func (b *browserTab) signIn(username string) {
	b.T.Helper()
	u := b.w.users[username]
	b.open("/")
	b.Until("the Sign in button", `[...document.querySelectorAll("a")].some(a => a.textContent.trim() === "Sign in" && a.getAttribute("href") === "/api/auth/login")`)
	b.Do(chromedp.Click(browsertest.ByText("a", "Sign in")))
	b.Do(chromedp.WaitVisible(chromedp.ID("username")))
	b.Do(
		chromedp.SendKeys(chromedp.ID("username"), u.Username),
		chromedp.SendKeys(chromedp.ID("password"), u.Password),
		chromedp.Click(chromedp.CSS(`button[name="login"]`)),
	)
	b.Until("the signed-in page", `document.getElementById("signed-in-as")`)
	b.untilText(u.Name)
}

// cookie returns the browser's cookie of that name ("" when none).
func (b *browserTab) cookie(name string) string {
	b.T.Helper()
	res, err := chromedp.Call(b.Ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.w.base + "/", b.w.base + "/api/auth/refresh", b.w.base + "/api/auth/logout"}})
	if err != nil {
		b.T.Fatal(err)
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
	b.T.Helper()
	if _, err := chromedp.Call(b.Ctx, network.DeleteCookies, network.DeleteCookiesParams{Name: name, URL: b.w.base + path, Path: path}); err != nil {
		b.T.Fatal(err)
	}
	if b.cookie(name) != "" {
		b.T.Fatalf("cookie %s still there", name)
	}
}

// setCookie replaces a cookie's value, keeping its path and flags.
func (b *browserTab) setCookie(name, path, value string) {
	b.T.Helper()
	if _, err := chromedp.Call(b.Ctx, network.SetCookie, network.SetCookieParams{Name: name, Value: value, URL: b.w.base + path, Path: path, HTTPOnly: new(true), SameSite: network.CookieSameSiteLax}); err != nil {
		b.T.Fatal(err)
	}
}

// setVisible hides the page (by minimising its window, which headless
// Chromium reports to the page as document.visibilityState "hidden") or
// shows it again, and waits until the page sees it.
func (b *browserTab) setVisible(visible bool) {
	b.T.Helper()
	win, err := chromedp.Call(b.Ctx, browser.GetWindowForTarget, browser.GetWindowForTargetParams{})
	if err != nil {
		b.T.Fatal(err)
	}
	state, want := browser.WindowStateMinimized, "hidden"
	if visible {
		state, want = browser.WindowStateNormal, "visible"
	}
	if _, err := chromedp.Call(b.Ctx, browser.SetWindowBounds, browser.SetWindowBoundsParams{WindowID: win.WindowID, Bounds: &browser.Bounds{WindowState: state}}); err != nil {
		b.T.Fatal(err)
	}
	b.Until("the page "+want, `document.visibilityState === "`+want+`"`)
}

// storageHoldsNoToken checks the promise that the UI keeps no token in
// web storage: nothing shaped like a JWT, nor any cookie value.
func (b *browserTab) storageHoldsNoToken() {
	b.T.Helper()
	dump := browsertest.Eval[string](b.Tab, `JSON.stringify({local: {...localStorage}, session: {...sessionStorage}})`)
	if strings.Contains(dump, "eyJ") {
		b.T.Errorf("web storage holds something JWT-shaped: %s", dump)
	}
	for _, name := range []string{"access_token", "refresh_token", "id_token", "csrf_token"} {
		if v := b.cookie(name); v != "" && strings.Contains(dump, v) {
			b.T.Errorf("web storage holds the %s cookie's value: %s", name, dump)
		}
	}
	for _, word := range []string{"token", "Bearer"} {
		if strings.Contains(strings.ToLower(dump), strings.ToLower(word)) {
			b.T.Errorf("web storage mentions %q: %s", word, dump)
		}
	}
}

// downloadsTo makes the browser save downloads in dir.
func (b *browserTab) downloadsTo(dir string) {
	b.T.Helper()
	if _, err := chromedp.CallBrowser(b.Ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}); err != nil {
		b.T.Fatal(err)
	}
}

// untilFile waits for a finished download named name in dir.
func (b *browserTab) untilFile(dir, name string) []byte {
	b.T.Helper()
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
			b.T.Fatalf("waited %v for the download %s in %s", wait, name, dir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
