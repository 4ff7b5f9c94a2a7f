// Package sso is the document platform's side of OpenID Connect: a
// confidential client of the identity provider (discovery, login URL with
// PKCE S256, state and nonce, code exchange, ID-token validation, refresh,
// RP-initiated logout, refresh-token revocation) and the verifier of the
// access tokens that browsers and scripts present.
//
// It builds on go-oidc (discovery, ID-token checks) and x/oauth2 (the token
// endpoint), with its own key cache, because go-oidc refetches the key set
// on every unknown key id without limit, and its own access-token rules,
// because go-oidc verifies ID tokens and would accept one as an access token.
package sso

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Config is how the platform knows its provider and itself.
type Config struct {
	Issuer       string // exact issuer; discovery is at Issuer/.well-known/openid-configuration
	ClientID     string
	ClientSecret string
	RedirectURL  string   // the platform's /api/auth/callback
	Scopes       []string // default: openid profile email

	HTTPClient *http.Client     // default: 10 s timeout
	Now        func() time.Time // default: time.Now
	// Leeway forgives clock skew on exp and nbf; default and maximum 30 s.
	Leeway time.Duration
	// MinRefetch is the least time between two key-set or discovery fetches
	// caused by failures; default 10 s.
	MinRefetch time.Duration
	// TokenCacheSize bounds how many verified access tokens are
	// remembered (see tokenCache); default DefaultTokenCacheSize, a
	// negative value turns the cache off.
	TokenCacheSize int
}

// IssuerFrom derives the issuer the way the original platform does: a
// server URL that already contains /protocol/openid-connect (a full
// endpoint URL such as …/realms/x/protocol/openid-connect/auth) loses that
// suffix; otherwise the issuer is {server}/realms/{realm}. Trailing slashes
// are ignored. Two more forms an operator may paste are read the way they
// are meant: the discovery URL (…/.well-known/openid-configuration) is the
// issuer plus that suffix, and a server URL that already ends in
// /realms/{realm} is the issuer itself (appending the realm again would
// name an issuer that cannot exist).
func IssuerFrom(authServerURL, realm string) string {
	u := strings.TrimRight(strings.TrimSpace(authServerURL), "/")
	if i := strings.Index(u, "/protocol/openid-connect"); i >= 0 {
		return u[:i]
	}
	if i := strings.Index(u, "/.well-known/openid-configuration"); i >= 0 {
		return u[:i]
	}
	realm = strings.Trim(strings.TrimSpace(realm), "/")
	if strings.HasSuffix(u, "/realms/"+realm) {
		return u
	}
	return u + "/realms/" + realm
}

// Client talks to one provider. It is safe for concurrent use.
type Client struct {
	cfg      Config
	keys     *keySet
	verified *tokenCache // nil when Config.TokenCacheSize < 0

	verifications atomic.Int64

	mu      sync.Mutex // serialises discovery
	meta    atomic.Pointer[metadata]
	lastTry time.Time
	lastErr error
}

type metadata struct {
	// issuer is Config.Issuer, or Config.Issuer with a trailing slash when
	// that is how the provider names itself (Auth0 and others do): the
	// exact string tokens must carry.
	issuer     string
	verifier   *oidc.IDTokenVerifier
	oauth      oauth2.Config
	jwksURL    string
	endSession string
	revocation string
	// issInResponse: the provider says it names itself in authorization
	// responses (RFC 9207 authorization_response_iss_parameter_supported).
	issInResponse bool
}

