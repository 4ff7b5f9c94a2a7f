package webui_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/browsertest"
)

// failedRequests lists what the server answered with 4xx or 5xx, minus
// the answers a test provokes on purpose.
func (w *world) failedRequests(allowed ...served) []served {
	var out []served
	for _, r := range w.served("") {
		if r.Status < 400 || containsServed(allowed, r) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func containsServed(list []served, r served) bool {
	for _, a := range list {
		if a.Method == r.Method && a.Path == r.Path && a.Status == r.Status {
			return true
		}
	}
	return false
}

// A person signs in through the provider's form, uploads a file (with a
// progress bar) and finds it listed and downloadable, generates and
// regenerates the group's API key (shown once), and signs out; the UI
// refreshes nothing on its own at sign-in or page load, keeps no token in
// web storage, and makes no call the server refuses.
func TestSignInUploadDownloadAPIKeySignOut(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.group("Finance", map[string]docplatform.Role{"alice": docplatform.RoleAdmin})
	b := newBrowser(t, w, 1280, 900)

	b.signIn("alice")
	if got := browsertest.Eval[string](b.Tab, `document.getElementById("signed-in-as").innerText`); !strings.Contains(got, "Alice Member") {
		t.Errorf("the signed-in page names %q, want the person's name", got)
	}
	if n := w.refreshes(); n != 0 {
		t.Errorf("%d refresh(es) right after sign-in; the rules allow none", n)
	}

	// A reload loads the profile again and refreshes nothing.
	mes := len(w.served("/api/auth/me"))
	b.Do(chromedp.Reload())
	b.untilServer("the profile loaded again", func() bool { return len(w.served("/api/auth/me")) > mes })
	b.Until("the signed-in page", `document.getElementById("signed-in-as")`)
	b.untilText("Upload a document")
	if n := w.refreshes(); n != 0 {
		t.Errorf("%d refresh(es) at page load; the rules allow none", n)
	}

	// Upload, with the progress bar watched as it comes and goes.
	content := append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("0123456789abcdef govkit upload test\n"), 120_000)...)
	file := filepath.Join(t.TempDir(), "Quarterly report.pdf")
	if err := os.WriteFile(file, content, 0o600); err != nil {
		t.Fatal(err)
	}
	browsertest.Eval[bool](b.Tab, `(() => { window.__progress = []; new MutationObserver(() => { const p = document.querySelector("progress"); if (p) window.__progress.push(Number(p.value)); }).observe(document.body, {subtree: true, childList: true, attributes: true}); return true; })()`)
	b.Do(
		chromedp.SetUploadFiles(chromedp.CSS(`input[type="file"]`), []string{file}),
		chromedp.Click(browsertest.ByText("button", "Upload")),
	)
	b.untilText("Uploaded Quarterly report.pdf")
	b.Until("the upload in the list", `[...document.querySelectorAll("table a")].some(a => a.textContent === "Quarterly report.pdf")`)
	progress := browsertest.Eval[[]float64](b.Tab, `window.__progress`)
	if len(progress) == 0 || slicesMax(progress) <= 0 {
		t.Errorf("no progress bar moved during the upload: %v", progress)
	}

	// Download from the list: the same bytes come back.
	dir := t.TempDir()
	b.downloadsTo(dir)
	b.Do(chromedp.Click(chromedp.CSS(`a[aria-label="Download Quarterly report.pdf"]`)))
	if got := b.untilFile(dir, "Quarterly report.pdf"); !bytes.Equal(got, content) {
		t.Errorf("downloaded %d bytes, uploaded %d; they differ", len(got), len(content))
	}

	// Generate the group's API key, then regenerate it: each shown once,
	// the old one dead at once.
	b.Do(chromedp.Click(browsertest.ByText("a", "Groups")))
	b.Until("the Finance group", `[...document.querySelectorAll("main a")].some(a => a.textContent === "Finance")`)
	b.Do(chromedp.Click(browsertest.ByText("a", "Finance")))
	b.untilText("This group has no API key.")
	b.Do(chromedp.Click(browsertest.ByText("button", "Generate an API key")))
	b.Until("the new key", `document.querySelector(".secret input") && document.querySelector(".secret input").value.startsWith("gk_")`)
	first := browsertest.Eval[string](b.Tab, `document.querySelector(".secret input").value`)
	if code := w.withKey(first); code != http.StatusOK {
		t.Fatalf("the generated key gets %d on /api/documents", code)
	}
	b.Do(chromedp.Click(browsertest.ByText("button", "Regenerate")))
	b.Do(chromedp.Click(browsertest.ByText("button", "Yes, regenerate")))
	b.Until("the regenerated key", `document.querySelector(".secret input") && document.querySelector(".secret input").value.startsWith("gk_") && document.querySelector(".secret input").value !== `+browsertest.JSString(first))
	second := browsertest.Eval[string](b.Tab, `document.querySelector(".secret input").value`)
	b.untilText("API key regenerated")
	if code := w.withKey(second); code != http.StatusOK {
		t.Errorf("the regenerated key gets %d", code)
	}
	if code := w.withKey(first); code == http.StatusOK {
		t.Error("the old key still works after regenerating")
	}
	b.Do(chromedp.Reload())
	b.untilText("Last used")
	if strings.Contains(b.Snippet(), second) {
		t.Error("the key is shown again after a reload; it must be shown once")
	}

	// Alice's group's audit log, which she administers, shows what was
	// done to its documents, reviews and workflows, by whom.
	finance := browsertest.Eval[string](b.Tab, `location.pathname.split("/").pop()`)
	c := w.signedInClient("alice")
	doc := c.upload(finance, "Audit me.txt", []byte("audited\n"), "")
	var rv struct {
		ID string `json:"id"`
	}
	c.call("POST", "/api/documents/"+doc.ID+"/reviews", nil, &rv)
	c.call("POST", "/api/reviews/"+rv.ID+"/complete", nil, nil)
	c.call("POST", "/api/documents/"+doc.ID+"/reviews", nil, &rv)
	c.call("POST", "/api/reviews/"+rv.ID+"/abandon", nil, nil)
	c.call("DELETE", "/api/documents/"+doc.ID, nil, nil)
	var wf struct {
		ID string `json:"id"`
	}
	c.call("POST", "/api/workflows", map[string]any{"groupId": finance, "name": "Audited", "config": map[string]any{"steps": []any{map[string]any{"type": "ocr", "engine": "tesseract"}}}}, &wf)
	c.call("POST", "/api/workflows/"+wf.ID+"/versions", map[string]any{"config": map[string]any{"steps": []any{map[string]any{"type": "ocr", "engine": "tesseract"}}}}, nil)
	b.visit("/audit", "Report by day", "Document uploaded", "Document downloaded", "Document deleted", "Review started", "Review completed", "Review abandoned", "Workflow created", "Workflow version added")
	if !b.has("Quarterly report.pdf") || !b.has("Audit me.txt") {
		t.Error("the document entries do not name the documents")
	}
	if b.has("No entries") {
		t.Error("the audit log says No entries")
	}

	b.storageHoldsNoToken()
	if failed := w.failedRequests(served{"GET", "/api/documents", 401}); len(failed) > 0 {
		t.Errorf("the UI made calls the server refused: %v", failed)
	}

	// Sign out: the whole page goes through /api/auth/logout and the
	// provider, and comes back signed out.
	b.Do(chromedp.Click(browsertest.ByText("a", "Sign out")))
	b.Until("the signed-out home", `[...document.querySelectorAll("a")].some(a => a.textContent.trim() === "Sign in")`)
	if len(w.served("/api/auth/logout")) != 1 {
		t.Errorf("sign-out went through /api/auth/logout %d times", len(w.served("/api/auth/logout")))
	}
	text := b.Snippet()
	for _, s := range []string{"Alice Member", "alice@govkit.test"} {
		if strings.Contains(text, s) {
			t.Errorf("the signed-out page still shows %q", s)
		}
	}
	if b.cookie("csrf_token") != "" || b.cookie("access_token") != "" {
		t.Error("auth cookies left after sign-out")
	}
}

func slicesMax(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// withKey calls GET /api/documents with an API key and returns the status.
func (w *world) withKey(key string) int {
	w.t.Helper()
	req, _ := http.NewRequest("GET", w.base+"/api/documents", nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
