package httpapi

import (
	"net/http"
	"strings"

	"github.com/govkit/govkit/internal/httperr"
)

// tokenCheck is check 2: on a non-public route without X-API-Key, the
// access token is read from the access_token cookie, else from
// Authorization: Bearer, and verified. Which of the two authenticated is
// remembered, because CSRF (check 5) depends on it and not on which
// headers happen to be present.
func (s *Server) tokenCheck(rt *Route) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if rt.Access.Level == LevelPublic {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-API-Key") != "" {
				next.ServeHTTP(w, r) // check 3 decides
				return
			}
			raw, cred := "", credNone
			if c, err := r.Cookie(cookieAccess); err == nil && c.Value != "" {
				raw, cred = c.Value, credCookie
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
			next.ServeHTTP(w, r)
		})
	}
}
