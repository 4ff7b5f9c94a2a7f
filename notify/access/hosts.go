package access

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Hosts are the names by which browsers reach the service: the host of
// httpHost, the loopback names (localhost, 127.0.0.0/8, ::1), the host the
// service listens on, and the operator's allowedHosts. Ports are not
// compared: what makes a name the service's own is that no one else's page
// can be served under it, and a DNS-rebinding page (the attack a foreign
// Host header betrays) always carries the attacker's name, whatever the
// port.
type Hosts struct {
	names map[string]bool
	// suffixes are allowedHosts entries written ".example.org": that name
	// and every name below it.
	suffixes []string
	// httpOrigin is httpHost's origin, which a browser sends in Origin
	// when a proxy in front rewrites the Host header.
	httpOrigin string
}

// NewHosts builds the list from httpHost ("" when unset; a URL such as
// https://notify.example.org, or a bare host), the listen host (an
// unspecified address such as 0.0.0.0 adds nothing) and allowedHosts
// (host names or addresses, a port being ignored; ".example.org" also
// admits every name below example.org). Package notify/config checks the
// entries' form when it loads them.
func NewHosts(httpHost, listenHost string, allowed []string) *Hosts {
	h := &Hosts{names: map[string]bool{"localhost": true}}
	if httpHost != "" {
		u, err := url.Parse(httpHost)
		if err == nil && u.Host != "" {
			h.add(u.Hostname())
			h.httpOrigin = serializeOrigin(u.Scheme, u.Host)
		} else {
			h.add(hostOnly(httpHost))
		}
	}
	if a, err := netip.ParseAddr(strings.Trim(listenHost, "[]")); err != nil || !a.IsUnspecified() {
		if listenHost != "" {
			h.add(listenHost)
		}
	}
	for _, s := range allowed {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.HasPrefix(s, ".") {
			if sfx := normalizeHost(s); len(sfx) > 1 {
				h.suffixes = append(h.suffixes, sfx)
			}
			continue
		}
		h.add(hostOnly(s))
	}
	return h
}

func (h *Hosts) add(host string) {
	if n := normalizeHost(host); n != "" {
		h.names[n] = true
	}
}

// Own reports whether hostport (a Host header: name or address, with or
// without a port) is one of the service's names.
func (h *Hosts) Own(hostport string) bool {
	if h == nil {
		return false
	}
	host := normalizeHost(hostOnly(hostport))
	if host == "" {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
		return true
	}
	if h.names[host] {
		return true
	}
	for _, sfx := range h.suffixes {
		if host == sfx[1:] || strings.HasSuffix(host, sfx) {
			return true
		}
	}
	return false
}

// hostOnly drops the port of a Host header or an allowedHosts entry
// ("example.org:8080", "[::1]:3000", "::1").
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// normalizeHost is a host name compared without case and trailing dot, or
// an address in its canonical form (IPv4-mapped IPv6 as IPv4).
func normalizeHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return host
}

// serializeOrigin is an origin as browsers send it in Origin (RFC 6454):
// lower case, the port only when it is not the scheme's default.
func serializeOrigin(scheme, hostport string) string {
	scheme = strings.ToLower(scheme)
	hostport = strings.ToLower(hostport)
	if host, port, err := net.SplitHostPort(hostport); err == nil {
		if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
			hostport = host
			if strings.Contains(host, ":") {
				hostport = "[" + host + "]"
			}
		}
	}
	return scheme + "://" + hostport
}
