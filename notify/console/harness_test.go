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
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/internal/browsertest"
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
		tree["outboundRequests"] = map[string]any{"allow": []any{"127.0.0.1"}} // the provider is on loopback
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

// browserTab is one headless Chromium (internal/browsertest) on this
// world.
type browserTab struct {
	*browsertest.Tab
	w *world
}

func newBrowser(t *testing.T, w *world, width, height int) *browserTab {
	t.Helper()
	return &browserTab{Tab: browsertest.New(t, browsertest.Options{Width: width, Height: height, Wait: wait, Lifetime: 8 * time.Minute}), w: w}
}

// untilText waits until the main text of the page contains s.
func (b *browserTab) untilText(s string) {
	b.T.Helper()
	b.Until("text "+s, `document.body && document.body.innerText.includes(`+browsertest.JSString(s)+`)`)
}

// byLabel is the control labelled text.
func byLabel(text string) chromedp.Search {
	return chromedp.Search(fmt.Sprintf(`//*[@id=//label[normalize-space(.)=%q]/@for]`, text))
}

func (b *browserTab) open(path string) {
	b.T.Helper()
	b.Do(chromedp.Navigate(b.w.base + path))
}

// click presses the button (or link) with that text.
func (b *browserTab) click(kind, text string) {
	b.T.Helper()
	b.Do(chromedp.WaitVisible(browsertest.ByText(kind, text)), chromedp.Click(browsertest.ByText(kind, text)))
}

// role waits for the signed-in console and returns the role it shows.
func (b *browserTab) role() string {
	b.T.Helper()
	b.Until("the signed-in console", `document.getElementById("role")`)
	return browsertest.Eval[string](b.Tab, `document.getElementById("role").textContent`)
}

// navItems are the labels of the side navigation's console pages.
func (b *browserTab) navItems() []string {
	b.T.Helper()
	return browsertest.Eval[[]string](b.Tab, `[...document.querySelectorAll("#sidenav ul:first-of-type a")].map(a => a.textContent.trim())`)
}

// setText puts text into the textarea or input labelled label at once (a
// JSON document is long to type key by key) and tells the page, as typing
// would.
func (b *browserTab) setText(label, text string) {
	b.T.Helper()
	b.Do(chromedp.WaitVisible(byLabel(label)))
	ok := browsertest.Eval[bool](b.Tab, `(() => {
		const l = [...document.querySelectorAll("label")].find(l => l.textContent.trim() === `+browsertest.JSString(label)+`);
		const el = l && document.getElementById(l.htmlFor);
		if (!el) return false;
		const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
		Object.getOwnPropertyDescriptor(proto, "value").set.call(el, `+browsertest.JSString(text)+`);
		el.dispatchEvent(new Event("input", { bubbles: true }));
		return true;
	})()`)
	if !ok {
		b.T.Fatalf("no control labelled %q\npage: %s", label, b.Snippet())
	}
}

// keys sends key presses to the focused element.
func (b *browserTab) keys(k string) {
	b.T.Helper()
	b.Do(chromedp.KeyEvent(k))
}

// focused describes the focused element: its id, else its text.
func (b *browserTab) focused() string {
	b.T.Helper()
	return browsertest.Eval[string](b.Tab, `(document.activeElement.id || document.activeElement.textContent || "").trim()`)
}

// screenshot writes docs/screenshots/console-<name>.png, the README's
// pictures, when GOVKIT_SCREENSHOTS=1.
func (b *browserTab) screenshot(name string) {
	b.T.Helper()
	if os.Getenv("GOVKIT_SCREENSHOTS") != "1" {
		return
	}
	// The focus ring of the last click is not part of the page's look.
	browsertest.Eval[bool](b.Tab, `(document.activeElement && document.activeElement.blur && document.activeElement.blur(), window.scrollTo(0, 0), true)`)
	png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.T.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "screenshots", "console-"+name+".png"), png, 0o644); err != nil {
		b.T.Fatal(err)
	}
}
