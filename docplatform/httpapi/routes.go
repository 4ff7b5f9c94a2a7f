package httpapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/httperr"
)

// limitClass picks a route's rate-limit budget. Auth routes have their own
// budgets in place of the global one, as in the original.
type limitClass int

const (
	limitGlobal limitClass = iota
	limitNone              // health and CORS preflights: never throttled
	limitLogin
	limitCallback
	limitLogout
	limitRefresh
)

// Route is one entry of the route table.
type Route struct {
	Method  string
	Pattern string // ServeMux path pattern; "" method means any method
	Access  Access
	limit   limitClass
	Handler http.HandlerFunc
}

func (rt *Route) pattern() string {
	if rt.Method == "" {
		return rt.Pattern
	}
	return rt.Method + " " + rt.Pattern
}

// Routes returns the route table (for documentation and tests).
func (s *Server) Routes() []Route { return slices.Clone(s.routes) }

// routeTable declares every route with its access level beside its handler.
// The group-scoped resources (groups, documents, workflows, OCR results,
// review sessions, audit log) declare theirs in resourceRoutes.
func (s *Server) routeTable() []Route {
	return append(s.resourceRoutes(), []Route{
		{"GET", "/api/health", Public(), limitNone, s.health},

		{"GET", "/api/auth/login", Public(), limitLogin, s.login},
		{"GET", "/api/auth/callback", Public(), limitCallback, s.callback},
		{"GET", "/api/auth/me", Authenticated(), limitGlobal, s.me},
		{"POST", "/api/auth/refresh", Public(), limitRefresh, s.refresh},
		{"GET", "/api/auth/logout", Public(), limitLogout, s.logout},

		{"GET", "/api/api-key", Group(FromQuery, "groupId", docplatform.RoleAdmin), limitGlobal, s.getAPIKey},
		{"POST", "/api/api-key", Group(FromBody, "groupId", docplatform.RoleAdmin), limitGlobal, s.createAPIKey},
		{"DELETE", "/api/api-key", Group(FromQuery, "groupId", docplatform.RoleAdmin), limitGlobal, s.deleteAPIKey},
		{"POST", "/api/api-key/regenerate", Group(FromBody, "groupId", docplatform.RoleAdmin), limitGlobal, s.regenerateAPIKey},

		// Preflights are answered before any budget is spent, as the
		// original's CORS middleware did ahead of its throttler: a
		// frontend on another origin would otherwise get half the budget
		// the limits promise. They cost no database or provider work.
		{"OPTIONS", "/", Public(), limitNone, s.preflight},
		{"GET", "/", Public(), limitGlobal, s.frontend},
		{"", "/", Public(), limitGlobal, s.notFound},
	}...)
}

// frontend serves the web UI (Options.Frontend) at every GET path outside
// /api/ that no other route matches: the page for its client-side routes,
// its scripts, styles and icons.
func (s *Server) frontend(w http.ResponseWriter, r *http.Request) {
	if s.o.Frontend == nil || r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/api/") {
		s.notFound(w, r)
		return
	}
	s.o.Frontend.ServeHTTP(w, r)
}

// notFound answers requests no route matches: 405 with Allow when the path
// exists under other methods, else 404, both as JSON errors.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		// The fallbacks match every path; they say nothing of this one.
		if _, p := s.mux.Handler(probe); p != "" && p != "/" && p != "GET /" && !strings.HasPrefix(p, "OPTIONS ") {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		httperr.Write(w, http.StatusMethodNotAllowed, "Cannot "+r.Method+" "+r.URL.Path)
		return
	}
	httperr.Write(w, http.StatusNotFound, "Cannot "+r.Method+" "+r.URL.Path)
}
