package httpapi

import "github.com/govkit/govkit/notify/console"

// ConsoleSettings returns what the web console's page is given, as the
// original renders them into its page: the API prefix (restApiRoot), and
// when oidc is configured, the OpenID provider's authority (discoveryUrl
// without /.well-known/openid-configuration) and the console's client id
// (oidc.clientId). Without oidc the last two are empty and the console
// offers no OIDC sign-in.
func (s *Server) ConsoleSettings() (apiURLPrefix, oidcAuthority, oidcClientID string) {
	apiURLPrefix = s.root
	if o := s.cfg.OIDC; o != nil && o.DiscoveryURL != "" {
		oidcAuthority = console.Authority(o.DiscoveryURL)
		oidcClientID = o.ClientID
	}
	return apiURLPrefix, oidcAuthority, oidcClientID
}
