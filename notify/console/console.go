// Package console is the notification service's web console, built from
// ui/src/console (TypeScript and Preact; see ui/ and internal/uibuild) and
// embedded here, so that `govkit notify serve` and `govkit dev` serve it
// with no Node at run time. NotifyBC serves its console at / with a
// fallback for every path outside restApiRoot; package notify/httpapi
// mounts Handler the same way.
//
// The page learns where the API is and how to sign in with OIDC from three
// <meta> tags filled in here at start-up (HTML-escaped), not from an inline
// script: the console runs under a Content-Security-Policy without
// 'unsafe-inline'.
//
// The build in dist/ is committed. After changing anything under
// ui/src/console or ui/src/shared, run `go generate ./notify/console` (it
// needs `npm ci` in ui/ once); CI rebuilds and fails when the committed
// build differs from the sources.
package console

import (
	"embed"
	"html"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"testing/fstest"

	"github.com/govkit/govkit/internal/spa"
)

//go:generate go run ../../internal/uibuild -ui ../../ui -app console -out dist

//go:embed dist
var dist embed.FS

// Settings are what the page is told: the original renders the same three
// values into its console page.
type Settings struct {
	// APIURLPrefix is where the API is, e.g. /api (restApiRoot).
	APIURLPrefix string
	// OIDCAuthority is the issuer URL (oidc.discoveryUrl without
	// /.well-known/openid-configuration); empty when OIDC is off.
	OIDCAuthority string
	// OIDCClientID is the public client the browser signs in as.
	OIDCClientID string
}

// Placeholders in ui/src/console/index.html that Handler fills.
const (
	phAPI       = "{{API_URL_PREFIX}}"
	phAuthority = "{{OIDC_AUTHORITY}}"
	phClient    = "{{OIDC_CLIENT_ID}}"
)

// Authority turns oidc.discoveryUrl into the authority the page uses, as
// the original does: the URL without /.well-known/openid-configuration.
func Authority(discoveryURL string) string {
	return strings.TrimSuffix(strings.TrimSuffix(discoveryURL, "/.well-known/openid-configuration"), "/")
}

// CSP is the console's Content-Security-Policy: its own scripts and styles
// only, nothing inline, no framing; connections to the API (same origin)
// and, with OIDC, to the provider's origin for discovery and the token
// exchange.
func CSP(s Settings) string {
	connect := "'self'"
	if o := origin(s.OIDCAuthority); o != "" {
		connect += " " + o
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src " + connect +
		"; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
}

// origin is the scheme://host[:port] of an http(s) URL, or "".
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	// Only characters a CSP source may hold: the host came from config,
	// but a stray space or semicolon would add a directive.
	o := u.Scheme + "://" + u.Host
	if strings.ContainsAny(o, " ;,'\"") {
		return ""
	}
	return o
}

// Handler serves the console for GET and HEAD: index.html, with the
// settings filled in, for every path that is not a file of the build. The
// caller decides which paths reach it (everything outside restApiRoot).
func Handler(s Settings) http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	files := fstest.MapFS{}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		if p == "index.html" {
			b = []byte(strings.NewReplacer(
				phAPI, html.EscapeString(s.APIURLPrefix),
				phAuthority, html.EscapeString(s.OIDCAuthority),
				phClient, html.EscapeString(s.OIDCClientID),
			).Replace(string(b)))
		}
		files[p] = &fstest.MapFile{Data: b, Mode: 0o444}
		return nil
	})
	if err != nil {
		panic(err)
	}
	h, err := spa.New(files)
	if err != nil {
		// Only a broken commit of dist/ gets here; the package's test
		// catches it first.
		panic("console: the embedded build is incomplete: " + err.Error())
	}
	csp := CSP(s)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
		h.ServeHTTP(w, r)
	})
}
