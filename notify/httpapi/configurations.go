package httpapi

import (
	"net/http"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/query"
	"github.com/govkit/govkit/notify/subscription"
)

func init() { routeGroups = append(routeGroups, (*Server).configurationRoutes) }

// configurationRoutes: SuperAdmin CRUD of dynamic configuration records.
func (s *Server) configurationRoutes() {
	c := &crud[notify.Configuration, *notify.Configuration]{
		coll:      s.store.Configurations(),
		schema:    query.Configurations,
		prepare:   s.prepareConfiguration,
		checkBulk: s.uniqueConfigurations,
	}
	c.routes(s, "/configurations", "configuration", "Configuration", superAdminOnly)
}

// prepareConfiguration checks a configuration record before any write:
// name and value are required, the RSA key pair stays usable (see
// subscription.CheckRSAKeyPair; the service decrypts confirmation codes
// with it and the health check wants it), RSS settings must be usable by
// cron, and a notification record with an RSS feed gets an httpHost.
func (s *Server) prepareConfiguration(r *http.Request, c, cur *notify.Configuration) error {
	if c.Name == "" {
		return &notify.FieldError{Field: "name", Rule: "is required"}
	}
	if c.Value == nil {
		return &notify.FieldError{Field: "value", Rule: "is required"}
	}
	if cur != nil && cur.Name == subscription.RSAConfigName && c.Name != subscription.RSAConfigName {
		return &notify.FieldError{Field: "name", Rule: "the RSA key pair record keeps the name rsa"}
	}
	if c.Name == subscription.RSAConfigName {
		if err := subscription.CheckRSAKeyPair(c.Value); err != nil {
			return &notify.FieldError{Field: "value", Rule: err.Error()}
		}
	}
	if err := checkRss(c); err != nil {
		return err
	}
	return s.rssHTTPHost(r, c)
}

// uniqueConfigurations refuses a bulk update that would give two records
// the same name and serviceName (the unique index would stop the update
// half-way, after some records were written).
func (s *Server) uniqueConfigurations(r *http.Request, next []*notify.Configuration, ids []notify.ID) error {
	type pair struct{ name, service string }
	seen := make(map[pair]bool, len(next))
	in := make(bson.A, len(ids))
	for i, id := range ids {
		in[i] = id
	}
	for _, c := range next {
		p := pair{c.Name, c.ServiceName}
		if seen[p] {
			return &notify.FieldError{Field: "name", Rule: "the update would give several records the name " + c.Name + " and serviceName " + c.ServiceName}
		}
		seen[p] = true
	}
	for p := range seen {
		n, err := s.store.Configurations().Count(r.Context(), bson.D{
			{Key: "name", Value: p.name}, {Key: "serviceName", Value: serviceNameValue(p.service)}, {Key: "_id", Value: bson.D{{Key: "$nin", Value: in}}},
		})
		if err != nil {
			return err
		}
		if n > 0 {
			return &notify.FieldError{Field: "name", Rule: "another record already has the name " + p.name + " and serviceName " + p.service}
		}
	}
	return nil
}

// serviceNameValue matches an absent serviceName as the unique index sees
// it: missing and null are the same key.
func serviceNameValue(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// rssHTTPHost is the original's RSS pipe: a per-service notification
// configuration with an RSS feed needs an httpHost for the links in the
// notifications the feed produces; when neither the record nor the config
// names one, the host of the request that writes the record is kept.
func (s *Server) rssHTTPHost(r *http.Request, c *notify.Configuration) error {
	if c.Name != "notification" || s.cfg.HTTPHost != "" {
		return nil
	}
	v, ok := c.Value.(notify.Fields)
	if !ok || !v.Has("rss") || v.Has("httpHost") {
		return nil
	}
	v = v.Clone()
	v.Set("httpHost", s.linkHost(r))
	c.Value = v
	return nil
}
