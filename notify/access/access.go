// Package access decides who is calling the notification service's API: the
// role and user id of every request, worked out in the order the original
// service documents, and kept in the request context for the handlers.
//
// # Order
//
// The first of these that identifies the caller wins:
//
//  1. a TLS client certificate signed by the configured CA → SuperAdmin,
//     user id the certificate's common name;
//  2. an access token, the raw Authorization header or the access_token
//     query parameter → Admin, user id the administrator's id;
//  3. an OIDC bearer JWT (Authorization: Bearer …), RS256, keys from the
//     provider's JWKS → Admin when oidc.isAdmin(payload), else
//     AuthenticatedUser when oidc.isAuthorizedUser is absent or true; user id
//     the email claim, else preferred_username;
//  4. a SiteMinder header (SM_UNIVERSALID, sm_user, smgov_userdisplayname),
//     believed only from siteMinderReverseProxyIps → AuthenticatedUser.
//
// A request nobody identified is SuperAdmin when its client address lies in
// adminIps (single addresses or CIDR), unless it carries is_anonymous or any
// SiteMinder header; otherwise it is Anonymous. The client address is the
// socket peer, or the X-Forwarded-For entry that trustedReverseProxyIps
// vouch for (package internal/clientip).
//
// The certificate, SiteMinder and address rules are ambient authority: a
// browser request gets it only when it is same-origin and addressed to one
// of the service's own names (see Identifier.Ambient and Hosts), so that
// no other web page can act with an administrator's address.
//
// # Where we differ from the original
//
//   - A SiteMinder header downgrades an admin-IP request, as the original's
//     documentation says (its 6.4.1 code only honours is_anonymous, so a
//     SiteMinder proxy at an admin address turned every user into a super
//     admin).
//   - The address rule applies only to callers nobody identified: an access
//     token or OIDC user calling from an admin address keeps the role their
//     credential gives (the original upgrades them to SuperAdmin), so that the
//     "own record only" rule of token administrators holds on every host.
//     For the same reason is_anonymous only declines the address rule; it
//     does not throw away a credential the caller presented.
//   - An Authorization header of the form "Bearer x.y.z" is not looked up as
//     an access token (token ids never contain dots or spaces), so JWTs never
//     reach the token collection or its logs.
//   - Ambient authority is never given to a cross-site browser request, or
//     one whose Host is not the service's own (the original gave any page
//     an admin's browser opened the admin address's rights).
package access

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/govkit/govkit/internal/clientip"
	"github.com/govkit/govkit/notify"
)

// SiteMinderHeaders are the headers a SiteMinder reverse proxy sets, in the
// order they are read.
var SiteMinderHeaders = []string{"SM_UNIVERSALID", "sm_user", "smgov_userdisplayname"}

// AnonymousHeader asks an admin-address request to be treated as anonymous.
const AnonymousHeader = "is_anonymous"

// TokenFinder looks up an access token by its id; the notify store
// implements it. An unknown token is notify.ErrNotFound.
type TokenFinder interface {
	FindByID(ctx context.Context, id string) (*notify.AccessToken, error)
}

// Options configure an Identifier.
type Options struct {
	// AdminIPs are adminIps: addresses or CIDR ranges whose unidentified
	// requests are SuperAdmin.
	AdminIPs []string
	// SiteMinderReverseProxyIPs are siteMinderReverseProxyIps.
	SiteMinderReverseProxyIPs []string
	// TrustedReverseProxyIPs are trustedReverseProxyIps, for finding the
	// client address behind proxies.
	TrustedReverseProxyIPs []string
	// Tokens finds access tokens; nil disables access-token login.
	Tokens TokenFinder
	// OIDC verifies bearer JWTs; nil when oidc is not configured.
	OIDC *OIDC
	// Hosts are the service's own names (see Ambient); nil: the loopback
	// names only.
	Hosts *Hosts
	// Now is the clock for token expiry; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Identifier works out the caller of each request. It is safe for
// concurrent use.
type Identifier struct {
	adminIPs []netip.Prefix
	smIPs    []netip.Prefix
	resolver *clientip.Resolver
	tokens   TokenFinder
	oidc     *OIDC
	hosts    *Hosts
	now      func() time.Time
	log      *slog.Logger
}

// New builds an Identifier. A malformed address in any list is an error
// naming the list.
func New(o Options) (*Identifier, error) {
	id := &Identifier{tokens: o.Tokens, oidc: o.OIDC, hosts: o.Hosts, now: o.Now, log: o.Logger}
	var err error
	if id.hosts == nil {
		id.hosts = NewHosts("", "", nil)
	}
	if id.adminIPs, err = ParsePrefixes(o.AdminIPs); err != nil {
		return nil, fmt.Errorf("adminIps: %w", err)
	}
	if id.smIPs, err = ParsePrefixes(o.SiteMinderReverseProxyIPs); err != nil {
		return nil, fmt.Errorf("siteMinderReverseProxyIps: %w", err)
	}
	if id.resolver, err = clientip.New(o.TrustedReverseProxyIPs); err != nil {
		return nil, fmt.Errorf("trustedReverseProxyIps: %w", err)
	}
	if id.now == nil {
		id.now = time.Now
	}
	if id.log == nil {
		id.log = slog.Default()
	}
	return id, nil
}

// ParsePrefixes reads addresses and CIDR ranges ("127.0.0.1", "10.0.0.0/8",
// "::1"). IPv4-mapped IPv6 forms are stored as IPv4.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR range", s)
			}
			if p.Addr().Is4In6() && p.Bits() >= 96 {
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or CIDR range", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func inAny(list []netip.Prefix, ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, p := range list {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientIP returns the address of the client behind trusted proxies.
func (id *Identifier) ClientIP(r *http.Request) string {
	return id.resolver.ClientIP(r)
}

// Identify works out the caller of r.
func (id *Identifier) Identify(r *http.Request) notify.UserProfile {
	ip := id.ClientIP(r)
	ambient := id.Ambient(r)
	if p, ok := clientCertificate(r.TLS); ok && ambient {
		return p
	}
	if p, ok := id.accessToken(r); ok {
		return p
	}
	if p, ok := id.bearer(r); ok {
		return p
	}
	anonymous := notify.UserProfile{SecurityID: ip, AuthnStrategy: notify.AuthnIP, Role: notify.RoleAnonymous}
	if !ambient {
		return anonymous
	}
	smUser := siteMinderUser(r)
	if smUser != "" && inAny(id.smIPs, ip) {
		return notify.UserProfile{SecurityID: smUser, AuthnStrategy: notify.AuthnSiteMinder, Role: notify.RoleAuthenticatedUser}
	}
	if r.Header.Get(AnonymousHeader) == "" && !hasSiteMinderHeader(r) && inAny(id.adminIPs, ip) {
		return notify.UserProfile{SecurityID: ip, AuthnStrategy: notify.AuthnIP, Role: notify.RoleSuperAdmin}
	}
	return anonymous
}

func clientCertificate(cs *tls.ConnectionState) (notify.UserProfile, bool) {
	// VerifiedChains is only set when the certificate chains to the CA the
	// server was given (ClientAuth VerifyClientCertIfGiven).
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return notify.UserProfile{}, false
	}
	cn := cs.VerifiedChains[0][0].Subject.CommonName
	return notify.UserProfile{SecurityID: cn, AuthnStrategy: notify.AuthnClientCertificate, Role: notify.RoleSuperAdmin}, true
}

