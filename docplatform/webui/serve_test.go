package webui_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The platform serves the UI at every GET path outside /api/, under its
// security headers and CSP; /api/ paths no route matches stay JSON 404s.
func TestPlatformServesTheUI(t *testing.T) {
	w := newWorld(t, worldOptions{})
	get := func(method, path string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, w.base+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	resp, page := get("GET", "/")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(page, `<div id="app">`) {
		t.Fatalf("GET / %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("the page's headers: CSP %q, X-Frame-Options %q", csp, resp.Header.Get("X-Frame-Options"))
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "style=") || strings.Contains(page, "<style") {
		t.Error("the page has inline script or style")
	}

	// The page's script and style sheet are files, cached for good.
	assets := regexp.MustCompile(`(?:src|href)="(/assets/[^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(assets) != 2 {
		t.Fatalf("the page links %d bundles, want a script and a style sheet", len(assets))
	}
	for _, a := range assets {
		resp, body := get("GET", a[1])
		if resp.StatusCode != 200 || body == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
			t.Errorf("%s: %s, Cache-Control %q", a[1], resp.Status, resp.Header.Get("Cache-Control"))
		}
	}

	for _, c := range []struct {
		method, path string
		status       int
		contentType  string
	}{
		{"GET", "/documents/1f0e6a0e-2c1b-4c1e-9f7a-0b1c2d3e4f50", 200, "text/html; charset=utf-8"},
		{"HEAD", "/groups", 200, "text/html; charset=utf-8"},
		{"GET", "/favicon.ico", 200, "image/x-icon"},
		{"GET", "/favicon.svg", 200, "image/svg+xml"},
		{"GET", "/licenses.txt", 200, "text/plain; charset=utf-8"},
		{"GET", "/assets/main-STALE.js", 404, "application/json; charset=utf-8"},
		{"GET", "/api/no-such-route", 404, "application/json; charset=utf-8"},
		{"GET", "/api", 404, "application/json; charset=utf-8"},
		{"POST", "/documents", 404, "application/json; charset=utf-8"},
	} {
		resp, _ := get(c.method, c.path)
		if resp.StatusCode != c.status || resp.Header.Get("Content-Type") != c.contentType {
			t.Errorf("%s %s: %s %q, want %d %q", c.method, c.path, resp.Status, resp.Header.Get("Content-Type"), c.status, c.contentType)
		}
		if resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s %s without the CSP", c.method, c.path)
		}
	}
}
