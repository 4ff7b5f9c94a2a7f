package httpapi

import (
	"net/http"
	"strings"

	"github.com/govkit/govkit/internal/httperr"
)

// tokenCheck is check 2: on a non-public route without X-API-Key, the
// access token is read from the access_token cookie, else from
// Authorization: Bearer, and verified. Whether the cookie or the header
// authenticated is remembered, because CSRF (check 5) depends on it and
// not on which headers happen to be present. A credential given twice
// (two access_token cookies, two X-API-Key lines, or two Authorization
// lines when that header is the one used) is refused as ambiguous, with
// 401, rather than resolved by taking one.
func (s *Server) tokenCheck(rt *Route) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if rt.Access.Level == LevelPublic {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.Header[hdrAPIKey]) > 1 {
				// Which line counts is for no one to guess: a proxy in
				// front may have checked the last while we would take
				// the first.
				state(r).addNote("several X-API-Key header lines")
				httperr.Write(w, http.StatusUnauthorized, "Ambiguous credentials: several X-API-Key headers")
				return
			}
			if r.Header.Get(hdrAPIKey) != "" {
				next.ServeHTTP(w, r) // check 3 decides
				return
			}
			raw, cred := "", credNone
			// Parsed once, with no allocation: the cookie line is the
			// request's largest.
			access, accessN := namedCookie(r.Header, cookieAccess)
			if accessN > 1 {
				// Not resolved by taking the first: browsers send first the
				// cookie with the longest path, which is the one a sibling
				// subdomain can plant to have the victim act in a session of
				// the planter's choosing.
				state(r).addNote("several access_token cookies")
				httperr.Write(w, http.StatusUnauthorized, "Ambiguous credentials: several access_token cookies")
				return
			}
			if accessN == 1 && access != "" {
				raw, cred = access, credCookie
			} else if len(r.Header.Values("Authorization")) > 1 {
				state(r).addNote("several Authorization header lines")
				httperr.Write(w, http.StatusUnauthorized, "Ambiguous credentials: several Authorization headers")
				return
			} else if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "Bearer ") {
				raw, cred = strings.TrimSpace(a[7:]), credBearer
			}
			if raw == "" {
				httperr.Write(w, http.StatusUnauthorized, "Unauthorized")
				return
			}
			tok, err := s.o.OIDC.VerifyAccessToken(r.Context(), raw)
			if err != nil {
				state(r).addNote("access token refused: " + err.Error())
				httperr.Write(w, http.StatusUnauthorized, "Unauthorized")
				return
			}
			st := state(r)
			st.cred, st.token = cred, tok
			if cred == credCookie {
				st.accessCookie = raw // check 5 verifies the CSRF token's binding to it
			}
			next.ServeHTTP(w, r)
		})
	}
}
