// Package outbound is the one HTTP client the notification service uses
// for every request to a URL someone configured: RSS feeds
// (value.rss.url of a configuration), the callbacks of asynchronous
// broadcasts (asyncBroadcastPushNotification), the SMS providers' APIs and
// the OIDC provider's discovery document and keys.
//
// Such a URL, or a redirect it answers, can point back inside: at the
// service's own API on loopback, where the admin address makes a request
// super admin (a feed answering 302 to
// /api/subscriptions/{id}/unsubscribe?additionalServices=_all unsubscribed
// anyone), at a cloud's metadata service on 169.254.169.254, or at
// anything else that trusts its network. So the client checks the address
// it actually dials — after name resolution, in the dialer's Control hook,
// so DNS rebinding gains nothing — on the first request and on every
// redirect, and refuses:
//
//   - loopback (127.0.0.0/8, ::1), link-local (169.254.0.0/16,
//     fe80::/10), unspecified (0.0.0.0/8, ::), multicast and broadcast
//     addresses, always unless allowed;
//   - private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)
//     when Policy.AllowPrivateNetworks is false (it is true by default in
//     config: NotifyBC deployments call services on their cluster
//     network).
//
// Policy.Allow (config outboundRequests.allow) admits named exceptions:
// networks in CIDR form or single addresses, checked against the address
// dialed, and host names, checked against the host of each hop, so that
// admitting a feed's host admits neither a redirect to another host nor
// another name for the same address.
//
// With an HTTP proxy from the environment (HTTPS_PROXY, HTTP_PROXY,
// NO_PROXY), the proxy's own address is checked like any other (a proxy
// on loopback needs an Allow entry) and the target's host before the
// request is handed to it: an address as written, a name by resolving it,
// every address it has having to pass. The proxy resolves the name again,
// so there rebinding is not ruled out; the next rule still holds.
//
// Every request carries the header is_anonymous: true, which notify (and
// NotifyBC) honour by not granting the admin address's rights, so that a
// request of the service's own that reaches it anyway — through a proxy,
// an allowed host that forwards, or loopback allowed on purpose as in
// `govkit dev` — is served as an anonymous caller's.
//
// Redirects: at most MaxRedirects, http and https only. A POST (a
// callback) is followed only through 307 and 308, which repeat it with its
// body; 301, 302 and 303 would turn it into a GET of wherever the
// receiver points, so they end the request with an error.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// MaxRedirects is how many redirects one request may follow.
const MaxRedirects = 5

// Policy says which addresses outbound requests may reach.
type Policy struct {
	// Allow admits networks ("10.1.0.0/16"), single addresses
	// ("127.0.0.1", "::1") and host names ("feeds.internal.example"),
	// whatever the rules below say.
	Allow []string
	// AllowPrivateNetworks admits the private ranges.
	AllowPrivateNetworks bool
}

// ErrRefused is an address the policy does not admit; errors.Is finds it
// in the error of a request that was refused.
var ErrRefused = errors.New("outbound request refused")

