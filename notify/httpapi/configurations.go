package httpapi

import (
	"net/http"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/access"
	"github.com/govkit/govkit/notify/query"
)

func init() { routeGroups = append(routeGroups, (*Server).configurationRoutes) }

// configurationRoutes: SuperAdmin CRUD of dynamic configuration records.
func (s *Server) configurationRoutes() {
	c := &crud[notify.Configuration, *notify.Configuration]{
		coll:    s.store.Configurations(),
		schema:  query.Configurations,
		prepare: s.rssHTTPHost,
	}
	c.routes(s, "/configurations", "configuration", "Configuration", superAdminOnly)
}

// rssHTTPHost checks the required fields and is the original's RSS pipe: a per-service notification
// configuration with an RSS feed needs an httpHost for the links in the
// notifications the feed produces; when neither the record nor the config
// names one, the host of the request that writes the record is kept.
func (s *Server) rssHTTPHost(r *http.Request, c *notify.Configuration) error {
	if c.Name == "" {
		return &notify.FieldError{Field: "name", Rule: "is required"}
	}
	if c.Value == nil {
		return &notify.FieldError{Field: "value", Rule: "is required"}
	}
	if err := checkRss(c); err != nil {
		return err
	}
	if c.Name != "notification" || s.cfg.HTTPHost != "" {
		return nil
	}
	v, ok := c.Value.(notify.Fields)
	if !ok || !v.Has("rss") || v.Has("httpHost") {
		return nil
	}
	v = v.Clone()
	v.Set("httpHost", requestHost(r))
	c.Value = v
	return nil
}

// requestHost is scheme://host[:port] of the request, the scheme as the
// client used it (X-Forwarded-Proto from a trusted proxy counts).
func requestHost(r *http.Request) string {
	return access.Scheme(r) + "://" + r.Host
}
