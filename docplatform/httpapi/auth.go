package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/internal/httperr"
)

// login starts an authorization-code login with PKCE: a fresh state, nonce
// and verifier join the pending logins in the encrypted login-state cookie,
// and the browser goes to the provider.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	p := s.newLogin()
	target, err := s.o.OIDC.AuthCodeURL(r.Context(), p.State, p.Nonce, p.Verifier)
	if err != nil {
		s.o.Logger.ErrorContext(r.Context(), "login: identity provider unavailable", slog.String("error", err.Error()))
		httperr.Write(w, http.StatusServiceUnavailable, "Identity provider unavailable")
		return
	}
	pending := append(s.openLogins(r), p)
	if len(pending) > maxPendingLogins {
		pending = pending[len(pending)-maxPendingLogins:]
	}
	s.writeLogins(w, pending)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target, http.StatusFound)
}

// callback finishes a login. Every failure ends the same way: the
// login-state cookie is cleared and the browser goes to the frontend with
// auth_error=callback_failed; the reason is logged, never put in the URL.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	fail := func(reason string, err error) {
		attrs := []slog.Attr{slog.String("reason", reason), slog.String("ip", state(r).ip)}
		if err != nil {
			attrs = append(attrs, slog.String("error", err.Error()))
		}
		s.o.Logger.LogAttrs(ctx, slog.LevelWarn, "login callback failed", attrs...)
		s.audit(r, docplatform.AuditLoginFailed, docplatform.OutcomeFailure, "", "", reason)
		s.writeLogins(w, nil)
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, s.o.FrontendURL+"/?auth_error=callback_failed", http.StatusFound)
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		fail("provider answered error "+truncate(e, 64), nil)
		return
	}
	// RFC 9207: a provider that names itself in the response must be ours,
	// or a response meant for another provider is being replayed here.
	if err := s.o.OIDC.CheckResponseIssuer(ctx, q.Get("iss"), q.Has("iss")); err != nil {
		fail("authorization response issuer", err)
		return
	}
	pending := s.openLogins(r)
	p, rest, ok := takeLogin(pending, q.Get("state"))
	if !ok {
		fail("state matches no pending login (missing, expired or foreign login-state cookie)", nil)
		return
	}
	if q.Get("code") == "" {
		fail("no code", nil)
		return
	}
	tokens, prof, err := s.o.OIDC.Exchange(ctx, q.Get("code"), p.Verifier, p.Nonce)
	if err != nil {
		fail("code exchange or ID token validation", err)
		return
	}
	if _, err := s.o.Store.UpsertUser(ctx, docplatform.User{
		ID: prof.Subject, Email: prof.Email, Name: prof.Name, PreferredUsername: prof.PreferredUsername,
	}); err != nil {
		fail("saving the user", err)
		return
	}
	s.setAccessCookie(ctx, w, tokens.AccessToken, tokens.ExpiresIn)
	// A provider may issue no refresh token (no offline access for the
	// client); an empty cookie would only make /refresh call it for nothing.
	if tokens.RefreshToken != "" {
		s.setRefreshCookie(w, tokens.RefreshToken)
	}
	s.setIDCookie(w, tokens.IDToken)
	s.setCSRFCookie(w, tokens.AccessToken, tokens.RefreshToken)
	s.writeLogins(w, rest)
	state(r).addNote("login of user " + prof.Subject)
	s.audit(r, docplatform.AuditLogin, docplatform.OutcomeSuccess, prof.Subject, "", "")
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, s.o.FrontendURL, http.StatusFound)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

type meGroup struct {
	ID   string           `json:"id"`
	Name string           `json:"name"`
	Role docplatform.Role `json:"role"`
}

type meResponse struct {
	Sub               string                      `json:"sub"`
	Name              string                      `json:"name"`
	Email             string                      `json:"email"`
	PreferredUsername string                      `json:"preferred_username"`
	Roles             map[string]docplatform.Role `json:"roles"`
	ExpiresIn         int64                       `json:"expires_in"`
	IsSystemAdmin     bool                        `json:"isSystemAdmin"`
	Groups            []meGroup                   `json:"groups"`
}

