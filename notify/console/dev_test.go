package console_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/httpapi"
)

// govkit dev's notify with its OpenID provider, as `govkit dev` runs
// them: from this machine (an admin address) the console is super
// administrator without signing in, and still offers "Sign in as someone
// else" (and the way back); bob signs in with OIDC and sees his demo
// subscription, and not alice's.
func TestDevSignInAsSomeoneElse(t *testing.T) {
	testsvc.RequireChromium(t)
	ctx := context.Background()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return ln
	}
	ln := listen()
	idp, err := devidp.Start(ctx, "127.0.0.1:0", devidp.Config{
		Clients: []devidp.Client{{ID: httpapi.DevConsoleClientID, ProfileInAccessToken: true, RedirectURIs: httpapi.DevConsoleRedirectURIs(ln.Addr().String())}},
		Logger:  discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idp.Close() })
	d, err := httpapi.StartDev(ctx, httpapi.DevOptions{
		DataDir: t.TempDir(), Host: "127.0.0.1", RSABits: 2048, Demo: true,
		Listener: ln, SMTPListener: listen(), Logger: discard, MailLogger: discard,
		OIDC: &httpapi.DevOIDC{DiscoveryURL: idp.Issuer() + "/.well-known/openid-configuration", Issuer: idp.Issuer(), ClientID: httpapi.DevConsoleClientID, Admins: []string{"admin@govkit.test"}},
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = d.Stop(c)
	})

	b := newBrowser(t, &world{t: t, base: d.URL}, 1280, 900)
	b.open("/")
	if got := b.role(); got != "Super administrator" {
		t.Fatalf("role at the admin address %q", got)
	}
	b.Accessible("the dashboard with Sign in as someone else")
	b.click("button", "Sign in as someone else")
	b.signInPage()
	b.Accessible("the sign-in page opened from an admin address")
	b.click("button", "Back to the console as super administrator")
	if got := b.role(); got != "Super administrator" {
		t.Fatalf("role after going back %q", got)
	}

	b.click("button", "Sign in as someone else")
	b.signInPage()
	b.click("button", "Sign in with OIDC")
	b.Do(chromedp.WaitVisible(chromedp.ID("username")))
	b.Do(
		chromedp.SendKeys(chromedp.ID("username"), "bob"),
		chromedp.SendKeys(chromedp.ID("password"), "Bob-123"),
		chromedp.Click(chromedp.CSS(`button[name="login"]`)),
	)
	if got := b.role(); got != "Signed-in user" {
		t.Fatalf("role after bob's OIDC sign-in %q, want Signed-in user", got)
	}
	b.open("/subscriptions")
	b.role()
	b.untilText("bob@govkit.test")
	b.Until("the list", `document.querySelector("table")`)
	if b.has("alice@govkit.test") || b.has("+12505550101") {
		t.Error("bob sees another person's demo subscription")
	}

	// On a phone the menu opens from its button and Escape closes it,
	// giving the focus back to the button.
	b.Do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.Do(chromedp.Click(`.menu-toggle`))
	b.Until("the menu open", `document.getElementById("sidenav").classList.contains("open")`)
	b.Do(chromedp.KeyEvent(kb.Escape))
	b.Until("the menu closed by Escape", `!document.getElementById("sidenav").classList.contains("open") && document.activeElement.classList.contains("menu-toggle")`)
}