// New returns a client; it contacts the provider only when first needed
// (or when Discover is called), so a platform can start while its provider
// is still coming up and report that in its health check.
func New(cfg Config) (*Client, error) {
	var missing []string
	for name, v := range map[string]string{"issuer": cfg.Issuer, "client id": cfg.ClientID, "client secret": cfg.ClientSecret, "redirect URL": cfg.RedirectURL} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("sso: missing %s", strings.Join(missing, ", "))
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = []string{oidc.ScopeOpenID, "profile", "email"}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Leeway <= 0 || cfg.Leeway > 30*time.Second {
		cfg.Leeway = 30 * time.Second
	}
	if cfg.MinRefetch <= 0 {
		cfg.MinRefetch = 10 * time.Second
	}
	if cfg.TokenCacheSize == 0 {
		cfg.TokenCacheSize = DefaultTokenCacheSize
	}
	c := &Client{cfg: cfg, verified: newTokenCache(cfg.TokenCacheSize)}
	c.keys = &keySet{client: cfg.HTTPClient, minRefetch: cfg.MinRefetch, now: cfg.Now, url: func(ctx context.Context) (string, error) {
		m, err := c.metadata(ctx)
		if err != nil {
			return "", err
		}
		return m.jwksURL, nil
	}}
	return c, nil
}

// Issuer is the provider's issuer as its discovery document spells it
// (Config.Issuer until discovery has succeeded).
func (c *Client) Issuer() string {
	if m := c.meta.Load(); m != nil {
		return m.issuer
	}
	return c.cfg.Issuer
}

// CheckResponseIssuer applies RFC 9207 to an authorization response (the
// redirect to the callback): an iss parameter must be the provider's
// issuer, and a provider that advertises sending one must have sent it.
// Otherwise a response meant for another provider is being fed to us.
func (c *Client) CheckResponseIssuer(ctx context.Context, iss string, present bool) error {
	m, err := c.metadata(ctx)
	if err != nil {
		return err
	}
	switch {
	case present && iss != m.issuer:
		return fmt.Errorf("sso: authorization response from issuer %q, not %q", clip(iss), m.issuer)
	case !present && m.issInResponse:
		return errors.New("sso: authorization response without iss from a provider that always sends it")
	}
	return nil
}

// Discover loads the provider's discovery document if it is not loaded.
func (c *Client) Discover(ctx context.Context) error {
	_, err := c.metadata(ctx)
	return err
}

// Ready reports whether discovery has succeeded.
func (c *Client) Ready() bool {
	return c.meta.Load() != nil
}

