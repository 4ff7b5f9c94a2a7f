package console_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/console"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

func TestMain(m *testing.M) { apitest.Main(m) }

func get(t *testing.T, c *http.Client, method, url string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestServedOutsideRestAPIRoot checks the original's fallback: every GET
// or HEAD outside restApiRoot that is not a file of the build is the
// console's page, with the settings in its <meta> tags and the console's
// headers; the API's paths and other methods keep the API's JSON 404.
func TestServedOutsideRestAPIRoot(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{
		"restApiRoot": "/notify-api",
		"oidc":        map[string]any{"discoveryUrl": `https://sso.example.com/realms/x"<y>/.well-known/openid-configuration`, "clientId": "console&co"},
	}}})
	for _, path := range []string{"/", "/index.html", "/subscriptions", "/deep/link/x?y=1", "/oidc-callback?code=abc&state=d", "/api/subscriptions"} {
		resp, body := get(t, e.Client, "GET", e.URL+path)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %s, want the console's page", path, resp.StatusCode, resp.Header.Get("Content-Type"))
			continue
		}
		for _, want := range []string{
			`<meta name="notify-api-url-prefix" content="/notify-api">`,
			`<meta name="notify-oidc-authority" content="https://sso.example.com/realms/x&#34;&lt;y&gt;">`,
			`<meta name="notify-oidc-client-id" content="console&amp;co">`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s: the page lacks %s", path, want)
			}
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, "{{") {
			t.Errorf("GET %s: inline script or an unfilled placeholder in the page", path)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self' https://sso.example.com;") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: CSP %q", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: security headers missing: %v", path, resp.Header)
		}
	}
	if resp, body := get(t, e.Client, "HEAD", e.URL+"/configurations"); resp.StatusCode != 200 || body != "" {
		t.Errorf("HEAD outside the root: %d %q", resp.StatusCode, body)
	}
	// The build's files are served as themselves.
	_, page := get(t, e.Client, "GET", e.URL+"/")
	i := strings.Index(page, `src="/assets/`)
	if i < 0 {
		t.Fatal("the page links no script under /assets/")
	}
	script := page[i+5 : i+5+strings.Index(page[i+5:], `"`)]
	if resp, _ := get(t, e.Client, "GET", e.URL+script); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("GET %s: %d %s %s", script, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
	}
	if resp, _ := get(t, e.Client, "GET", e.URL+"/favicon.svg"); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" {
		t.Errorf("favicon: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	// JSON 404s: a missing bundle, paths under the API's root, and
	// other methods anywhere.
	for _, c := range [][2]string{{"GET", "/assets/main-GONE.js"}, {"GET", "/notify-api/nothing"}, {"GET", "/notify-api"}, {"POST", "/subscriptions"}, {"DELETE", "/"}} {
		resp, body := get(t, e.Client, c[0], e.URL+c[1])
		if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !strings.Contains(body, `"statusCode":404`) {
			t.Errorf("%s %s: %d %s %s, want the JSON 404", c[0], c[1], resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	// The API itself still answers under its root.
	if resp, _ := get(t, e.Client, "GET", e.URL+"/notify-api/administrators/whoami"); resp.StatusCode != 200 {
		t.Errorf("whoami under the moved root: %d", resp.StatusCode)
	}
}

func TestAuthorityAndCSP(t *testing.T) {
	if got := console.Authority("https://sso.example.com/realms/r/.well-known/openid-configuration"); got != "https://sso.example.com/realms/r" {
		t.Errorf("Authority: %q", got)
	}
	if csp := console.CSP(console.Settings{}); !strings.Contains(csp, "connect-src 'self';") {
		t.Errorf("CSP without OIDC: %q", csp)
	}
	// A value that would add a directive is left out.
	if csp := console.CSP(console.Settings{OIDCAuthority: "https://a.example; script-src *"}); strings.Contains(csp, "script-src *") {
		t.Errorf("CSP took a directive from the authority: %q", csp)
	}
}
