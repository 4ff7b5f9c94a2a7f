package sso

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// ErrInvalidToken wraps every reason a token is refused; the reason is for
// logs, the caller only ever sees 401.
var ErrInvalidToken = errors.New("sso: invalid token")

// AccessToken is what the platform keeps of a verified access token.
// Profile fields are deliberately absent: /me reads them from the user
// record saved at login, because many providers put none in access tokens.
type AccessToken struct {
	Subject string
	Expiry  time.Time
}

// audience is the aud claim, a string or an array of strings.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		var s []string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = s
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*a = audience{s}
	return nil
}

type accessClaims struct {
	Issuer    string          `json:"iss"`
	Subject   string          `json:"sub"`
	Audience  audience        `json:"aud"`
	AZP       string          `json:"azp"`
	ClientID  string          `json:"client_id"`
	Expiry    *numericDate    `json:"exp"`
	NotBefore *numericDate    `json:"nbf"`
	IssuedAt  *numericDate    `json:"iat"`
	Typ       *string         `json:"typ"`
	Nonce     json.RawMessage `json:"nonce"`
	AtHash    json.RawMessage `json:"at_hash"`
}

// numericDate is a JWT NumericDate: a JSON number of seconds, possibly
// fractional. A quoted number is not one (RFC 7519 §2), so it is refused
// rather than read leniently.
type numericDate struct{ t time.Time }

func (n *numericDate) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] == '"' {
		return errors.New("NumericDate must be a number")
	}
	// encoding/json has already checked b is a valid JSON value; a number
	// is the only kind ParseFloat accepts of those (it refuses true, null
	// and the rest).
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || f != f || f > 1e15 || f < -1e15 {
		return errors.New("NumericDate out of range")
	}
	sec := int64(f)
	n.t = time.Unix(sec, int64((f-float64(sec))*1e9))
	return nil
}

func (n *numericDate) time() (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	return n.t, true
}

// VerifyAccessToken checks a bearer access token by the platform's rules:
// RS256 only, a key from the provider's key set, the exact issuer, the
// client in aud or azp (or, for RFC 9068 tokens, in client_id: the claim
// that names the client there, as azp does in Keycloak's tokens), exp
// (with at most 30 s leeway), nbf and iat not beyond that leeway in the
// future, and nothing that
// marks the token as an ID or refresh token (payload typ other than Bearer,
// header typ other than JWT or at+jwt, a nonce or at_hash claim). An ID
// token has the same issuer and audience as an access token, so without the
// last rules it would pass as one.
//
// A token that passed is remembered, keyed by its SHA-256, until its exp
// or until the provider drops the key that signed it, whichever is first
// (see tokenCache); a later call with the same token returns the same
// answer without the RS256 verification.
func (c *Client) VerifyAccessToken(ctx context.Context, raw string) (AccessToken, error) {
	if c.verified == nil || len(raw) > maxToken {
		tok, _, _, err := c.verifyAccessToken(ctx, raw)
		return tok, err
	}
	// Hash the string's bytes in place: []byte(raw) would copy the token
	// (about 1 KiB) to the heap on every request. Sum256 only reads them.
	h := sha256.Sum256(unsafe.Slice(unsafe.StringData(raw), len(raw)))
	if e, ok := c.verified.get(&h); ok {
		if c.cfg.Now().Before(e.tok.Expiry) && c.keys.holds(e.kid, e.key) {
			return e.tok, nil
		}
		c.verified.drop(&h)
	}
	tok, kid, key, err := c.verifyAccessToken(ctx, raw)
	if err == nil {
		if now := c.cfg.Now(); now.Before(tok.Expiry) {
			c.verified.put(&h, cachedToken{tok: tok, kid: kid, key: key}, now)
		}
	}
	return tok, err
}

// verifyAccessToken is VerifyAccessToken without the cache; it also
// returns the kid and the key that verified the signature.
func (c *Client) verifyAccessToken(ctx context.Context, raw string) (AccessToken, string, *rsa.PublicKey, error) {
	c.verifications.Add(1)
	tok, hdr, key, err := c.checkAccessToken(ctx, raw)
	return tok, hdr.Kid, key, err
}

