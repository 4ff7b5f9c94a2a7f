package httpapi

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/govkit/govkit/internal/httperr"
	"github.com/govkit/govkit/internal/ratelimit"
)

// rateLimit is check 1: a per-client-IP budget for the route's class (an
// IPv6 client's budget is its network's; see Options.IPv6LimitPrefix). It
// sets X-RateLimit-Limit/Remaining/Reset (the headers the original sent)
// on every answer and Retry-After on a 429. The platform's Redis
// counters fail over to process memory while Redis does not answer
// (ratelimit.Failover), so budgets hold through its outage; a store that
// still fails lets the request through, logged: an outage of the limiter
// must not become an outage of the platform.
func (s *Server) rateLimit(rt *Route) func(http.Handler) http.Handler {
	var rule ratelimit.Rule
	var prefix, budget string
	switch rt.limit {
	case limitNone:
		return func(next http.Handler) http.Handler { return next }
	case limitLogin:
		rule, prefix, budget = s.o.AuthLimit, "rl:login:", "auth"
	case limitCallback:
		rule, prefix, budget = s.o.AuthLimit, "rl:callback:", "auth"
	case limitLogout:
		rule, prefix, budget = s.o.AuthLimit, "rl:logout:", "auth"
	case limitRefresh:
		rule, prefix, budget = s.o.RefreshLimit, "rl:refresh:", "refresh"
	default:
		rule, prefix, budget = s.o.GlobalLimit, "rl:global:", "global"
	}
	refused := s.metrics.refusal(budget)
	limit := []string{strconv.Itoa(rule.Limit)}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			st := state(r)
			// The key is built in the request state's own text: no
			// allocation (the counter stores copy a key they keep).
			d, err := ratelimit.Allow(r.Context(), s.o.Counters, st.concat(prefix, st.limitKey), rule)
			if err != nil {
				s.o.Logger.WarnContext(r.Context(), "rate limiter unavailable; request let through", slog.String("error", err.Error()))
				next.ServeHTTP(w, r)
				return
			}
			h := w.Header()
			h["X-Ratelimit-Limit"] = limit
			// The values and their slices live in the request state: no
			// allocation, whatever the numbers.
			st.rlRemaining[0], st.rlReset[0] = st.itoa(int64(d.Remaining)), st.itoa(wholeSeconds(d.ResetIn))
			h["X-Ratelimit-Remaining"] = st.rlRemaining[:]
			h["X-Ratelimit-Reset"] = st.rlReset[:]
			if !d.Allowed {
				h["Retry-After"] = h["X-Ratelimit-Reset"]
				refused.Inc()
				httperr.Write(w, http.StatusTooManyRequests, "ThrottlerException: Too Many Requests")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