// AccessTokenOf returns the access token a request presents: the raw
// Authorization header, else the access_token query parameter. A bearer
// header is not an access token.
func AccessTokenOf(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		if strings.ContainsAny(h, " .") {
			return ""
		}
		return h
	}
	return r.URL.Query().Get("access_token")
}

func (id *Identifier) accessToken(r *http.Request) (notify.UserProfile, bool) {
	tok := AccessTokenOf(r)
	if tok == "" || id.tokens == nil || len(tok) > 256 {
		return notify.UserProfile{}, false
	}
	t, err := id.tokens.FindByID(r.Context(), tok)
	if err != nil || t == nil || t.Expired(id.now()) {
		return notify.UserProfile{}, false
	}
	return notify.UserProfile{SecurityID: t.UserID.Hex(), AuthnStrategy: notify.AuthnAccessToken, Role: notify.RoleAdmin}, true
}

func (id *Identifier) bearer(r *http.Request) (notify.UserProfile, bool) {
	if id.oidc == nil {
		return notify.UserProfile{}, false
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || scheme != "Bearer" || strings.Count(tok, ".") != 2 {
		return notify.UserProfile{}, false
	}
	p, err := id.oidc.Verify(r.Context(), tok)
	if err != nil {
		id.log.Debug("oidc bearer refused", "err", err)
		return notify.UserProfile{}, false
	}
	return p, p.Role != ""
}

func siteMinderUser(r *http.Request) string {
	for _, h := range SiteMinderHeaders {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	return ""
}

func hasSiteMinderHeader(r *http.Request) bool {
	for _, h := range SiteMinderHeaders {
		if _, ok := r.Header[http.CanonicalHeaderKey(h)]; ok {
			return true
		}
	}
	return false
}

type ctxKey struct{}

// WithCaller returns ctx carrying the caller p.
func WithCaller(ctx context.Context, p notify.UserProfile) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// Caller returns the caller stored by the middleware; Anonymous when none.
func Caller(ctx context.Context) notify.UserProfile {
	if p, ok := ctx.Value(ctxKey{}).(notify.UserProfile); ok {
		return p
	}
	return notify.UserProfile{AuthnStrategy: notify.AuthnIP, Role: notify.RoleAnonymous}
}

// Middleware identifies the caller of each request and stores it in the
// request context (see Caller), together with the scheme the client used
// (see Scheme).
func (id *Identifier) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := WithCaller(r.Context(), id.Identify(r))
		ctx = context.WithValue(ctx, schemeKey{}, id.scheme(r))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

type schemeKey struct{}

// scheme is "https" for a TLS connection, else the X-Forwarded-Proto of a
// trusted proxy (as Express's req.protocol with trust proxy), else "http".
func (id *Identifier) scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	if fp := r.Header.Get("X-Forwarded-Proto"); fp != "" && id.peerTrusted(r) {
		fp, _, _ = strings.Cut(fp, ",")
		switch fp = strings.ToLower(strings.TrimSpace(fp)); fp {
		case "http", "https":
			return fp
		}
	}
	return "http"
}

func (id *Identifier) peerTrusted(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return err == nil && id.resolver.Trusts(a)
}

// Scheme returns the scheme the client used for the request, as stored by
// the middleware ("http" when there is none).
func Scheme(r *http.Request) string {
	if s, ok := r.Context().Value(schemeKey{}).(string); ok {
		return s
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// IsAdmin reports whether p is SuperAdmin or Admin.
func IsAdmin(p notify.UserProfile) bool {
	return p.Role == notify.RoleSuperAdmin || p.Role == notify.RoleAdmin
}

// UntrustedForwarding reports a forwarding header from a peer that is
// not in trustedReverseProxyIps, naming the peer (see
// clientip.Resolver.UntrustedForwarding).
func (id *Identifier) UntrustedForwarding(r *http.Request) (string, bool) {
	return id.resolver.UntrustedForwarding(r)
}
