package httpapi

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/govkit/govkit/notify/access"
	"github.com/govkit/govkit/notify/config"
)

// CheckAuthority looks, under NODE_ENV=production, for configurations that
// hand the admin address's super-admin rights to people who should not
// have them. It refuses one — adminIps covering every address (NotifyBC's
// Docker image bakes in 0.0.0.0/0 for evaluation), where every caller is
// super admin — and returns warnings, for `serve` to log at start, about
// those that have a legitimate form:
//
//   - adminIps that include an address of trustedReverseProxyIps: a
//     request such a proxy forwards without X-Forwarded-For (or makes
//     itself) is super admin. Safe only while the proxy always appends the
//     header, as ingress controllers do.
//   - adminIps that include an address of siteMinderReverseProxyIps:
//     every request the SiteMinder proxy forwards without SiteMinder
//     headers (its unprotected paths) is super admin. NotifyBC's defaults
//     (127.0.0.1 for both) do this for any proxy on the same host.
//   - no httpHost: links in mail follow the request's Host when it is one
//     of the service's names, else the listen address (see linkHost).
//
// Forwarding headers from a peer that is not a trusted proxy can only be
// seen at run time: the server warns about them then (warnForwarding).
func CheckAuthority(cfg *config.Config, nodeEnv string) ([]string, error) {
	if nodeEnv != "production" {
		return nil, nil
	}
	admin, err := access.ParsePrefixes(cfg.AdminIPs)
	if err != nil {
		return nil, fmt.Errorf("adminIps: %w", err)
	}
	for _, p := range admin {
		if p.Bits() == 0 {
			return nil, fmt.Errorf("adminIps: %s makes every caller super admin; NODE_ENV=production refuses it: name the addresses of the machines that administer the service, and give people access tokens or OIDC", p)
		}
	}
	var warnings []string
	for _, c := range []struct{ key, why string }{
		{"trustedReverseProxyIps", "a request such a proxy forwards without X-Forwarded-For, or makes itself, is super admin; this is safe only while the proxy always appends X-Forwarded-For"},
		{"siteMinderReverseProxyIps", "every request the SiteMinder proxy forwards without SiteMinder headers (its unprotected paths) is super admin, and so is every request of any other proxy at that address"},
	} {
		list := cfg.TrustedReverseProxyIPs
		if c.key == "siteMinderReverseProxyIps" {
			list = cfg.SiteMinderReverseProxyIPs
		}
		proxies, err := access.ParsePrefixes(list)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.key, err)
		}
		if both := overlap(admin, proxies); len(both) > 0 {
			warnings = append(warnings, fmt.Sprintf("security: adminIps and %s share %s: %s. Keep admin addresses apart from the proxies' (give administrators access tokens or OIDC instead)",
				c.key, strings.Join(both, ", "), c.why))
		}
	}
	if cfg.HTTPHost == "" {
		warnings = append(warnings, "security: httpHost is not set: links in mail use the request's Host only when it is one of the service's names (localhost, host, allowedHosts), else the listen address; set httpHost to the service's public URL (e.g. https://notify.example.org)")
	}
	return warnings, nil
}

// overlap lists the ranges of a that share addresses with some range of b.
func overlap(a, b []netip.Prefix) []string {
	var out []string
	for _, p := range a {
		for _, q := range b {
			if p.Overlaps(q) {
				out = append(out, p.String())
				break
			}
		}
	}
	return out
}
