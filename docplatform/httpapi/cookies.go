package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/textproto"
	"strings"
	"time"
)

// Cookie names and paths are the seed's.
const (
	cookieAccess  = "access_token"
	cookieRefresh = "refresh_token"
	cookieID      = "id_token"
	cookieCSRF    = "csrf_token"
	cookieLogin   = "pkce_verifier"

	pathAccess  = "/"
	pathRefresh = "/api/auth/refresh"
	pathID      = "/api/auth"
	pathCSRF    = "/"
	// The login state is read at the callback. A copy under the login path
	// lets /api/auth/login see the logins already pending, so a second tab
	// adds to them instead of overwriting them (browsers send a cookie only
	// to paths under its own).
	pathLoginCallback = "/api/auth/callback"
	pathLoginStart    = "/api/auth/login"
)

// Lifetimes: the refresh token cookie lives 30 days (seed); the id_token
// and csrf_token live as long, so that logout still has its hint and
// refresh still has its CSRF token after the access cookie expired.
const (
	refreshLifetime = 30 * 24 * time.Hour
	loginLifetime   = 2 * time.Minute
)

func (s *Server) setCookie(w http.ResponseWriter, name, value, path string, maxAge time.Duration, httpOnly bool, sameSite http.SameSite) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: path, MaxAge: int(maxAge / time.Second),
		HttpOnly: httpOnly, Secure: s.o.SecureCookies, SameSite: sameSite,
	})
}

func (s *Server) clearCookie(w http.ResponseWriter, name, path string, httpOnly bool, sameSite http.SameSite) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: path, MaxAge: -1,
		HttpOnly: httpOnly, Secure: s.o.SecureCookies, SameSite: sameSite,
	})
}

// maxCookie is the largest cookie (name, value and attributes) every
// browser keeps (RFC 6265 §6.1 asks for at least 4096 bytes, and that is
// what they give).
const maxCookie = 4096

// setAccessCookie sets the access token cookie. A token too large for a
// cookie is still sent (the seed fixes the cookie), but the browser will
// drop it and every request will be 401; the log says why, so an operator
// can shrink the provider's tokens (Keycloak: fewer role mappers, or
// lightweight access tokens).
func (s *Server) setAccessCookie(ctx context.Context, w http.ResponseWriter, token string, lifetime time.Duration) {
	if n := len(cookieAccess) + len(token) + 100; n > maxCookie {
		s.o.Logger.WarnContext(ctx, "access token too large for a browser cookie; browsers will drop it",
			slog.Int("tokenBytes", len(token)), slog.Int("cookieLimit", maxCookie))
	}
	s.setCookie(w, cookieAccess, token, pathAccess, lifetime, true, http.SameSiteLaxMode)
}

func (s *Server) setRefreshCookie(w http.ResponseWriter, token string) {
	s.setCookie(w, cookieRefresh, token, pathRefresh, refreshLifetime, true, http.SameSiteLaxMode)
}

func (s *Server) setIDCookie(w http.ResponseWriter, token string) {
	s.setCookie(w, cookieID, token, pathID, refreshLifetime, true, http.SameSiteLaxMode)
}

// setCSRFCookie issues a fresh CSRF token, signed for the login's access
// and refresh tokens (see csrfToken), that the frontend's scripts can read.
func (s *Server) setCSRFCookie(w http.ResponseWriter, access, refresh string) {
	s.setCookie(w, cookieCSRF, s.csrfToken(access, refresh), pathCSRF, refreshLifetime, false, http.SameSiteStrictMode)
}

func (s *Server) clearAuthCookies(w http.ResponseWriter) {
	s.clearCookie(w, cookieAccess, pathAccess, true, http.SameSiteLaxMode)
	s.clearCookie(w, cookieRefresh, pathRefresh, true, http.SameSiteLaxMode)
	s.clearCookie(w, cookieID, pathID, true, http.SameSiteLaxMode)
	s.clearCookie(w, cookieCSRF, pathCSRF, false, http.SameSiteStrictMode)
}

// maxRequestCookies is net/http's default limit on the cookies of one
// request (GODEBUG httpcookiemaxnum): past it, Request.Cookies and
// CookiesNamed return none.
const maxRequestCookies = 3000

// namedCookie returns the value of the request's first cookie called
// name and how many valid cookies of that name it carries, read exactly
// as Request.CookiesNamed reads them — the same trimming of spaces, the
// same rule for valid values (one with an invalid byte is skipped), the
// surrounding double quotes stripped, none at all past net/http's default
// limit of cookies — without allocating: every request with a session
// reads its access cookie, and CookiesNamed allocates a slice and a
// Cookie for it. name must be a valid cookie name. A custom
// GODEBUG=httpcookiemaxnum is not looked at (this reader allocates
// nothing per cookie, which is what that limit guards against).
func namedCookie(h http.Header, name string) (value string, n int) {
	lines := h["Cookie"]
	count := 0
	for _, line := range lines {
		count += strings.Count(line, ";") + 1
	}
	if count > maxRequestCookies {
		return "", 0
	}
	for _, line := range lines {
		line = textproto.TrimString(line)
		var part string
		for len(line) > 0 {
			part, line, _ = strings.Cut(line, ";")
			part = textproto.TrimString(part)
			if part == "" {
				continue
			}
			k, v, _ := strings.Cut(part, "=")
			if textproto.TrimString(k) != name {
				continue
			}
			if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
				v = v[1 : len(v)-1]
			}
			if !validCookieValue(v) {
				continue
			}
			if n == 0 {
				value = v
			}
			n++
		}
	}
	return value, n
}

// validCookieValue is net/http's rule for a cookie value's bytes:
// printable ASCII and the space, but not the double quote, the semicolon
// or the backslash.
func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 || b >= 0x7f || b == '"' || b == ';' || b == '\\' {
			return false
		}
	}
	return true
}
