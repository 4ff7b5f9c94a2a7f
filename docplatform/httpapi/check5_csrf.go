package httpapi

import (
	"crypto/subtle"
	"net/http"
)

// csrfCheck is check 5: a state-changing request that a cookie
// authenticated must echo the csrf_token cookie in X-CSRF-Token (compared
// in constant time). The decision rests on the credential that
// authenticated, so a stray Authorization or X-API-Key header cannot switch
// the check off for a request the cookie authenticated.
func (s *Server) csrfCheck(rt *Route) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if rt.Access.Level == LevelPublic {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			default:
				next.ServeHTTP(w, r)
				return
			}
			if state(r).cred != credCookie || validCSRF(r) {
				next.ServeHTTP(w, r)
				return
			}
			s.deny(w, r, "", "CSRF token validation failed")
		})
	}
}

// validCSRF reports whether the request carries exactly one X-CSRF-Token
// equal to a non-empty csrf_token cookie.
func validCSRF(r *http.Request) bool {
	hdr := r.Header.Values("X-CSRF-Token")
	c, err := r.Cookie(cookieCSRF)
	if len(hdr) != 1 || err != nil || c.Value == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hdr[0]), []byte(c.Value)) == 1
}