func (c *Client) metadata(ctx context.Context) (*metadata, error) {
	if m := c.meta.Load(); m != nil {
		return m, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.meta.Load(); m != nil {
		return m, nil
	}
	if !c.lastTry.IsZero() && c.cfg.Now().Sub(c.lastTry) < c.cfg.MinRefetch {
		return nil, c.lastErr
	}
	c.lastTry = c.cfg.Now()
	hctx := oidc.ClientContext(ctx, c.cfg.HTTPClient)
	issuer := c.cfg.Issuer
	p, err := oidc.NewProvider(hctx, issuer)
	if err != nil && !strings.HasSuffix(issuer, "/") {
		// SSO_AUTH_SERVER_URL loses its trailing slashes, but some
		// providers' issuers end in one. Only that one spelling is also
		// accepted; the document is still fetched from the configured URL.
		// (go-oidc skips its issuer check in this mode; ours is below.)
		if p2, err2 := oidc.NewProvider(oidc.InsecureIssuerURLContext(hctx, issuer+"/"), issuer); err2 == nil {
			var doc struct {
				Issuer string `json:"issuer"`
			}
			if p2.Claims(&doc) == nil && doc.Issuer == issuer+"/" {
				p, err, issuer = p2, nil, issuer+"/"
			}
		}
	}
	if err != nil {
		c.lastErr = fmt.Errorf("sso: discovery at %s: %w", c.cfg.Issuer, err)
		return nil, c.lastErr
	}
	var extra struct {
		JWKS        string   `json:"jwks_uri"`
		EndSession  string   `json:"end_session_endpoint"`
		Revocation  string   `json:"revocation_endpoint"`
		AuthMethods []string `json:"token_endpoint_auth_methods_supported"`
		IssResponse bool     `json:"authorization_response_iss_parameter_supported"`
	}
	if err := p.Claims(&extra); err != nil {
		c.lastErr = fmt.Errorf("sso: discovery at %s: %w", c.cfg.Issuer, err)
		return nil, c.lastErr
	}
	if extra.JWKS == "" {
		c.lastErr = fmt.Errorf("sso: discovery at %s: no jwks_uri", c.cfg.Issuer)
		return nil, c.lastErr
	}
	ep := p.Endpoint()
	// The discovery document says which way the secret goes; guessing
	// (AuthStyleAutoDetect) would cost a failed request first.
	ep.AuthStyle = oauth2.AuthStyleInHeader
	if len(extra.AuthMethods) > 0 && !contains(extra.AuthMethods, "client_secret_basic") && contains(extra.AuthMethods, "client_secret_post") {
		ep.AuthStyle = oauth2.AuthStyleInParams
	}
	m := &metadata{
		issuer: issuer,
		// Expiry is checked by verifyIDToken with the same leeway as
		// access tokens; go-oidc would allow none.
		verifier: oidc.NewVerifier(issuer, oidcKeySet{c.keys}, &oidc.Config{ClientID: c.cfg.ClientID, SupportedSigningAlgs: []string{oidc.RS256}, Now: c.cfg.Now, SkipExpiryCheck: true}),
		oauth: oauth2.Config{
			ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret,
			Endpoint: ep, RedirectURL: c.cfg.RedirectURL, Scopes: c.cfg.Scopes,
		},
		jwksURL:    extra.JWKS,
		endSession: extra.EndSession,
		revocation: extra.Revocation,

		issInResponse: extra.IssResponse,
	}
	c.meta.Store(m)
	return m, nil
}

// Random returns n random bytes in base64url without padding: states,
// nonces, CSRF tokens.
func Random(n int) string {
	b := make([]byte, n)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// NewVerifier returns a fresh PKCE code verifier (RFC 7636: 32 random bytes).
func NewVerifier() string { return oauth2.GenerateVerifier() }

// AuthCodeURL is the provider's authorization URL for one login: response
// type code, the client, redirect URI, scopes, state, nonce and the S256
// challenge of verifier.
func (c *Client) AuthCodeURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	m, err := c.metadata(ctx)
	if err != nil {
		return "", err
	}
	return m.oauth.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce)), nil
}

// Tokens is a token response.
type Tokens struct {
	AccessToken  string
	RefreshToken string // on refresh: empty unless the provider rotated it
	IDToken      string // on refresh: empty unless the provider sent a valid one
	ExpiresIn    time.Duration
}

// Profile is what a verified ID token says about the user.
type Profile struct {
	Subject           string
	Email             string
	Name              string
	PreferredUsername string
}

// ErrRefused is a provider's refusal of a grant (invalid_grant and the like),
// as opposed to the provider being unreachable.
var ErrRefused = errors.New("sso: provider refused the grant")

func (c *Client) ctx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.cfg.HTTPClient)
}

