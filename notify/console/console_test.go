package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/govkit/govkit/internal/browsertest"
)

// stats tells whether the server has the console's own endpoints
// (GET /console/stats, POST /console/preview).
func (w *world) hasConsoleEndpoints() bool {
	resp, err := w.admin.Get(w.base + "/api/console/stats")
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// subscribe makes n confirmed email subscriptions to service.
func (w *world) subscribe(service string, n int) []string {
	w.t.Helper()
	var ids []string
	for i := range n {
		var s struct{ ID string }
		w.api("POST", "/subscriptions", map[string]any{"serviceName": service, "channel": "email", "userChannelId": fmt.Sprintf("reader%d@example.com", i), "state": "confirmed", "data": map[string]any{"n": i}}, &s)
		ids = append(ids, s.ID)
	}
	return ids
}

// TestAdminAddress is an operator's day from an admin address: no sign-in;
// every page without console errors or CSP violations; a subscription
// created (after the API's validation error shown in place), a broadcast
// sent and watched until it finishes, a configuration created and edited,
// an administrator and an access token made; the fallback for deep links;
// keyboard use. With GOVKIT_SCREENSHOTS=1 it writes
// docs/screenshots/console-*.png.
func TestAdminAddress(t *testing.T) {
	w := newWorld(t, worldOptions{browserIsAdmin: true})
	// Subscribed before the first look at the figures, which the server
	// keeps for a few seconds.
	readers := w.subscribe("news", 25)
	full := w.hasConsoleEndpoints()
	b := newBrowser(t, w, 1280, 900)
	if !full {
		t.Log("the server has no /console/stats and /console/preview yet: the dashboard and preview are not checked")
		b.Expect(`/api/console/stats`)
	}
	shot := b.screenshot

	b.open("/")
	if got := b.role(); got != "Super administrator" {
		t.Fatalf("role shown %q, want Super administrator", got)
	}
	if got, want := b.navItems(), []string{"Dashboard", "Subscriptions", "Notifications", "Configurations", "Bounces", "Administrators"}; !slices.Equal(got, want) {
		t.Fatalf("navigation %v, want %v", got, want)
	}
	b.Until("the dashboard", `location.pathname === "/" && document.getElementById("page-title")?.textContent === "Dashboard"`)
	if browsertest.Eval[bool](b.Tab, `!!document.querySelector("button.btn-secondary") && [...document.querySelectorAll("button")].some(x => x.textContent.trim() === "Sign out")`) {
		t.Error("an admin address is offered Sign out, which it cannot do")
	}
	if full {
		b.untilText("Subscriptions by service and state")
		b.Until("the news row", `[...document.querySelectorAll("td")].some(td => td.textContent === "news")`)
		shot("dashboard")
		b.Accessible("the dashboard")
	}

	// Subscriptions: a bad record is refused with the API's words under
	// the editor; the corrected one is created and listed.
	b.click("a", "Subscriptions")
	b.Until("the heading focused", `document.activeElement && document.activeElement.id === "page-title"`)
	b.untilText("reader0@example.com")
	b.untilText("1–25 of 25")
	b.Accessible("the subscription list")
	b.click("button", "New subscription")
	b.Accessible("the subscription editor")
	b.Expect(`status of 400`)
	b.setText("Record (JSON)", `{"serviceName": "alerts", "channel": "pigeon", "userChannelId": "ops@example.com", "state": "confirmed"}`)
	b.click("button", "Create subscription")
	b.Until("the API's error in place", `document.querySelector(".json-field .field-error")`)
	msg := browsertest.Eval[string](b.Tab, `document.querySelector(".json-field .field-error").textContent`)
	if !strings.Contains(msg, "400") || !strings.Contains(strings.ToLower(msg), "channel") {
		t.Errorf("the validation error shown is %q; want the API's 400 naming channel", msg)
	}
	b.setText("Record (JSON)", `{"serviceName": "alerts", "channel": "email", "userChannelId": "ops@example.com", "state": "confirmed"}`)
	b.click("button", "Create subscription")
	b.untilText("Subscription created.")
	b.untilText("ops@example.com")
	var alerts []map[string]any
	w.api("GET", `/subscriptions?filter={"where":{"serviceName":"alerts"}}`, nil, &alerts)
	if len(alerts) != 1 || alerts[0]["userChannelId"] != "ops@example.com" || alerts[0]["state"] != "confirmed" {
		t.Fatalf("created subscriptions of alerts: %v", alerts)
	}
	// Filter and sort by the API's filter.
	b.setText("Service name", "alerts")
	b.click("button", "Apply filter")
	b.untilText("1–1 of 1")
	shot("subscriptions")

	// Notifications: a broadcast to news, with a preview, watched until
	// it has been sent to every reader.
	b.click("a", "Notifications")
	b.click("button", "Compose")
	if full {
		// The service name offers the services that have subscribers.
		b.Until("the services offered", `(() => { const l = [...document.querySelectorAll("label")].find(l => l.textContent.trim() === "Service name" && document.getElementById(l.htmlFor)?.closest("#compose-title, .editor")); const i = l && document.getElementById(l.htmlFor); return i && i.list && [...i.list.options].some(o => o.value === "news"); })()`)
	}
	b.setText("Service name", "news")
	b.setText("From", "news@example.com")
	b.setText("Subject", "Hello {subscription_id}")
	b.setText("Text body", "News for you.")
	if full {
		b.Until("the subscribers to choose", `[...document.querySelectorAll("option")].some(o => o.textContent.startsWith("reader3@example.com"))`)
		b.setText("Or a subscription id", readers[3])
		b.click("button", "Preview")
		b.Until("the preview", `document.querySelector(".preview-out")`)
		out := browsertest.Eval[string](b.Tab, `document.querySelector(".preview-out").textContent`)
		if !strings.Contains(out, "reader3@example.com") || !strings.Contains(out, "Hello "+readers[3]) {
			t.Errorf("the preview does not show the merged message for reader3: %q", out)
		}
		shot("compose")
		b.Accessible("compose with a preview")
	}
	b.click("button", "Send")
	b.Until("the progress panel", `document.getElementById("broadcast-progress")`)
	b.untilText("Finished: the broadcast is sent.")
	if got := browsertest.Eval[string](b.Tab, `document.getElementById("count-sent").textContent`); got != "25" {
		t.Errorf("sent count shown %q, want 25", got)
	}
	if got := browsertest.Eval[string](b.Tab, `document.getElementById("count-remaining").textContent`); got != "0" {
		t.Errorf("remaining count shown %q, want 0", got)
	}
	if n := len(w.mail.Mails()); n != 25 {
		t.Errorf("the mail catcher got %d mails, want 25", n)
	}
	shot("notifications")
	b.Accessible("a finished broadcast")

	// The caught mail, a list and one message, looks like the console and
	// passes the same checks.
	mail := httptest.NewServer(w.mail.Handler())
	t.Cleanup(mail.Close)
	b.Do(chromedp.Navigate(mail.URL + "/"))
	b.untilText("Caught mail and SMS")
	b.Accessible("the caught mail")
	shot("caught-mail")
	b.Do(chromedp.Click(`main table a`))
	b.untilText("Envelope from")
	b.Accessible("a caught message")
	b.Do(chromedp.Navigate(w.base + "/notifications"))
	b.untilText("Notification list")

	// An SMS to one subscribed number, and an in-app message to one user.
	w.api("POST", "/subscriptions", map[string]any{"serviceName": "alerts", "channel": "sms", "userChannelId": "12505550100", "state": "confirmed"}, nil)
	b.click("button", "Compose")
	b.Do(chromedp.SetValue(byLabel("Channel"), "sms"))
	b.Until("the SMS form", `!document.body.innerText.includes("Subject")`)
	b.setText("Service name", "alerts")
	b.Do(chromedp.Click(chromedp.Search(`//label[contains(., "One recipient")]/input`)))
	b.setText("Phone number", "12505550100")
	b.setText("Message", "Road closed.")
	b.click("button", "Send")
	b.Until("the compose form closed", `!document.getElementById("compose-title")`)
	b.Until("the SMS listed", `[...document.querySelectorAll("td")].some(td => td.textContent === "12505550100")`)
	if texts := w.mail.Texts(); len(texts) != 1 || !strings.Contains(fmt.Sprint(texts[0]), "Road closed.") {
		t.Errorf("the SMS caught: %v", texts)
	}
	b.click("button", "Compose")
	b.Do(chromedp.SetValue(byLabel("Channel"), "inApp"))
	b.setText("Service name", "alerts")
	b.Do(chromedp.Click(chromedp.Search(`//label[contains(., "One recipient")]/input`)))
	b.setText("User id or address", "alice")
	b.setText("Message", "Your permit is ready.")
	b.click("button", "Send")
	b.Until("the compose form closed", `!document.getElementById("compose-title")`)
	var inApp []map[string]any
	w.api("GET", `/notifications?filter={"where":{"channel":"inApp"}}`, nil, &inApp)
	if len(inApp) != 1 || inApp[0]["userChannelId"] != "alice" || inApp[0]["state"] != "new" {
		t.Errorf("in-app notifications stored: %v", inApp)
	}

	// Configurations: made from the subscription template, then edited.
	b.click("a", "Configurations")
	b.untilText("Configuration list")
	b.click("button", "New configuration")
	b.click("button", "Create configuration")
	b.untilText("Configuration created.")
	b.untilText("myService")
	b.Accessible("the configuration list")
	// The New configuration button is as tall as the template select
	// beside it, not stretched to the select's label.
	if h := browsertest.Eval[float64](b.Tab, `(() => { const btn = [...document.querySelectorAll(".page-actions button")].find(x => x.textContent.trim() === "New configuration"); const sel = document.querySelector(".page-actions select"); return btn.getBoundingClientRect().height - sel.getBoundingClientRect().height; })()`); h > 8 {
		t.Errorf("the New configuration button is %.0f px taller than the select beside it", h)
	}
	// Times read as the platform writes them: the browser's locale, one
	// format (medium date, short time).
	var rsaRec []map[string]any
	w.api("GET", `/configurations?filter={"where":{"name":"rsa"}}`, nil, &rsaRec)
	if len(rsaRec) != 1 {
		t.Fatalf("rsa records: %v", rsaRec)
	}
	wantWhen := browsertest.Eval[string](b.Tab, `new Intl.DateTimeFormat(undefined, {dateStyle: "medium", timeStyle: "short"}).format(new Date(`+browsertest.JSString(fmt.Sprint(rsaRec[0]["updated"]))+`))`)
	// The server's key pair is protected: neither Edit nor Delete, and
	// its private key shown only when asked.
	rsaRow := `[...document.querySelectorAll("main tbody tr")].find(tr => tr.querySelector(".cell-main") && tr.querySelector(".cell-main").textContent === "rsa")`
	b.Until("the rsa row", rsaRow)
	if browsertest.Eval[bool](b.Tab, `[...`+rsaRow+`.querySelectorAll("button")].some(x => /Delete|Edit/.test(x.textContent))`) {
		t.Error("the rsa key pair is offered for editing or deletion")
	}
	if got := browsertest.Eval[string](b.Tab, rsaRow+`.textContent`); !strings.Contains(got, wantWhen) {
		t.Errorf("the rsa row %q does not show its time as %q", got, wantWhen)
	}
	// So is dbSchemaVersion, which the server writes at start, as in the
	// original console.
	versionRow := `[...document.querySelectorAll("main tbody tr")].find(tr => tr.querySelector(".cell-main") && tr.querySelector(".cell-main").textContent === "dbSchemaVersion")`
	b.Until("the dbSchemaVersion row", versionRow)
	if browsertest.Eval[bool](b.Tab, `[...`+versionRow+`.querySelectorAll("button")].some(x => /Delete|Edit/.test(x.textContent))`) {
		t.Error("dbSchemaVersion is offered for editing or deletion")
	}
	if b.has("PRIVATE KEY") {
		t.Error("the private key is shown without being asked for")
	}
	b.click("button", "Show private key")
	b.untilText("PRIVATE KEY")
	b.click("button", "Hide private key")
	b.Until("the private key hidden again", `!document.body.innerText.includes("PRIVATE KEY")`)
	b.click("button", "Edit")
	b.Until("the editor", `document.getElementById("editor-title")`)
	b.Accessible("the configuration editor")
	rec := browsertest.Eval[string](b.Tab, `document.querySelector("textarea.json").value`)
	b.setText("Record (JSON)", strings.Replace(rec, "Please confirm your subscription", "Confirm, please", 1))
	b.click("button", "Save configuration")
	b.untilText("Configuration saved.")
	var confs []map[string]any
	w.api("GET", `/configurations?filter={"where":{"name":"subscription"}}`, nil, &confs)
	if len(confs) != 1 || !strings.Contains(fmt.Sprint(confs[0]["value"]), "Confirm, please") {
		t.Fatalf("configurations after the edit: %v", confs)
	}
	shot("configurations")

	b.click("a", "Bounces")
	b.untilText("No bounces recorded.")
	b.Accessible("the bounces")

	// Administrators: one signed up, a token made and shown once.
	b.click("a", "Administrators")
	b.click("button", "New administrator")
	b.setText("Email", "second@example.com")
	b.setText("Password", "Sec0nd-Admin!pw")
	b.click("button", "Create administrator")
	b.untilText("Administrator second@example.com created.")
	b.click("button", "Password and tokens")
	b.setText("Token name", "ci")
	b.click("button", "Create access token")
	b.Until("the new token", `document.querySelector(".secret input")`)
	tok := browsertest.Eval[string](b.Tab, `document.querySelector(".secret input").value`)
	if len(tok) != 64 {
		t.Fatalf("token shown %q, want 64 characters", tok)
	}
	req, _ := http.NewRequest("GET", w.base+"/api/administrators/whoami", nil)
	req.Header.Set("Authorization", tok)
	req.Header.Set("is_anonymous", "true")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	b.untilText("Copy it now")
	shot("administrators")
	b.Accessible("an administrator's password and tokens")

	// Any path outside the API is the console; an unknown one says so.
	b.open("/no/such/page")
	b.untilText("There is no console page at this address.")
	b.Accessible("a page not found")

	// Keyboard: the first Tab reaches the skip link, Enter moves to the
	// main region; Tab reaches the navigation, Enter follows a link and
	// the new page's heading has the focus.
	b.open("/subscriptions")
	b.role()
	b.untilText("ops@example.com")
	b.keys(kb.Tab)
	if f := b.focused(); f != "Skip to main content" {
		t.Fatalf("first Tab focused %q, want the skip link", f)
	}
	b.keys(kb.Enter)
	b.Until("main focused", `document.activeElement && document.activeElement.id === "main"`)
	b.open("/subscriptions")
	b.role()
	for i := 0; i < 10 && b.focused() != "Bounces"; i++ {
		b.keys(kb.Tab)
	}
	if f := b.focused(); f != "Bounces" {
		t.Fatalf("Tab did not reach the Bounces link; focus on %q", f)
	}
	b.keys(kb.Enter)
	b.Until("the Bounces page's heading focused", `document.activeElement && document.activeElement.id === "page-title" && document.activeElement.textContent === "Bounces"`)
}

// has reports whether the page's visible text contains s.
func (b *browserTab) has(s string) bool {
	return browsertest.Eval[bool](b.Tab, `document.body.innerText.includes(`+browsertest.JSString(s)+`)`)
}
