package mailcatcher

import (
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/govkit/govkit/ui"
)

// Handler serves the caught mail. Links are relative, so it can be mounted
// under any prefix with http.StripPrefix (mount it with a trailing slash,
// e.g. "/mail/"):
//
//	GET /                 the list page, newest first
//	GET /style.css        the pages' style sheet (the web UIs' own)
//	GET /m/{id}/          one message: envelope, headers, text, HTML preview
//	GET /m/{id}/html      the HTML body alone, sandboxed by CSP
//	GET /m/{id}/raw       the source, as text/plain
//	GET /api/mails        every message as JSON, newest first
//	GET /api/mails/{id}   one message as JSON
//	GET /api/sms          every text message as JSON, newest first
//
// Each request is logged as one line at info (method, path, status,
// duration).
func (c *Catcher) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", c.list)
	mux.HandleFunc("GET /style.css", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		_, _ = w.Write(ui.Stylesheet)
	})
	mux.HandleFunc("GET /m/{id}/{$}", c.show)
	mux.HandleFunc("GET /m/{id}/html", c.html)
	mux.HandleFunc("GET /m/{id}/raw", c.raw)
	mux.HandleFunc("GET /api/mails", c.apiList)
	mux.HandleFunc("GET /api/mails/{id}", c.apiOne)
	mux.HandleFunc("GET /api/sms", c.apiSMS)
	return c.logRequests(pageHeaders(mux))
}

func (c *Catcher) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		c.opts.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// pageHeaders applies to our own pages: nothing but our style sheet and
// same-origin frames may load, and no one else may frame us.
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; frame-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func (c *Catcher) byID(w http.ResponseWriter, r *http.Request) (Mail, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, "no such message", http.StatusNotFound)
		return Mail{}, false
	}
	m, ok := c.Mail(id)
	if !ok {
		http.Error(w, "no such message (it may have been dropped to make room)", http.StatusNotFound)
	}
	return m, ok
}

func (c *Catcher) list(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = listPage.Execute(w, struct {
		Base  string
		Mails []Mail
		Texts []SMS
		Max   int
		Kept  string
	}{"./", c.Mails(), c.Texts(), c.opts.MaxMessages, map[bool]string{true: "on disk (they survive a restart)", false: "in memory"}[c.opts.Dir != ""]})
}

type headerLine struct{ Key, Value string }

func (c *Catcher) show(w http.ResponseWriter, r *http.Request) {
	m, ok := c.byID(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = showPage.Execute(w, struct {
		Base    string
		Mail    Mail
		Headers []headerLine
	}{"../../", m, m.lines})
}

// html serves a message's HTML body as its own document. The CSP sandbox
// gives it a unique origin with scripts, forms and plugins off, and
// default-src 'none' stops it fetching anything (images inline as data:
// only), so opening it directly is as safe as viewing it framed. Links
// open in a new tab, outside the frame.
func (c *Catcher) html(w http.ResponseWriter, r *http.Request) {
	m, ok := c.byID(w, r)
	if !ok {
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", "sandbox allow-popups allow-popups-to-escape-sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'self'")
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(`<!doctype html><meta charset="utf-8"><base target="_blank">`))
	_, _ = w.Write([]byte(m.HTML))
}

func (c *Catcher) raw(w http.ResponseWriter, r *http.Request) {
	m, ok := c.byID(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(m.raw)
}

func (c *Catcher) apiList(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, c.Mails())
}

func (c *Catcher) apiSMS(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, c.Texts())
}

func (c *Catcher) apiOne(w http.ResponseWriter, r *http.Request) {
	if m, ok := c.byID(w, r); ok {
		writeJSON(w, m)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// top is the start of both pages' bodies: the look of the other govkit
// pages. base leads from the page to the catcher's root.
const top = `<link rel="stylesheet" href="{{.Base}}style.css"></head><body>
<a class="skip-link" href="#main">Skip to main content</a>
<header class="topbar"><a class="brand" href="{{.Base}}" aria-label="govkit caught mail: every message"><span class="brand-text">govkit <small>caught mail</small></span></a></header>
<main class="page" id="main" tabindex="-1">`

var funcs = template.FuncMap{
	"when": func(t time.Time) string { return t.Format("2006-01-02 15:04:05Z") },
}

var listPage = template.Must(template.New("list").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Caught mail and SMS</title>` + top + `
<h1>Caught mail and SMS</h1>
<p class="muted">Mail and text messages sent by govkit in development are caught here and never delivered. Newest first; the last {{.Max}} of each are kept {{.Kept}}. Reload to see new ones.</p>
<h2>Mail <span class="muted">(<a href="api/mails">JSON</a>)</span></h2>
{{if .Mails}}<table>
<tr><th>Received (UTC)</th><th>From</th><th>To</th><th>Subject</th></tr>
{{range .Mails}}<tr><td>{{when .Received}}</td><td>{{.From}}</td><td>{{.To}}</td><td><a href="m/{{.ID}}/">{{if .Subject}}{{.Subject}}{{else}}(no subject){{end}}</a></td></tr>
{{end}}</table>{{else}}<p>No mail caught yet.</p>{{end}}
<h2 id="sms">SMS <span class="muted">(<a href="api/sms">JSON</a>)</span></h2>
{{if .Texts}}<table>
<tr><th>Received (UTC)</th><th>To</th><th>Text</th></tr>
{{range .Texts}}<tr><td>{{when .Received}}</td><td>{{.To}}</td><td><pre class="wrap">{{.Text}}</pre></td></tr>
{{end}}</table>{{else}}<p>No SMS caught yet.</p>{{end}}
</main></body></html>`))

var showPage = template.Must(template.New("show").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>{{if .Mail.Subject}}{{.Mail.Subject}}{{else}}(no subject){{end}} · caught mail</title>` + top + `
<p><a href="../../">&larr; all mail</a> · <a href="raw">source</a> · <a href="../../api/mails/{{.Mail.ID}}">JSON</a></p>
<h1>{{if .Mail.Subject}}{{.Mail.Subject}}{{else}}(no subject){{end}}</h1>
<table>
<tr><th>Received (UTC)</th><td>{{when .Mail.Received}}</td></tr>
<tr><th>Envelope from</th><td>{{.Mail.Envelope.From}}</td></tr>
<tr><th>Envelope to</th><td>{{range $i, $t := .Mail.Envelope.To}}{{if $i}}, {{end}}{{$t}}{{end}}</td></tr>
<tr><th>From</th><td>{{.Mail.From}}</td></tr>
<tr><th>To</th><td>{{.Mail.To}}</td></tr>
</table>
{{if .Mail.HTML}}<h2>HTML</h2>
<iframe sandbox="allow-popups allow-popups-to-escape-sandbox" src="html" title="HTML body"></iframe>{{end}}
{{if .Mail.Text}}<h2>Text</h2>
<pre class="wrap" tabindex="0" aria-label="Text body">{{.Mail.Text}}</pre>{{end}}
<h2>Headers</h2>
<table>{{range .Headers}}<tr><th>{{.Key}}</th><td>{{.Value}}</td></tr>{{end}}</table>
</main></body></html>`))
