package webui_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/browsertest"
)

// tabTo presses Tab until the focused element satisfies cond (a
// JavaScript expression over document.activeElement), at most max times,
// and checks that the focus it lands on is visible.
func (b *browserTab) tabTo(what, cond string, max int) {
	b.T.Helper()
	for i := 0; i < max; i++ {
		b.Do(chromedp.KeyEvent(kb.Tab))
		if browsertest.Eval[bool](b.Tab, `(() => { const el = document.activeElement; return !!el && !!(`+cond+`); })()`) {
			if style := browsertest.Eval[string](b.Tab, `getComputedStyle(document.activeElement).outlineStyle`); style == "none" {
				b.T.Errorf("the focus on %s is not visible (outline %s)", what, style)
			}
			return
		}
	}
	b.T.Fatalf("%d presses of Tab did not reach %s; focus is on %s", max, what, browsertest.Eval[string](b.Tab, `document.activeElement ? document.activeElement.outerHTML.slice(0, 200) : "nothing"`))
}

// A person who uses only the keyboard signs in through the provider's
// form and uploads a document: every control is reached with Tab, used
// with Enter or Space, and shows where the focus is.
func TestKeyboardOnlySignInAndUpload(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.group("Finance", map[string]docplatform.Role{"alice": docplatform.RoleAdmin})
	b := newBrowser(t, w, 1280, 900)
	u := w.users["alice"]

	b.open("/")
	b.Until("the Sign in button", `[...document.querySelectorAll("a")].some(a => a.textContent.trim() === "Sign in")`)
	b.tabTo("the Sign in button", `el.textContent.trim() === "Sign in"`, 10)
	b.Do(chromedp.KeyEvent(kb.Enter))
	// The provider's form puts the focus in its username field.
	b.Until("the provider's login form", `document.activeElement && document.activeElement.id === "username"`)
	b.Do(chromedp.KeyEvent(u.Username), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent(u.Password), chromedp.KeyEvent(kb.Enter))
	b.Until("the signed-in page", `document.getElementById("signed-in-as")`)
	b.untilText(u.Name)

	// The first Tab on the page reaches the skip link, which leads to the
	// main region.
	b.tabTo("the skip link", `el.textContent.trim() === "Skip to main content"`, 1)
	b.Do(chromedp.KeyEvent(kb.Enter))
	b.Until("the focus in the main region", `document.activeElement && document.activeElement.id === "main"`)

	content := []byte("Invoice 1042\nTotal: 1,250.00 CAD\n")
	file := filepath.Join(t.TempDir(), "invoice-1042.txt")
	if err := os.WriteFile(file, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.Ctx, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	choosers := chromedp.Events(b.Ctx, page.FileChooserOpened)
	b.tabTo("the file field", `el.type === "file"`, 15)
	// Space opens the file chooser; the test answers it as a person would.
	b.Do(chromedp.KeyEvent(" "))
	for ev, err := range choosers {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Call(b.Ctx, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: []string{file}, BackendNodeID: ev.BackendNodeID}); err != nil {
			t.Fatal(err)
		}
		break
	}
	b.Until("the file chosen", `document.querySelector('input[type="file"]').files.length === 1`)
	b.tabTo("the Upload button", `el.tagName === "BUTTON" && el.textContent.trim() === "Upload"`, 5)
	b.Do(chromedp.KeyEvent(kb.Enter))
	b.untilText("Uploaded invoice-1042.txt")
	b.Until("the upload in the list", `[...document.querySelectorAll("table a")].some(a => a.textContent === "invoice-1042.txt")`)
	if failed := w.failedRequests(); len(failed) > 0 {
		t.Errorf("refused calls: %v", failed)
	}
}