// me returns the caller's profile. Name and email come from the user
// record saved at login, not from the access token. A system admin sees
// every group; in groups where they have no membership their role is shown
// as ADMIN, the access they effectively have.
//
// Everything but a system admin's list of all groups comes from the read
// check 4 made for this request (st.access): no second read of the user or
// the groups.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	st := state(r)
	id := &st.identity
	u := &st.access.User
	groups, err := s.groupsOf(r.Context(), id, st.access.Groups)
	if err != nil {
		s.internalError(w, r, "me: load groups", err)
		return
	}
	exp := int64(st.token.Expiry.Sub(s.o.Now()) / time.Second)
	if exp < 0 {
		exp = 0
	}
	writeJSON(w, http.StatusOK, meResponse{
		Sub: id.UserID, Name: u.Name, Email: u.Email, PreferredUsername: u.PreferredUsername,
		Roles: id.GroupRoles, ExpiresIn: exp, IsSystemAdmin: id.IsSystemAdmin, Groups: groups,
	})
}

// groupsOf lists the caller's groups for /me, by name then id: a member's
// live groups (mine, from the request's identity read), or every live
// group for a system admin.
func (s *Server) groupsOf(ctx context.Context, id *docplatform.Identity, mine []docplatform.GroupAccess) ([]meGroup, error) {
	var out []meGroup
	if id.IsSystemAdmin {
		all, err := s.o.Store.ListGroups(ctx)
		if err != nil {
			return nil, err
		}
		out = make([]meGroup, 0, len(all))
		for _, g := range all {
			if g.DeletedAt != nil {
				continue
			}
			role, ok := id.GroupRoles[g.ID]
			if !ok {
				role = docplatform.RoleAdmin
			}
			out = append(out, meGroup{g.ID, g.Name, role})
		}
	} else {
		out = make([]meGroup, len(mine))
		for i, g := range mine {
			out[i] = meGroup{g.GroupID, g.GroupName, g.Role}
		}
	}
	slices.SortFunc(out, func(a, b meGroup) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// refresh renews the tokens. The route is public (the access cookie may
// have expired), so this handler itself requires the refresh_token cookie
// and the CSRF double-submit with a token signed for that refresh token,
// always. Several refresh_token cookies are refused, not resolved: the
// first, which net/http would pick, is the one with the longest path, and
// a sibling subdomain can plant one under /api/auth/refresh/… to make the
// browser take over a session of its choosing.
func (s *Server) refresh(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if n := len(r.CookiesNamed(cookieRefresh)); n > 1 {
		state(r).addNote("several refresh_token cookies")
		httperr.Write(w, http.StatusUnauthorized, "Ambiguous refresh token: several refresh_token cookies")
		return
	}
	refreshToken, _ := onlyCookie(r, cookieRefresh)
	if refreshToken == "" {
		httperr.Write(w, http.StatusUnauthorized, "No refresh token available")
		return
	}
	if !s.refreshCSRF(r, refreshToken) {
		s.deny(w, r, "", "CSRF token validation failed")
		return
	}
	tokens, err := s.refreshes.do(ctx, s.o.Now(), refreshToken, s.o.OIDC.Refresh)
	if errors.Is(err, sso.ErrRefused) {
		state(r).addNote("refresh refused by the provider: " + err.Error())
		s.audit(r, docplatform.AuditRefreshFailed, docplatform.OutcomeFailure, "", "", "refused by the provider")
		s.clearAuthCookies(w)
		httperr.Write(w, http.StatusUnauthorized, "Token refresh failed")
		return
	}
	if err != nil {
		// The provider is unreachable: the session may still be good, so
		// the cookies stay for a retry.
		s.o.Logger.ErrorContext(ctx, "refresh: identity provider unavailable", slog.String("error", err.Error()))
		httperr.Write(w, http.StatusBadGateway, "Identity provider unavailable")
		return
	}
	s.setAccessCookie(ctx, w, tokens.AccessToken, tokens.ExpiresIn)
	if tokens.RefreshToken != "" {
		s.setRefreshCookie(w, tokens.RefreshToken)
		refreshToken = tokens.RefreshToken
	}
	if tokens.IDToken != "" {
		s.setIDCookie(w, tokens.IDToken)
	}
	s.setCSRFCookie(w, tokens.AccessToken, refreshToken)
	writeJSON(w, http.StatusOK, map[string]int64{"expires_in": int64(tokens.ExpiresIn / time.Second)})
}

// logout clears the auth cookies and sends the browser to the provider's
// end_session endpoint. A cross-site request (a link or image elsewhere)
// only goes back to the frontend: logging people out is not for other
// sites to decide. When the provider has a revocation endpoint the token
// the browser sent is revoked first, best effort: the refresh token's
// cookie path keeps it away from this endpoint, so that is the access
// token (ending the provider session through id_token_hint is what ends
// the refresh token).
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	w.Header().Set("Cache-Control", "no-store")
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		http.Redirect(w, r, s.o.FrontendURL, http.StatusFound)
		return
	}
	var hint, who string
	if c, err := r.Cookie(cookieID); err == nil {
		hint = c.Value
	}
	if c, err := r.Cookie(cookieAccess); err == nil && c.Value != "" {
		if tok, err := s.o.OIDC.VerifyAccessToken(ctx, c.Value); err == nil {
			who = tok.Subject
		}
	}
	if c, err := r.Cookie(cookieRefresh); err == nil && c.Value != "" {
		s.revoke(ctx, c.Value, "refresh_token")
	} else if c, err := r.Cookie(cookieAccess); err == nil && c.Value != "" {
		s.revoke(ctx, c.Value, "access_token")
	}
	s.clearAuthCookies(w)
	s.audit(r, docplatform.AuditLogout, docplatform.OutcomeSuccess, who, "", "")
	target, err := s.o.OIDC.EndSessionURL(ctx, hint, s.postLogout)
	if err != nil {
		s.o.Logger.WarnContext(ctx, "logout: identity provider unavailable; cookies cleared only", slog.String("error", err.Error()))
		target = s.o.FrontendURL
	}
	if target == "" {
		// No end_session endpoint: no provider logout to go through, and
		// SSO_POST_LOGOUT_REDIRECT_URI names where the provider sends the
		// browser after one, so the browser goes back to the frontend.
		target = s.o.FrontendURL
	}
	http.Redirect(w, r, target, http.StatusFound)
}

