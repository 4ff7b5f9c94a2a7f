package webui_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/internal/browsertest"
)

// TestScreenshots writes the README's pictures of the main pages, taken
// from the real UI on demo data: GOVKIT_SCREENSHOTS=1 go test
// ./docplatform/webui -run TestScreenshots (docs/screenshots/*.png).
func TestScreenshots(t *testing.T) {
	if os.Getenv("GOVKIT_SCREENSHOTS") != "1" {
		t.Skip("set GOVKIT_SCREENSHOTS=1 to write docs/screenshots")
	}
	out := filepath.Join("..", "..", "docs", "screenshots")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, worldOptions{})
	d := seedDemo(t, w)
	shot := func(b *browserTab, name string) {
		t.Helper()
		// The focus ring of the last click is not part of the page's look.
		browsertest.Eval[bool](b.Tab, `(document.activeElement && document.activeElement.blur && document.activeElement.blur(), window.scrollTo(0, 0), true)`)
		png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	b := newBrowser(t, w, 1280, 800)
	b.open("/")
	b.untilText("Sign in")
	shot(b, "signed-out")

	b.signIn("alice")
	b.visit("/documents", "Invoice 1042")
	shot(b, "documents")
	b.visit("/documents/"+d.invoice.ID, "tesseract 5.4", "completed")
	shot(b, "document")
	b.visit("/review", "Waiting for review", "Locked")
	shot(b, "review-queue")
	b.visit("/reviews/"+d.aliceSession, "Correct the OCR result")
	shot(b, "review-session")
	b.visit("/groups/"+d.finance.ID, "API key", "Last used")
	b.Do(chromedp.Click(browsertest.ByText("button", "Regenerate")), chromedp.Click(browsertest.ByText("button", "Yes, regenerate")))
	b.untilText("API key regenerated")
	shot(b, "group-settings")
	b.visit("/workflows/"+d.workflow, "Versions")
	shot(b, "workflow")
	b.visit("/audit", "Report by day")
	b.Do(chromedp.Click(browsertest.ByText("button", "Show report")))
	b.untilText("days counted in")
	shot(b, "audit")

	b.open("/api/docs")
	b.Until("the operations", `document.querySelectorAll("details.op").length > 20`)
	browsertest.Eval[bool](b.Tab, `(document.querySelector("#postApiWorkflows").open = true, true)`)
	shot(b, "api-docs")

	admin := newBrowser(t, w, 1280, 800)
	admin.signIn("admin")
	admin.visit("/admin/users", "Bob Member")
	shot(admin, "admin-users")

	phone := newBrowser(t, w, 390, 844)
	phone.signIn("bob")
	phone.visit("/documents", "Office lease 2026.pdf")
	shot(phone, "phone-documents")
}