// Exchange redeems an authorization code (with the PKCE verifier and the
// client secret) and validates the ID token: signature, issuer, audience,
// expiry, and that its nonce is the one this login sent.
func (c *Client) Exchange(ctx context.Context, code, verifier, nonce string) (Tokens, Profile, error) {
	m, err := c.metadata(ctx)
	if err != nil {
		return Tokens{}, Profile{}, err
	}
	tok, err := m.oauth.Exchange(c.ctx(ctx), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return Tokens{}, Profile{}, grantError("code exchange", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Tokens{}, Profile{}, errors.New("sso: token response has no id_token")
	}
	idt, err := c.verifyIDToken(ctx, raw)
	if err != nil {
		return Tokens{}, Profile{}, err
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 || nonce == "" {
		return Tokens{}, Profile{}, errors.New("sso: id token: nonce does not match the login")
	}
	if idt.AtHash != "" && !atHashMatches(idt.AtHash, tok.AccessToken) {
		return Tokens{}, Profile{}, errors.New("sso: id token: at_hash does not match the access token")
	}
	return c.tokens(tok, raw), Profile{Subject: idt.Subject, Email: idt.Email, Name: idt.Name, PreferredUsername: idt.PreferredUsername}, nil
}

// idClaims are the claims of an ID token the platform reads, by their exact
// names (see decodeExact).
type idClaims struct {
	Issuer            string       `json:"iss"`
	Subject           string       `json:"sub"`
	Audience          audience     `json:"aud"`
	AZP               string       `json:"azp"`
	Expiry            *numericDate `json:"exp"`
	NotBefore         *numericDate `json:"nbf"`
	IssuedAt          *numericDate `json:"iat"`
	Nonce             string       `json:"nonce"`
	AtHash            string       `json:"at_hash"`
	Email             string       `json:"email"`
	Name              string       `json:"name"`
	PreferredUsername string       `json:"preferred_username"`
}

// verifyIDToken checks an ID token: go-oidc's rules (RS256 through our key
// cache, issuer, the client in aud), then ours on the claims read again by
// their exact names, which is all the caller sees: go-oidc decodes claims
// with encoding/json, ignoring case, so its issuer, subject and nonce could
// come from a "Sub" or "NONCE" member. Ours: the exact issuer, the client
// in aud, a subject, exp, nbf and iat with the leeway, no member named
// twice, and the authorized party: OpenID Connect Core §3.1.3.7 says that
// when azp is present it must be this client, which matters when the
// token names several audiences (another client could otherwise pass its
// ID token off as ours).
func (c *Client) verifyIDToken(ctx context.Context, raw string) (idClaims, error) {
	m, err := c.metadata(ctx)
	if err != nil {
		return idClaims{}, err
	}
	idt, err := m.verifier.Verify(ctx, raw)
	if err != nil {
		return idClaims{}, fmt.Errorf("sso: id token: %w", err)
	}
	var payload json.RawMessage
	if err := idt.Claims(&payload); err != nil {
		return idClaims{}, fmt.Errorf("sso: id token claims: %w", err)
	}
	var cl idClaims
	if err := decodeExact(payload, &cl); err != nil {
		return idClaims{}, fmt.Errorf("sso: id token claims: %w", err)
	}
	switch {
	case cl.Issuer != m.issuer:
		return idClaims{}, fmt.Errorf("sso: id token: issuer %q", clip(cl.Issuer))
	case !contains(cl.Audience, c.cfg.ClientID):
		return idClaims{}, errors.New("sso: id token: audience lacks the client")
	case cl.AZP != "" && cl.AZP != c.cfg.ClientID:
		return idClaims{}, fmt.Errorf("sso: id token: authorized party %q is not this client", clip(cl.AZP))
	case cl.Subject == "":
		return idClaims{}, errors.New("sso: id token: no sub")
	}
	exp, ok := cl.Expiry.time()
	if !ok {
		return idClaims{}, errors.New("sso: id token: no exp")
	}
	if err := c.checkTimes(exp, cl.NotBefore, cl.IssuedAt); err != nil {
		return idClaims{}, fmt.Errorf("sso: id token: %w", err)
	}
	return cl, nil
}

// atHashMatches checks an ID token's at_hash (OpenID Connect Core
// §3.1.3.6): for RS256, the base64url of the left half of the access
// token's SHA-256.
func atHashMatches(atHash, accessToken string) bool {
	sum := sha256.Sum256([]byte(accessToken))
	want := base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
	return subtle.ConstantTimeCompare([]byte(atHash), []byte(want)) == 1
}

func (c *Client) tokens(tok *oauth2.Token, idToken string) Tokens {
	t := Tokens{AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, IDToken: idToken}
	switch {
	case tok.ExpiresIn > 0:
		t.ExpiresIn = time.Duration(tok.ExpiresIn) * time.Second
	case !tok.Expiry.IsZero():
		t.ExpiresIn = tok.Expiry.Sub(c.cfg.Now()).Round(time.Second)
	}
	if t.ExpiresIn <= 0 {
		// Same default as the original when the provider sends no lifetime.
		t.ExpiresIn = 300 * time.Second
	}
	return t
}

// grantError tells a refusal (the provider answered with an OAuth error:
// a 4xx, or a 2xx carrying "error" as some providers send) from the
// provider failing or being unreachable. Only the error code is kept: a
// provider's error_description or body may echo what was sent.
func grantError(what string, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 && (re.Response.StatusCode >= 400 || re.ErrorCode != "") {
		return fmt.Errorf("%w: %s: %s", ErrRefused, what, clip(re.ErrorCode))
	}
	if errors.As(err, &re) && re.Response != nil {
		return fmt.Errorf("sso: %s: provider answered %s", what, re.Response.Status)
	}
	return fmt.Errorf("sso: %s: %w", what, err)
}

// Refresh runs the refresh grant. RefreshToken in the result is set only
// when the provider rotated it; IDToken only when a valid one came back.
func (c *Client) Refresh(ctx context.Context, refreshToken string) (Tokens, error) {
	m, err := c.metadata(ctx)
	if err != nil {
		return Tokens{}, err
	}
	tok, err := m.oauth.TokenSource(c.ctx(ctx), &oauth2.Token{RefreshToken: refreshToken}).Token()
	if err != nil {
		return Tokens{}, grantError("refresh", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw != "" {
		if _, err := c.verifyIDToken(ctx, raw); err != nil {
			raw = ""
		}
	}
	t := c.tokens(tok, raw)
	if t.RefreshToken == refreshToken {
		t.RefreshToken = ""
	}
	return t, nil
}

// EndSessionURL is where logout sends the browser: the provider's
// end_session endpoint with client_id, id_token_hint (when known) and
// post_logout_redirect_uri. It is "" for a provider that advertises no
// end_session endpoint: there is no provider logout to go through, and the
// caller decides where the browser goes instead.
func (c *Client) EndSessionURL(ctx context.Context, idTokenHint, postLogout string) (string, error) {
	m, err := c.metadata(ctx)
	if err != nil {
		return "", err
	}
	if m.endSession == "" {
		return "", nil
	}
	u, err := url.Parse(m.endSession)
	if err != nil {
		return "", fmt.Errorf("sso: end_session_endpoint: %w", err)
	}
	q := u.Query()
	q.Set("client_id", c.cfg.ClientID)
	if idTokenHint != "" {
		q.Set("id_token_hint", idTokenHint)
	}
	q.Set("post_logout_redirect_uri", postLogout)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// CanRevoke reports whether the provider advertises a revocation endpoint.
func (c *Client) CanRevoke(ctx context.Context) bool {
	m, err := c.metadata(ctx)
	return err == nil && m.revocation != ""
}

// RevokeToken asks the provider to revoke a token (RFC 7009); hint is
// "refresh_token" or "access_token". It does nothing when the provider has
// no revocation endpoint.
func (c *Client) RevokeToken(ctx context.Context, token, hint string) error {
	m, err := c.metadata(ctx)
	if err != nil {
		return err
	}
	if m.revocation == "" || token == "" {
		return nil
	}
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	// The client authenticates as at the token endpoint (discovery said
	// which way); Basic credentials are form-encoded first (RFC 6749 §2.3.1).
	if m.oauth.Endpoint.AuthStyle == oauth2.AuthStyleInParams {
		form.Set("client_id", c.cfg.ClientID)
		form.Set("client_secret", c.cfg.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.revocation, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if m.oauth.Endpoint.AuthStyle != oauth2.AuthStyleInParams {
		req.SetBasicAuth(url.QueryEscape(c.cfg.ClientID), url.QueryEscape(c.cfg.ClientSecret))
	}
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("sso: revoke: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sso: revoke: %s", resp.Status)
	}
	return nil
}
