package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/govkit/govkit/notify/access"
)

// linkHost is {http_host} of the messages a request causes (and the
// httpHost an RSS configuration keeps): httpHost when set; else
// scheme://host[:port] of the request — the scheme as the client used it,
// X-Forwarded-Proto from a trusted proxy counting — when its Host is one
// of the service's names (access.Hosts); else the listen address, with a
// warning. NotifyBC took any Host, so whoever asked for a confirmation
// chose the site its links pointed at.
func (s *Server) linkHost(r *http.Request) string {
	if s.cfg.HTTPHost != "" {
		return s.cfg.HTTPHost
	}
	if s.ident.Hosts().Own(r.Host) {
		return access.Scheme(r) + "://" + r.Host
	}
	host := s.cfg.Host
	if a, err := netip.ParseAddr(host); host == "" || (err == nil && a.IsUnspecified()) {
		host = "localhost"
	}
	listen := access.Scheme(r) + "://" + net.JoinHostPort(host, strconv.Itoa(s.cfg.Port))
	s.foreignHost.Do(func(skipped int) {
		s.log.Warn("a request's Host is not one of the service's names: links in the messages it causes use the listen address; set httpHost (or add the name to allowedHosts)",
			"host", shorten(r.Host), "links", listen, "more", skipped)
	})
	return listen
}