func (s *Server) revoke(ctx context.Context, token, hint string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.o.OIDC.RevokeToken(ctx, token, hint); err != nil {
		s.o.Logger.WarnContext(ctx, "logout: revocation failed", slog.String("error", err.Error()))
	}
}

// health reports which parts answer: the database and the provider's
// discovery document, without which it answers 503 ("unavailable"), and
// Options.Parts (document storage, the rate-limit counters), whose
// failure makes the platform "degraded" but still 200, since it serves
// most requests without them (a load balancer should not take every
// replica out for them). Each part is asked at once, for at most 3 s. It
// is public and never rate-limited.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := append([]Part{
		{Name: "database", Check: s.o.Store.Ping},
		{Name: "identityProvider", Check: s.o.OIDC.Discover},
	}, s.o.Parts...)
	up := make([]bool, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			up[i] = c.Check(ctx) == nil
		}()
	}
	wg.Wait()
	body := map[string]string{"status": "ok"}
	status := http.StatusOK
	for i, c := range checks {
		body[c.Name] = "up"
		if up[i] {
			continue
		}
		body[c.Name] = "down"
		if i < 2 {
			body["status"], status = "unavailable", http.StatusServiceUnavailable
		} else if status == http.StatusOK {
			body["status"] = "degraded"
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, body)
}
