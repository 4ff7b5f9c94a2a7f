package access

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/govkit/govkit/notify"
)

// OIDCOptions configure an OIDC verifier from config key oidc.
type OIDCOptions struct {
	// DiscoveryURL is oidc.discoveryUrl; its jwks_uri gives the keys.
	DiscoveryURL string
	// IsAdmin and IsAuthorizedUser are the config functions of the same
	// names; nil when absent.
	IsAdmin          func(claims map[string]any) (bool, error)
	IsAuthorizedUser func(claims map[string]any) (bool, error)
	// VerifyOptions are oidc.jwtVerifyOptions, the options of the
	// jsonwebtoken library the original passes them to: audience, issuer,
	// subject, ignoreExpiration, ignoreNotBefore, clockTolerance (seconds),
	// maxAge (seconds or a "1h"-style string is not supported; seconds
	// only). Other keys are ignored.
	VerifyOptions map[string]any
	// Client fetches discovery and keys; nil means one with a 10 s timeout.
	Client *http.Client
	// RetryAfter is how long a failed key fetch is remembered before the
	// next request tries again (default 1 minute, as the original retries
	// discovery every minute).
	RetryAfter time.Duration
	Now        func() time.Time
}

// OIDC verifies bearer JWTs signed with RS256 by the configured provider.
// Keys are fetched at the first bearer request, and again when a token names
// a key id the cached set lacks (key rotation).
type OIDC struct {
	o OIDCOptions

	mu        sync.Mutex
	keys      *jose.JSONWebKeySet
	fetched   time.Time
	lastError error
}

// NewOIDC returns a verifier. Nothing is fetched until the first token.
func NewOIDC(o OIDCOptions) *OIDC {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.RetryAfter == 0 {
		o.RetryAfter = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &OIDC{o: o}
}

var errNoKey = errors.New("no signing key for the token")

// Verify checks token and returns the caller it names. A verified token
// whose holder is neither admin nor authorized user gives a profile with an
// empty Role.
func (v *OIDC) Verify(ctx context.Context, token string) (notify.UserProfile, error) {
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return notify.UserProfile{}, err
	}
	kid := ""
	if len(tok.Headers) > 0 {
		kid = tok.Headers[0].KeyID
	}
	key, err := v.key(ctx, kid)
	if err != nil {
		return notify.UserProfile{}, err
	}
	var claims map[string]any
	var std jwt.Claims
	if err := tok.Claims(key.Key, &claims, &std); err != nil {
		return notify.UserProfile{}, err
	}
	if err := v.checkClaims(std, claims); err != nil {
		return notify.UserProfile{}, err
	}
	var role notify.Role
	if v.o.IsAuthorizedUser == nil {
		role = notify.RoleAuthenticatedUser
	} else if ok, err := v.o.IsAuthorizedUser(claims); err == nil && ok {
		role = notify.RoleAuthenticatedUser
	}
	if v.o.IsAdmin != nil {
		if ok, err := v.o.IsAdmin(claims); err == nil && ok {
			role = notify.RoleAdmin
		}
	}
	id, _ := claims["email"].(string)
	if id == "" {
		id, _ = claims["preferred_username"].(string)
	}
	return notify.UserProfile{SecurityID: id, AuthnStrategy: notify.AuthnOIDC, Role: role}, nil
}

func (v *OIDC) checkClaims(std jwt.Claims, claims map[string]any) error {
	opts := v.o.VerifyOptions
	leeway := time.Duration(0)
	if f, ok := opts["clockTolerance"].(float64); ok {
		leeway = time.Duration(f * float64(time.Second))
	}
	now := v.o.Now()
	if b, _ := opts["ignoreExpiration"].(bool); !b && std.Expiry != nil && now.After(std.Expiry.Time().Add(leeway)) {
		return errors.New("token expired")
	}
	if b, _ := opts["ignoreNotBefore"].(bool); !b && std.NotBefore != nil && now.Add(leeway).Before(std.NotBefore.Time()) {
		return errors.New("token not yet valid")
	}
	if f, ok := opts["maxAge"].(float64); ok && std.IssuedAt != nil {
		if now.After(std.IssuedAt.Time().Add(time.Duration(f*float64(time.Second)) + leeway)) {
			return errors.New("token too old")
		}
	}
	if want := stringList(opts["audience"]); len(want) > 0 {
		if !slices.ContainsFunc(want, func(a string) bool { return std.Audience.Contains(a) }) {
			return errors.New("audience mismatch")
		}
	}
	if want := stringList(opts["issuer"]); len(want) > 0 && !slices.Contains(want, std.Issuer) {
		return errors.New("issuer mismatch")
	}
	if want, ok := opts["subject"].(string); ok && want != std.Subject {
		return errors.New("subject mismatch")
	}
	return nil
}

func stringList(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return x
	}
	return nil
}

func (v *OIDC) key(ctx context.Context, kid string) (jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	pick := func() (jose.JSONWebKey, bool) {
		if v.keys == nil {
			return jose.JSONWebKey{}, false
		}
		if len(v.keys.Keys) == 1 {
			return v.keys.Keys[0], true
		}
		ks := v.keys.Key(kid)
		if len(ks) == 0 {
			return jose.JSONWebKey{}, false
		}
		return ks[0], true
	}
	if k, ok := pick(); ok {
		return k, nil
	}
	if !v.fetched.IsZero() && v.o.Now().Sub(v.fetched) < v.o.RetryAfter {
		if v.lastError != nil {
			return jose.JSONWebKey{}, v.lastError
		}
		return jose.JSONWebKey{}, errNoKey
	}
	v.fetched = v.o.Now()
	set, err := v.fetch(ctx)
	v.lastError = err
	if err != nil {
		return jose.JSONWebKey{}, err
	}
	v.keys = set
	if k, ok := pick(); ok {
		return k, nil
	}
	return jose.JSONWebKey{}, errNoKey
}

func (v *OIDC) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	var disc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := v.getJSON(ctx, v.o.DiscoveryURL, &disc); err != nil {
		return nil, fmt.Errorf("oidc discovery: %w", err)
	}
	if disc.JWKSURI == "" {
		return nil, errors.New("oidc discovery: no jwks_uri")
	}
	var set jose.JSONWebKeySet
	if err := v.getJSON(ctx, disc.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("oidc keys: %w", err)
	}
	return &set, nil
}

func (v *OIDC) getJSON(ctx context.Context, url string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := v.o.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", url, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(dst)
}
