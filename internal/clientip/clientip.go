// Package clientip finds the address of the client that sent an HTTP
// request when the service may sit behind reverse proxies.
//
// Per-client limits (request rates, API-key failures) must key on the real
// client, not on the proxy in front of the service: otherwise every user
// shares the proxy's budget and one client can lock out all the others.
// But X-Forwarded-For is written by whoever sends the request, so it may
// only be believed as far as it was appended by proxies we trust.
//
// The rule: start from the socket peer. While the current hop lies inside a
// trusted network, step one entry left in X-Forwarded-For (the rightmost
// entry was appended by the proxy we are talking to). The first untrusted
// address is the client. With no trusted networks configured the header is
// ignored entirely and the socket peer is the client.
package clientip

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Resolver picks the client address of a request.
type Resolver struct {
	trusted []netip.Prefix
}

// Parse builds a Resolver from a comma- or space-separated list of CIDRs or
// single addresses (the TRUSTED_PROXIES variable). An empty list trusts no
// proxy.
func Parse(list string) (*Resolver, error) {
	fields := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	return New(fields)
}

// New builds a Resolver trusting the given CIDRs or single addresses.
func New(cidrs []string) (*Resolver, error) {
	r := &Resolver{}
	for _, c := range cidrs {
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if strings.Contains(c, "/") {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: not a CIDR: %w", c, err)
			}
			// An IPv4-mapped prefix (::ffff:10.0.0.0/104) means the IPv4
			// network; addresses are compared unmapped.
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			r.trusted = append(r.trusted, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(c)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: not an address or CIDR: %w", c, err)
		}
		a = a.Unmap()
		r.trusted = append(r.trusted, netip.PrefixFrom(a, a.BitLen()))
	}
	return r, nil
}

// Trusts reports whether a lies in one of the trusted networks.
func (r *Resolver) Trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientIP returns the client address of req as a string, for use as a
// counter key. When the socket address cannot be parsed (a test harness
// that sets RemoteAddr by hand) it is returned as it is.
func (r *Resolver) ClientIP(req *http.Request) string {
	peer, ok := parseHostPort(req.RemoteAddr)
	if !ok {
		return req.RemoteAddr
	}
	if len(r.trusted) == 0 || !r.Trusts(peer) {
		return peerText(peer, req.RemoteAddr)
	}
	client := peer
	values := req.Header.Values("X-Forwarded-For")
	// Several header lines are one list in order (RFC 9110 §5.3). Each
	// line's entries are taken from the right, cut in place (no slice of
	// them per request).
	for i := len(values) - 1; i >= 0; i-- {
		rest := values[i]
		for more := true; more; {
			var entry string
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				entry, rest = rest[j+1:], rest[:j]
			} else {
				entry, more = rest, false
			}
			if strings.TrimSpace(entry) == "" {
				continue // "a,,b" or a trailing comma: no hop there
			}
			a, ok := parseHop(entry)
			if !ok {
				// A garbled hop was written by someone we cannot vouch for;
				// the last address we could check is as far as we go.
				return client.String()
			}
			client = a
			if !r.Trusts(a) {
				return addrText(a, hopText(entry))
			}
		}
	}
	// Every hop is trusted: the leftmost one is as close to the client as
	// the chain tells.
	return client.String()
}

// peerText is peer's text. When the connection's address already spells
// it as String would ("192.0.2.1:5000", the usual case), it is that part
// of the address, so that every request does not format and allocate its
// client's address again.
func peerText(peer netip.Addr, remoteAddr string) string {
	if i := strings.LastIndexByte(remoteAddr, ':'); i > 0 && peer.Is4() {
		return addrText(peer, remoteAddr[:i])
	}
	return peer.String()
}

// addrText is a.String(): text itself when it already spells a so (an
// entry of X-Forwarded-For as a proxy wrote it, the host part of the
// connection's address), without formatting and allocating it again.
func addrText(a netip.Addr, text string) string {
	var buf [len("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")]byte
	if len(text) <= len(buf) && string(a.AppendTo(buf[:0])) == text {
		return text
	}
	return a.String()
}

// hopText is an X-Forwarded-For entry's text as parseHop reads it first.
func hopText(s string) string { return strings.Trim(strings.TrimSpace(s), `"`) }

func parseHostPort(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	host, _, err := net.SplitHostPort(s)
	if err != nil {
		host = s
	}
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// parseHop reads one X-Forwarded-For entry; proxies sometimes append a port
// or brackets, or quote the entry as in RFC 7239's Forwarded header.
func parseHop(s string) (netip.Addr, bool) {
	s = hopText(s)
	if s == "" {
		return netip.Addr{}, false
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	return parseHostPort(s)
}

// LimitKey is the key under which a client's rate-limit budget is counted.
// An IPv4 address (IPv4-mapped IPv6 included, unmapped) is its own key. An
// IPv6 address is keyed by its network prefix of v6PrefixBits bits, in
// canonical prefix form ("2001:db8:1:2::/64"): one subscriber is usually
// handed a whole /64, and keying on the full address would give a single
// host 2^64 separate budgets. With v6PrefixBits 128 the address itself is
// the key. Bits outside 0..128 are clamped; zones are dropped, as they name
// the receiving interface rather than the client.
func LimitKey(addr netip.Addr, v6PrefixBits int) string {
	addr = addr.Unmap().WithZone("")
	if !addr.Is6() {
		return addr.String()
	}
	bits := min(max(v6PrefixBits, 0), 128)
	if bits == 128 {
		return addr.String()
	}
	p, _ := addr.Prefix(bits) // cannot fail: an IPv6 address, bits in 0..128
	return p.String()
}

// UntrustedForwarding reports whether req carries a forwarding header
// (X-Forwarded-For or Forwarded) that the Resolver ignores because the
// socket peer is not a trusted proxy, and names that peer. It means one of
// two things, both worth a warning: a proxy in front of the service that
// is missing from the trusted list (every client then shares the proxy's
// address and its budgets, and an admin address may be the proxy's), or a
// client writing the header itself. It costs two header lookups when
// there is no such header, and allocates nothing unless it reports one.
func (r *Resolver) UntrustedForwarding(req *http.Request) (peer string, ok bool) {
	if _, xff := req.Header["X-Forwarded-For"]; !xff {
		if _, fwd := req.Header["Forwarded"]; !fwd {
			return "", false
		}
	}
	a, parsed := parseHostPort(req.RemoteAddr)
	if !parsed || r.Trusts(a) {
		return "", false
	}
	return a.String(), true
}
