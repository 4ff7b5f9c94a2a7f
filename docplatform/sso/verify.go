package sso

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
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
	Issuer   string          `json:"iss"`
	Subject  string          `json:"sub"`
	Audience audience        `json:"aud"`
	AZP      string          `json:"azp"`
	Expiry   *json.Number    `json:"exp"`
	NotAfter *json.Number    `json:"nbf"`
	Typ      *string         `json:"typ"`
	Nonce    json.RawMessage `json:"nonce"`
	AtHash   json.RawMessage `json:"at_hash"`
}

func numericDate(n *json.Number) (time.Time, bool) {
	if n == nil {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true
}

// VerifyAccessToken checks a bearer access token by the platform's rules:
// RS256 only, a key from the provider's key set, the exact issuer, the
// client in aud or azp, exp (with at most 30 s leeway), and nothing that
// marks the token as an ID or refresh token (payload typ other than Bearer,
// header typ other than JWT or at+jwt, a nonce or at_hash claim). An ID
// token has the same issuer and audience as an access token, so without the
// last rules it would pass as one.
func (c *Client) VerifyAccessToken(ctx context.Context, raw string) (AccessToken, error) {
	jws, payload, err := c.keys.verifyRS256(ctx, raw)
	if err != nil {
		return AccessToken{}, err
	}
	if typ, ok := jws.Signatures[0].Header.ExtraHeaders[jose.HeaderType]; ok {
		s, _ := typ.(string)
		switch strings.ToLower(s) {
		case "jwt", "at+jwt", "application/at+jwt":
		default:
			return AccessToken{}, fmt.Errorf("%w: header typ %q is not an access token's", ErrInvalidToken, s)
		}
	}
	var cl accessClaims
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&cl); err != nil {
		return AccessToken{}, fmt.Errorf("%w: claims: %v", ErrInvalidToken, err)
	}
	if cl.Issuer != c.cfg.Issuer {
		return AccessToken{}, fmt.Errorf("%w: issuer %q", ErrInvalidToken, cl.Issuer)
	}
	if cl.Subject == "" {
		return AccessToken{}, fmt.Errorf("%w: no sub", ErrInvalidToken)
	}
	if !contains(cl.Audience, c.cfg.ClientID) && cl.AZP != c.cfg.ClientID {
		return AccessToken{}, fmt.Errorf("%w: audience %q / azp %q lacks client", ErrInvalidToken, []string(cl.Audience), cl.AZP)
	}
	if cl.Typ != nil && *cl.Typ != "Bearer" {
		return AccessToken{}, fmt.Errorf("%w: typ %q is not Bearer", ErrInvalidToken, *cl.Typ)
	}
	if cl.Nonce != nil || cl.AtHash != nil {
		return AccessToken{}, fmt.Errorf("%w: carries ID-token claims (nonce/at_hash)", ErrInvalidToken)
	}
	now := c.cfg.Now()
	exp, ok := numericDate(cl.Expiry)
	if !ok {
		return AccessToken{}, fmt.Errorf("%w: no exp", ErrInvalidToken)
	}
	if !now.Before(exp.Add(c.cfg.Leeway)) {
		return AccessToken{}, fmt.Errorf("%w: expired at %s", ErrInvalidToken, exp.UTC().Format(time.RFC3339))
	}
	if nbf, ok := numericDate(cl.NotAfter); ok && now.Add(c.cfg.Leeway).Before(nbf) {
		return AccessToken{}, fmt.Errorf("%w: not valid before %s", ErrInvalidToken, nbf.UTC().Format(time.RFC3339))
	}
	return AccessToken{Subject: cl.Subject, Expiry: exp}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
