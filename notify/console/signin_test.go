package console_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/govkit/govkit/internal/browsertest"
)

// signInPage waits for the sign-in page.
func (b *browserTab) signInPage() {
	b.T.Helper()
	b.Until("the sign-in page", `document.getElementById("page-title") === null && [...document.querySelectorAll("h1")].some(h => h.textContent === "Notification console")`)
}

func (b *browserTab) signOut() {
	b.T.Helper()
	b.click("button", "Sign out")
	b.signInPage()
	if got := browsertest.Eval[string](b.Tab, `JSON.stringify({...sessionStorage})`); strings.Contains(got, "credential") {
		b.T.Errorf("the credential is still kept after signing out: %s", got)
	}
}

// TestSignInMethods signs in from an address that is not an admin's: with
// an administrator's email and password, with an access token, and with
// OIDC (authorization code and PKCE against the development provider),
// whose user is an AuthenticatedUser and sees only what that role may.
func TestSignInMethods(t *testing.T) {
	w := newWorld(t, worldOptions{oidc: true})
	var admin struct{ ID string }
	w.api("POST", "/administrators", map[string]any{"email": "ops@example.com", "password": "0ps-Admin!secret"}, &admin)
	var tok struct{ ID string }
	w.api("POST", "/administrators/"+admin.ID+"/access-tokens", map[string]any{"name": "pasted"}, &tok)
	// Someone else's subscription, which alice must not see.
	w.api("POST", "/subscriptions", map[string]any{"serviceName": "news", "channel": "email", "userChannelId": "other@example.com", "state": "confirmed", "userId": "someone-else"}, nil)

	b := newBrowser(t, w, 1280, 900)
	if !w.hasConsoleEndpoints() {
		b.Expect(`/api/console/stats`)
	}
	b.open("/")
	b.signInPage()
	if !browsertest.Eval[bool](b.Tab, `[...document.querySelectorAll("button")].some(x => x.textContent.trim() === "Sign in with OIDC")`) {
		t.Fatal("OIDC is configured but the sign-in page offers no OIDC sign-in")
	}

	b.screenshot("signin")
	b.Accessible("the sign-in page")

	// A wrong password is refused in words.
	b.Expect(`status of 401`)
	b.setText("Email", "ops@example.com")
	b.setText("Password", "wrong-password")
	b.click("button", "Sign in")
	b.Until("the refusal", `document.querySelector(".note-error")`)
	if msg := browsertest.Eval[string](b.Tab, `document.querySelector(".note-error").textContent`); !strings.Contains(msg, "Could not sign in") || !strings.Contains(msg, "401") {
		t.Errorf("the refusal reads %q", msg)
	}

	// Email and password, from the keyboard: type, Tab, type, Enter.
	b.setText("Email", "")
	b.setText("Password", "")
	b.Do(chromedp.Focus(byLabel("Email")), chromedp.KeyEvent("ops@example.com"), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("0ps-Admin!secret"), chromedp.KeyEvent(kb.Enter))
	if got := b.role(); got != "Administrator" {
		t.Fatalf("role after log-in %q, want Administrator", got)
	}
	if got := b.navItems(); !slices.Contains(got, "Administrators") || !slices.Contains(got, "Configurations") {
		t.Errorf("an administrator's navigation lacks pages: %v", got)
	}
	b.untilText("with email and password")
	// The credential stays in this tab across a reload, and is never in
	// the address.
	b.open("/subscriptions")
	if got := b.role(); got != "Administrator" {
		t.Fatalf("role after a reload %q, want Administrator", got)
	}
	b.untilText("other@example.com")
	// The password sign-in's token ends with loginTokenTtlHours (8 by
	// default), and the console knows when.
	if left := browsertest.Eval[float64](b.Tab, `JSON.parse(sessionStorage.getItem("notify-console.credential")).expires - Date.now()`); left < 7.9*3600e3 || left > 8*3600e3 {
		t.Errorf("the kept credential ends in %.0f ms, want 8 hours", left)
	}
	tokenNames := func() []string {
		var toks []struct{ Name string }
		w.api("GET", "/administrators/"+admin.ID+"/access-tokens", nil, &toks)
		var names []string
		for _, x := range toks {
			names = append(names, x.Name)
		}
		return names
	}
	if !slices.Contains(tokenNames(), "console") {
		t.Fatalf("no console token on the server: %v", tokenNames())
	}
	b.signOut()
	// Sign out deleted it on the server, not only in the tab.
	if names := tokenNames(); slices.Contains(names, "console") {
		t.Errorf("Sign out left the console's token on the server: %v", names)
	}

	// A pasted access token.
	b.setText("Access token", tok.ID)
	b.click("button", "Use access token")
	if got := b.role(); got != "Administrator" {
		t.Fatalf("role with the access token %q, want Administrator", got)
	}
	b.untilText("with an access token")
	b.signOut()
	// A pasted token was made on purpose, maybe for a script: signing out
	// forgets it here and leaves it on the server.
	if names := tokenNames(); !slices.Contains(names, "pasted") {
		t.Errorf("Sign out deleted a pasted token: %v", names)
	}

	// A token the API does not know is refused in words.
	b.setText("Access token", strings.Repeat("x", 64))
	b.click("button", "Use access token")
	b.Until("the refusal", `document.querySelector(".note-error")`)

	// OIDC: the provider's form, back to /oidc-callback, the code
	// exchanged from the browser; alice is an AuthenticatedUser.
	b.click("button", "Sign in with OIDC")
	b.Do(chromedp.WaitVisible(chromedp.ID("username")))
	b.Do(
		chromedp.SendKeys(chromedp.ID("username"), "alice"),
		chromedp.SendKeys(chromedp.ID("password"), "Alice-123"),
		chromedp.Click(chromedp.CSS(`button[name="login"]`)),
	)
	if got := b.role(); got != "Signed-in user" {
		t.Fatalf("role after OIDC sign-in %q, want Signed-in user", got)
	}
	if href := browsertest.Eval[string](b.Tab, `location.href`); strings.Contains(href, "code=") || strings.Contains(href, "oidc-callback") {
		t.Errorf("the address still holds the callback: %s", href)
	}
	if kept := browsertest.Eval[string](b.Tab, `JSON.stringify({...sessionStorage})`); !strings.Contains(kept, "Bearer ") {
		t.Errorf("no bearer token kept in this tab: %s", kept)
	}
	if got, want := b.navItems(), []string{"Subscriptions", "Notifications"}; !slices.Equal(got, want) {
		t.Errorf("a signed-in user's navigation is %v, want %v", got, want)
	}
	b.untilText("Your subscriptions.")
	b.Until("the list", `document.querySelector(".empty, table")`)
	if browsertest.Eval[bool](b.Tab, `document.body.innerText.includes("other@example.com")`) {
		t.Error("a signed-in user sees someone else's subscription")
	}
	if browsertest.Eval[bool](b.Tab, `[...document.querySelectorAll("button")].some(x => x.textContent.trim() === "Compose")`) {
		t.Error("a signed-in user is offered to compose notifications")
	}
	// Their own subscription, made in the console, is theirs to see.
	b.click("button", "New subscription")
	b.setText("Record (JSON)", `{"serviceName": "news", "channel": "email", "userChannelId": "alice@example.com"}`)
	b.click("button", "Create subscription")
	b.untilText("Subscription created.")
	if browsertest.Eval[string](b.Tab, `document.querySelector("#signed-in-as small").textContent`) == "signed in with OIDC" {
		// The provider's access token names no one (no email or
		// preferred_username claim): the API's own-record rule has no
		// name to match, so nothing is listed as the user's own.
		t.Log("the OIDC user has no securityId: their own subscription is not checked")
	} else {
		b.untilText("alice@example.com")
	}
	b.Accessible("a user's subscriptions")
	b.open("/administrators")
	b.untilText("This page is for administrators.")
	b.Accessible("an administrators' page refused")
	b.signOut()
}