func (c *Client) checkAccessToken(ctx context.Context, raw string) (AccessToken, jwsHeader, *rsa.PublicKey, error) {
	hdr, payload, key, err := c.keys.verifyRS256(ctx, raw)
	if err != nil {
		return AccessToken{}, hdr, nil, err
	}
	if hdr.Typ != nil {
		var s string
		_ = json.Unmarshal(hdr.Typ, &s) // not a string: s stays "" and is refused
		switch strings.ToLower(s) {
		case "jwt", "at+jwt", "application/at+jwt":
		default:
			return AccessToken{}, hdr, nil, fmt.Errorf("%w: header typ %q is not an access token's", ErrInvalidToken, clip(s))
		}
	}
	var cl accessClaims
	if err := decodeExact(payload, &cl); err != nil {
		return AccessToken{}, hdr, nil, fmt.Errorf("%w: claims: %v", ErrInvalidToken, err)
	}
	m, err := c.metadata(ctx)
	if err != nil {
		return AccessToken{}, hdr, nil, err
	}
	if cl.Issuer != m.issuer {
		return AccessToken{}, hdr, nil, fmt.Errorf("%w: issuer %q", ErrInvalidToken, clip(cl.Issuer))
	}
	if cl.Subject == "" {
		return AccessToken{}, hdr, nil, fmt.Errorf("%w: no sub", ErrInvalidToken)
	}
	if !contains(cl.Audience, c.cfg.ClientID) && cl.AZP != c.cfg.ClientID && cl.ClientID != c.cfg.ClientID {
		return AccessToken{}, hdr, nil, fmt.Errorf("%w: audience / azp / client_id lack the client (azp %q)", ErrInvalidToken, clip(cl.AZP))
	}
	if cl.Typ != nil && *cl.Typ != "Bearer" {
		return AccessToken{}, hdr, nil, fmt.Errorf("%w: typ %q is not Bearer", ErrInvalidToken, clip(*cl.Typ))
	}
	// The spec's rule, applied as written. Known cost: Keycloak before 24
	// (and RH-SSO 7), or a later one with the "Nonce backwards compatible"
	// mapper, copies the login's nonce into access tokens; its tokens are
	// refused, and the log line says why.
	if cl.Nonce != nil || cl.AtHash != nil {
		return AccessToken{}, hdr, nil, fmt.Errorf("%w: carries ID-token claims (nonce/at_hash); Keycloak before 24 and its \"Nonce backwards compatible\" mapper put nonce in access tokens", ErrInvalidToken)
	}
	exp, ok := cl.Expiry.time()
	if !ok {
		return AccessToken{}, hdr, nil, fmt.Errorf("%w: no exp", ErrInvalidToken)
	}
	if err := c.checkTimes(exp, cl.NotBefore, cl.IssuedAt); err != nil {
		return AccessToken{}, hdr, nil, err
	}
	return AccessToken{Subject: cl.Subject, Expiry: exp}, hdr, key, nil
}

// checkTimes applies the clock rules shared by access and ID tokens: not
// expired, not valid only later, not issued in the future, each with the
// same leeway for clock skew between us and the provider.
func (c *Client) checkTimes(exp time.Time, nbf, iat *numericDate) error {
	now := c.cfg.Now()
	if !now.Before(exp.Add(c.cfg.Leeway)) {
		return fmt.Errorf("%w: expired at %s", ErrInvalidToken, exp.UTC().Format(time.RFC3339))
	}
	if t, ok := nbf.time(); ok && now.Add(c.cfg.Leeway).Before(t) {
		return fmt.Errorf("%w: not valid before %s", ErrInvalidToken, t.UTC().Format(time.RFC3339))
	}
	if t, ok := iat.time(); ok && now.Add(c.cfg.Leeway).Before(t) {
		return fmt.Errorf("%w: issued in the future (%s)", ErrInvalidToken, t.UTC().Format(time.RFC3339))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
