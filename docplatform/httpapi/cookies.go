package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
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

func (s *Server) setAccessCookie(w http.ResponseWriter, token string, lifetime time.Duration) {
	s.setCookie(w, cookieAccess, token, pathAccess, lifetime, true, http.SameSiteLaxMode)
}

func (s *Server) setRefreshCookie(w http.ResponseWriter, token string) {
	s.setCookie(w, cookieRefresh, token, pathRefresh, refreshLifetime, true, http.SameSiteLaxMode)
}

func (s *Server) setIDCookie(w http.ResponseWriter, token string) {
	s.setCookie(w, cookieID, token, pathID, refreshLifetime, true, http.SameSiteLaxMode)
}

// setCSRFCookie issues a fresh CSRF token (32 random bytes, hex) that the
// frontend's scripts can read.
func (s *Server) setCSRFCookie(w http.ResponseWriter) {
	b := make([]byte, 32)
	rand.Read(b)
	s.setCookie(w, cookieCSRF, hex.EncodeToString(b), pathCSRF, refreshLifetime, false, http.SameSiteStrictMode)
}

func (s *Server) clearAuthCookies(w http.ResponseWriter) {
	s.clearCookie(w, cookieAccess, pathAccess, true, http.SameSiteLaxMode)
	s.clearCookie(w, cookieRefresh, pathRefresh, true, http.SameSiteLaxMode)
	s.clearCookie(w, cookieID, pathID, true, http.SameSiteLaxMode)
	s.clearCookie(w, cookieCSRF, pathCSRF, false, http.SameSiteStrictMode)
}
