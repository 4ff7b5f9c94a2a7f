package devidp

import (
	"html/template"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// login serves the sign-in form the authorization endpoint redirects to.
type login struct {
	store    *storage
	provider *op.Provider
	issuer   string
	log      *slog.Logger
}

// pageHeaders suit a page with no script at all. There is no form-action
// directive on purpose: browsers apply it to the redirects that follow a
// form post, and both buttons end in a redirect to the client's origin.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Type", "text/html; charset=utf-8")
}

type loginView struct {
	CSS       string
	Action    string
	RequestID string
	ClientID  string
	Username  string
	Error     string
	Users     []User
}

func (l *login) render(w http.ResponseWriter, status int, a *authRequest, username, problem string) {
	pageHeaders(w)
	w.WriteHeader(status)
	loginTemplate.Execute(w, loginView{
		CSS:       l.issuer + pathCSS,
		Action:    l.issuer + pathLogin,
		RequestID: a.id,
		ClientID:  a.clientID,
		Username:  username,
		Error:     problem,
		Users:     l.store.cfg.Users,
	})
}

func (l *login) expired(w http.ResponseWriter) {
	pageHeaders(w)
	w.WriteHeader(http.StatusBadRequest)
	messageTemplate.Execute(w, messageView{CSS: l.issuer + pathCSS, Title: "Sign-in expired",
		Text: "This sign-in request is unknown or has expired. Go back to the application and sign in again."})
}

func (l *login) page() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := l.store.pendingLogin(r.URL.Query().Get("authRequestID"))
		if !ok {
			l.expired(w)
			return
		}
		l.render(w, http.StatusOK, a, "", "")
	})
}

func (l *login) submit() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		a, ok := l.store.pendingLogin(r.PostForm.Get("authRequestID"))
		if !ok {
			l.expired(w)
			return
		}
		if r.PostForm.Has("cancel") {
			l.store.DeleteAuthRequest(r.Context(), a.id)
			l.log.Info("devidp: sign-in cancelled", "client_id", a.clientID)
			op.AuthRequestError(w, r, a, oidc.ErrAccessDenied().WithDescription("the user cancelled the sign-in"), l.provider)
			return
		}
		username := r.PostForm.Get("username")
		u, ok := l.store.userByLogin(username, r.PostForm.Get("password"))
		if !ok {
			l.log.Warn("devidp: sign-in failed", "username", username, "client_id", a.clientID)
			l.render(w, http.StatusOK, a, username, "Invalid username or password.")
			return
		}
		if !l.store.completeLogin(a.id, u.Subject) {
			l.expired(w)
			return
		}
		l.log.Info("devidp: signed in", "username", u.Username, "sub", u.Subject, "client_id", a.clientID)
		http.Redirect(w, r, l.issuer+pathAuth+"/callback?id="+url.QueryEscape(a.id), http.StatusSeeOther)
	})
}

type messageView struct{ CSS, Title, Text string }

func (l *login) loggedOut(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w)
	messageTemplate.Execute(w, messageView{CSS: l.issuer + pathCSS, Title: "Signed out", Text: "You are signed out of the development provider."})
}

func serveCSS(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Write([]byte(loginCSS))
}

var loginTemplate = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · govkit development provider</title>
<link rel="stylesheet" href="{{.CSS}}">
</head>
<body>
<main>
<h1>Sign in</h1>
<p class="note">Development provider — for <code>{{.ClientID}}</code>. Never use it in production.</p>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="authRequestID" value="{{.RequestID}}">
<label for="username">Username</label>
<input id="username" name="username" value="{{.Username}}" autocomplete="username" required autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<div class="buttons">
<button type="submit" name="login" value="1">Sign in</button>
<button type="submit" name="cancel" value="1" formnovalidate class="secondary">Cancel</button>
</div>
</form>
<h2>Demo users</h2>
<table>
<thead><tr><th>Username</th><th>Name</th><th>Email</th></tr></thead>
<tbody>
{{range .Users}}<tr><td><code>{{.Username}}</code></td><td>{{.Name}}</td><td>{{.Email}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Their passwords are printed by <code>govkit dev</code> and listed in <code>go doc ./docplatform/devidp</code>.</p>
</main>
</body>
</html>
`))

var messageTemplate = template.Must(template.New("message").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · govkit development provider</title>
<link rel="stylesheet" href="{{.CSS}}">
</head>
<body>
<main>
<h1>{{.Title}}</h1>
<p>{{.Text}}</p>
</main>
</body>
</html>
`))

const loginCSS = `body{font-family:system-ui,sans-serif;background:#f4f5f7;color:#1d2330;margin:0}
main{max-width:26rem;margin:3rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 4px rgba(0,0,0,.15)}
h1{margin-top:0}label{display:block;margin-top:1rem;font-weight:600}
input{width:100%;box-sizing:border-box;padding:.5rem;margin-top:.25rem;font-size:1rem}
.buttons{display:flex;gap:.5rem;margin-top:1.5rem}
button{padding:.5rem 1rem;font-size:1rem;border:0;border-radius:4px;background:#003366;color:#fff;cursor:pointer}
button.secondary{background:#e0e3e8;color:#1d2330}
.error{background:#fdecea;color:#8a1c12;padding:.5rem;border-radius:4px}
.note{color:#5a6270;font-size:.875rem}
table{width:100%;border-collapse:collapse;font-size:.875rem}th,td{text-align:left;padding:.25rem}
`
