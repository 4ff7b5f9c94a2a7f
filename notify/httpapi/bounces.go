package httpapi

import (
	"net/http"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/query"
)

func init() { routeGroups = append(routeGroups, (*Server).bounceRoutes) }

// bounceRoutes: SuperAdmin CRUD of bounce records (the inbound SMTP server,
// notify/inbound, writes them in-process).
func (s *Server) bounceRoutes() {
	c := &crud[notify.Bounce, *notify.Bounce]{coll: s.store.Bounces(), schema: query.Bounces, prepare: checkBounce}
	c.routes(s, "/bounces", "bounce", "Bounce", superAdminOnly)
}

func checkBounce(_ *http.Request, b, _ *notify.Bounce) error {
	switch {
	case b.Channel == "":
		return &notify.FieldError{Field: "channel", Rule: "is required"}
	case b.UserChannelID == "":
		return &notify.FieldError{Field: "userChannelId", Rule: "is required"}
	case b.State != "" && b.State != notify.BounceActive && b.State != notify.BounceDeleted:
		return &notify.FieldError{Field: "state", Rule: "must be active or deleted"}
	}
	return nil
}
