package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

// apiKeyCheck is check 3: with X-API-Key on a route that admits keys, the
// key is looked up by its HMAC. Failures are counted per client IP (an
// IPv6 client's per network, as in check 1); once
// the budget is spent the request is refused with 429 before any lookup,
// and a success clears the count. On routes that do not admit keys the
// header is a 403, whatever else the request carries.
func (s *Server) apiKeyCheck(rt *Route) func(http.Handler) http.Handler {
	lockedOut := s.metrics.refusal("api_key")
	return func(next http.Handler) http.Handler {
		if rt.Access.Level == LevelPublic {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			raw := r.Header.Get(hdrAPIKey)
			if raw == "" {
				next.ServeHTTP(w, r)
				return
			}
			if !rt.Access.allowsAPIKey() {
				s.deny(w, r, "", "API key authentication is not allowed for this endpoint")
				return
			}
			st := state(r)
			ctx := r.Context()
			failKey := st.concat("apikey-fail:", st.limitKey) // in the state's text: no allocation
			win, err := s.failures.Store.Peek(ctx, failKey)
			if err != nil {
				s.o.Logger.WarnContext(ctx, "API-key failure counter unavailable", slog.String("error", err.Error()))
			} else if win.Count >= int64(s.failures.Max) {
				w.Header().Set("Retry-After", seconds(win.ResetIn))
				lockedOut.Inc()
				httperr.Write(w, http.StatusTooManyRequests, "Too many failed API key attempts")
				return
			}
			grant, err := s.o.Store.APIKeyGrant(ctx, s.appendAPIKeyHash(st.keyHash[:0], raw))
			if errors.Is(err, docplatform.ErrNotFound) && s.prev != nil {
				grant, err = s.rekeyAPIKey(ctx, raw, st.keyHash[:])
			}
			if errors.Is(err, docplatform.ErrNotFound) {
				if err := s.failures.Fail(ctx, failKey); err != nil {
					s.o.Logger.WarnContext(ctx, "API-key failure counter unavailable", slog.String("error", err.Error()))
				}
				st.addNote("API key refused")
				s.audit(r, docplatform.AuditAPIKeyFailed, docplatform.OutcomeFailure, "", "", "unknown key")
				httperr.Write(w, http.StatusUnauthorized, "Invalid API key")
				return
			}
			if err != nil {
				s.internalError(w, r, "API key lookup", err)
				return
			}
			if win.Count > 0 {
				if err := s.failures.Succeed(ctx, failKey); err != nil {
					s.o.Logger.WarnContext(ctx, "API-key failure counter unavailable", slog.String("error", err.Error()))
				}
			}
			s.uses.touch(grant.KeyID, s.o.Now())
			st.cred, st.key = credAPIKey, docplatform.APIKey{ID: grant.KeyID, GroupID: grant.GroupID}
			// Check 4 makes the identity from these: the grant's roles
			// map is the store's, shared and read-only.
			st.identity = docplatform.Identity{GroupRoles: grant.Roles, APIKeyID: grant.KeyID}
			next.ServeHTTP(w, r)
		})
	}
}
