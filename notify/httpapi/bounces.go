package httpapi

import (
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/query"
)

func init() { routeGroups = append(routeGroups, (*Server).bounceRoutes) }

// bounceRoutes: SuperAdmin CRUD of bounce records (the inbound SMTP server
// writes them through this API).
func (s *Server) bounceRoutes() {
	c := &crud[notify.Bounce, *notify.Bounce]{coll: s.store.Bounces(), schema: query.Bounces}
	c.routes(s, "/bounces", "bounce", "Bounce", superAdminOnly)
}