// RefusedError says which address was refused and why.
type RefusedError struct {
	Host string     // the host of the hop, as in its URL
	Addr netip.Addr // the address that would have been dialed
	Kind string     // loopback, link-local, …
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("outbound request to %s refused: %s is a %s address (admit it with outboundRequests.allow)", e.Host, e.Addr, e.Kind)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// ParseAllow reads Policy.Allow: networks, addresses and host names. The
// error names the first entry that is none of them, by its index.
func ParseAllow(entries []string) (nets []netip.Prefix, hosts map[string]bool, err error) {
	hosts = map[string]bool{}
	for i, e := range entries {
		s := strings.TrimSpace(e)
		if p, perr := netip.ParsePrefix(s); perr == nil {
			nets = append(nets, p.Masked())
			continue
		}
		if a, aerr := netip.ParseAddr(s); aerr == nil {
			a = a.Unmap()
			nets = append(nets, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		if !isHostName(s) {
			return nil, nil, fmt.Errorf("[%d] %q: must be a network in CIDR form, an IP address or a host name", i, e)
		}
		hosts[canonicalHost(s)] = true
	}
	return nets, hosts, nil
}

// isHostName accepts DNS names: labels of letters, digits, hyphens and
// underscores, separated by dots.
func isHostName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func canonicalHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

// Transport is the checked http.RoundTripper. Make one with New and a
// client for each use with Client; they share its connections.
type Transport struct {
	base  *http.Transport
	nets  []netip.Prefix
	hosts map[string]bool
	priv  bool
	proxy func(*http.Request) (*url.URL, error)
	// resolve looks up a proxied request's host (net.DefaultResolver).
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// New returns a Transport applying p. The error names an Allow entry that
// cannot be read.
func New(p Policy) (*Transport, error) {
	nets, hosts, err := ParseAllow(p.Allow)
	if err != nil {
		return nil, fmt.Errorf("outboundRequests.allow%w", err)
	}
	t := &Transport{nets: nets, hosts: hosts, priv: p.AllowPrivateNetworks, proxy: http.ProxyFromEnvironment,
		resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}}
	checked := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, ControlContext: t.control}
	plain := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t.base = &http.Transport{
		Proxy: t.proxy,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if t.hosts[canonicalHost(host)] {
				return plain.DialContext(ctx, network, addr)
			}
			return checked.DialContext(withHost(ctx, host), network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return t, nil
}

type hostKey struct{}

func withHost(ctx context.Context, host string) context.Context {
	return context.WithValue(ctx, hostKey{}, host)
}

// control runs before every connection the checked dialer makes, with the
// address it resolved to: the address actually dialed.
func (t *Transport) control(ctx context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("outbound: dialing %q: %w", address, err)
	}
	host, _ := ctx.Value(hostKey{}).(string)
	return t.check(host, ap.Addr())
}

// check refuses an address the policy does not admit.
func (t *Transport) check(host string, a netip.Addr) error {
	a = a.Unmap()
	for _, n := range t.nets {
		if n.Contains(a) {
			return nil
		}
	}
	if kind := classify(a, t.priv); kind != "" {
		if host == "" {
			host = a.String()
		}
		return &RefusedError{Host: host, Addr: a, Kind: kind}
	}
	return nil
}

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
	broadcast   = netip.MustParseAddr("255.255.255.255")
)

// classify names why a is refused by default ("" when it is not).
func classify(a netip.Addr, allowPrivate bool) string {
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsUnspecified(), thisNetwork.Contains(a):
		return "unspecified"
	case a.IsMulticast(), a == broadcast:
		return "multicast or broadcast"
	case !allowPrivate && (a.IsPrivate() || sharedSpace.Contains(a)):
		return "private"
	}
	return ""
}

// RoundTrip sends req through the checked dialer, marked as the service's
// own (is_anonymous), after checking a proxied request's target.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return nil, fmt.Errorf("outbound: scheme %q: only http and https are requested", req.URL.Scheme)
	}
	if p, err := t.proxy(req); err == nil && p != nil {
		if err := t.checkTarget(req.Context(), req.URL.Hostname()); err != nil {
			return nil, err
		}
	}
	r := req.Clone(req.Context())
	r.Header.Set(AnonymousHeader, "true")
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", "govkit-notify")
	}
	return t.base.RoundTrip(r)
}

// AnonymousHeader declines the admin address's rights (notify/access).
const AnonymousHeader = "is_anonymous"

// checkTarget checks the host of a request a proxy will make for us.
func (t *Transport) checkTarget(ctx context.Context, host string) error {
	if t.hosts[canonicalHost(host)] {
		return nil
	}
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return t.check(host, a)
	}
	addrs, err := t.resolve(ctx, host)
	if err != nil {
		return fmt.Errorf("outbound: resolving %s: %w", host, err)
	}
	for _, a := range addrs {
		if err := t.check(host, a); err != nil {
			return err
		}
	}
	return nil
}

// CloseIdleConnections closes the transport's idle connections.
func (t *Transport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// ErrMethodChange is a redirect that would turn a POST into a GET.
var ErrMethodChange = errors.New("outbound: a POST is not followed through a 301, 302 or 303 redirect (it would become a GET); only 307 and 308 repeat it")

// Client returns a client of t with the given whole-request timeout (0:
// none; then bound each request by its context) and the redirect rules of
// the package documentation.
func (t *Transport) Client(timeout time.Duration) *http.Client {
	return &http.Client{Transport: t, Timeout: timeout, CheckRedirect: CheckRedirect}
}

// CheckRedirect is the redirect rule of the package's clients, for
// clients that add rules of their own: at most MaxRedirects, http and
// https only, and a POST only through 307 and 308.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return fmt.Errorf("outbound: more than %d redirects", MaxRedirects)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("outbound: redirect to scheme %q: only http and https are followed", req.URL.Scheme)
	}
	if first := via[0].Method; first != http.MethodGet && first != http.MethodHead && req.Method != first {
		return ErrMethodChange
	}
	return nil
}
