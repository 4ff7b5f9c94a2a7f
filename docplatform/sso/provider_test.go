package sso_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

// signAs signs claims with any algorithm go-jose knows, for forgeries that
// use an algorithm other than RS256.
func signAs(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func jwk(t *testing.T, k jose.JSONWebKey) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Access tokens as real providers issue them, and the ways they go wrong.
func TestAccessTokensOfRealProviders(t *testing.T) {
	p := ssotest.New(t)
	now := time.Unix(1_800_000_000, 0)
	c := newClient(t, p, &clock{t: now})
	ctx := context.Background()
	keycloak := map[string]any{
		"iss": p.Issuer, "sub": "user-1", "aud": "account", "azp": p.ClientID, "typ": "Bearer",
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "session_state": "s", "scope": "openid profile email",
	}
	rfc9068 := map[string]any{
		"iss": p.Issuer, "sub": "user-1", "aud": "https://api.example.org", "client_id": p.ClientID,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": "j",
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	cases := []struct {
		name  string
		token string
		ok    bool
	}{
		{"Keycloak token with aud account only and the client in azp passes", p.Mint(nil, keycloak), true},
		{"aud as a plain string naming the client passes", p.Mint(nil, with(keycloak, map[string]any{"aud": p.ClientID, "azp": nil})), true},
		{"RFC 9068 token (at+jwt, client_id, no azp) passes", p.Mint(map[string]any{"typ": "at+jwt"}, rfc9068), true},
		{"RFC 9068 token with the client in aud passes", p.Mint(map[string]any{"typ": "application/at+jwt"}, with(rfc9068, map[string]any{"aud": []string{p.ClientID}, "client_id": nil})), true},
		{"RFC 9068 token issued to another client is refused", p.Mint(map[string]any{"typ": "at+jwt"}, with(rfc9068, map[string]any{"client_id": "other"})), false},
		{"azp of another client with the client id only in client_id of another is refused", p.Mint(nil, with(keycloak, map[string]any{"azp": "other", "client_id": "other"})), false},
		{"Keycloak ID token (typ ID, nonce, at_hash) is refused", p.Mint(nil, with(keycloak, map[string]any{"typ": "ID", "aud": p.ClientID, "nonce": "n", "at_hash": "h"})), false},
		{"Keycloak refresh token (typ Refresh) is refused", p.Mint(nil, with(keycloak, map[string]any{"typ": "Refresh", "aud": p.Issuer})), false},
		{"RS384 is refused", signAs(t, jose.RS384, p.Key, p.KeyID, keycloak), false},
		{"PS256 is refused", signAs(t, jose.PS256, p.Key, p.KeyID, keycloak), false},
		{"ES256 is refused", signAs(t, jose.ES256, ec, p.KeyID, keycloak), false},
		{"HS256 with the modulus as secret is refused", signAs(t, jose.HS256, p.Key.PublicKey.N.Bytes(), p.KeyID, keycloak), false},
		{"issued 20 s in the future passes within the leeway", p.Mint(nil, with(keycloak, map[string]any{"iat": now.Add(20 * time.Second).Unix()})), true},
		{"issued a minute in the future is refused", p.Mint(nil, with(keycloak, map[string]any{"iat": now.Add(time.Minute).Unix()})), false},
		{"valid from 20 s in the future (nbf) passes within the leeway", p.Mint(nil, with(keycloak, map[string]any{"nbf": now.Add(20 * time.Second).Unix()})), true},
		{"exp as a string is refused", p.Mint(nil, with(keycloak, map[string]any{"exp": "1900000000"})), false},
		{"aud of the wrong type is refused", p.Mint(nil, with(keycloak, map[string]any{"aud": 7})), false},
		{"fractional exp within its life passes", p.Mint(nil, with(keycloak, map[string]any{"exp": float64(now.Unix()) + 60.5})), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.VerifyAccessToken(ctx, tc.token)
			if tc.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("accepted")
			}
			if !tc.ok && !errors.Is(err, sso.ErrInvalidToken) {
				t.Fatalf("error %v does not wrap ErrInvalidToken", err)
			}
		})
	}
}

// Providers publish encryption keys, EC keys and keys go-jose cannot read
// beside their RS256 signing key; those are skipped, and a token without
// kid still finds the one signing key.
func TestKeySetWithOtherKeysMixedIn(t *testing.T) {
	p := ssotest.New(t)
	enc, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p.ExtraKeys = []json.RawMessage{
		jwk(t, jose.JSONWebKey{Key: &enc.PublicKey, KeyID: "enc-1", Algorithm: "RSA-OAEP", Use: "enc"}),
		jwk(t, jose.JSONWebKey{Key: &ec.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"}),
		json.RawMessage(`{"kty":"OKP","crv":"X448","x":"AAAA","kid":"odd"}`),
		json.RawMessage(`{"kty":"nonsense"}`),
	}
	c := newClient(t, p, &clock{t: time.Now()})
	ctx := context.Background()
	claims := p.AccessClaims("user-1")
	cases := []struct {
		name  string
		token string
		ok    bool
	}{
		{"token signed by the signing key passes", p.Mint(nil, claims), true},
		{"token without kid passes when one signing key is published", p.Mint(map[string]any{"kid": nil}, claims), true},
		{"token signed by the encryption key under its kid is refused", ssotest.MintWith(enc, "enc-1", nil, claims), false},
		{"token without kid signed by another key is refused", ssotest.MintWith(enc, "", nil, claims), false},
		{"ES256 token under the EC key's kid is refused", signAs(t, jose.ES256, ec, "ec-1", claims), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.VerifyAccessToken(ctx, tc.token)
			if tc.ok != (err == nil) {
				t.Fatalf("ok=%v, err=%v", tc.ok, err)
			}
		})
	}
}

// Two RS256 keys published during a rotation: a token without kid is
// checked against each.
func TestTokenWithoutKidDuringRotation(t *testing.T) {
	p := ssotest.New(t)
	old, _ := rsa.GenerateKey(rand.Reader, 2048)
	p.ExtraKeys = []json.RawMessage{jwk(t, jose.JSONWebKey{Key: &old.PublicKey, KeyID: "old", Algorithm: "RS256", Use: "sig"})}
	c := newClient(t, p, &clock{t: time.Now()})
	for _, key := range []*rsa.PrivateKey{p.Key, old} {
		if _, err := c.VerifyAccessToken(context.Background(), ssotest.MintWith(key, "", nil, p.AccessClaims("u"))); err != nil {
			t.Fatalf("token without kid refused: %v", err)
		}
	}
}

func login(t *testing.T, p *ssotest.Provider, c *sso.Client, nonce string) (code, verifier string) {
	t.Helper()
	verifier = sso.NewVerifier()
	u, err := c.AuthCodeURL(context.Background(), "s", nonce, verifier)
	if err != nil {
		t.Fatal(err)
	}
	code, _ = authorize(t, u)
	return code, verifier
}

// ID tokens at the callback: the authorized party must be this client when
// the provider names one, expiry has the same leeway as access tokens.
func TestIDTokenRules(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(p *ssotest.Provider)
		skew  time.Duration // how far the client's clock runs ahead
		ok    bool
	}{
		{"single audience with azp of the client passes", func(p *ssotest.Provider) {}, 0, true},
		{"several audiences with azp of the client pass", func(p *ssotest.Provider) { p.IDTokenAudience = []string{p.ClientID, "other"} }, 0, true},
		{"several audiences with azp of another client are refused", func(p *ssotest.Provider) {
			p.IDTokenAudience, p.IDTokenAZP = []string{p.ClientID, "other"}, "other"
		}, 0, false},
		{"azp of another client is refused", func(p *ssotest.Provider) { p.IDTokenAZP = "other" }, 0, false},
		{"no azp with the client as sole audience passes", func(p *ssotest.Provider) { p.IDTokenAZP = "-" }, 0, true},
		{"audience without the client is refused", func(p *ssotest.Provider) { p.IDTokenAudience = []string{"other"} }, 0, false},
		{"ID token expired 20 s ago by our clock passes within the leeway", func(p *ssotest.Provider) { p.AccessTTL = 10 * time.Second }, 30 * time.Second, true},
		{"ID token expired a minute ago by our clock is refused", func(p *ssotest.Provider) { p.AccessTTL = 10 * time.Second }, 70 * time.Second, false},
		{"ID token issued a minute in our future is refused", func(p *ssotest.Provider) {}, -time.Minute, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ssotest.New(t)
			tc.setup(p)
			c := newClient(t, p, &clock{t: time.Now().Add(tc.skew)})
			code, v := login(t, p, c, "n1")
			_, prof, err := c.Exchange(ctx, code, v, "n1")
			if tc.ok && (err != nil || prof.Subject != "user-1") {
				t.Fatalf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// A provider without end_session_endpoint: there is no provider logout to
// go through, so EndSessionURL says so with an empty URL.
func TestEndSessionWithoutEndpoint(t *testing.T) {
	p := ssotest.New(t, ssotest.Options{NoEndSession: true})
	c := newClient(t, p, nil)
	got, err := c.EndSessionURL(context.Background(), "hint", "http://front")
	if err != nil || got != "" {
		t.Fatalf("got %q, %v; want empty", got, err)
	}
}

// Revocation sends the client's credentials the way discovery says the
// provider takes them.
func TestRevocationUsesTheAdvertisedClientAuthentication(t *testing.T) {
	var gotBasic, gotPost bool
	mux := http.NewServeMux()
	srvURL := ""
	mux.HandleFunc("GET /realms/r/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		e := srvURL + "/realms/r/protocol/openid-connect"
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": srvURL + "/realms/r", "authorization_endpoint": e + "/auth", "token_endpoint": e + "/token",
			"jwks_uri": e + "/certs", "revocation_endpoint": e + "/revoke",
			"token_endpoint_auth_methods_supported": []string{"client_secret_post"},
		})
	})
	mux.HandleFunc("POST /realms/r/protocol/openid-connect/revoke", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		_, _, gotBasic = r.BasicAuth()
		gotPost = r.PostForm.Get("client_id") == "cid" && r.PostForm.Get("client_secret") == "sec"
	})
	srv := httptestServer(t, mux)
	srvURL = srv
	c, err := sso.New(sso.Config{Issuer: srv + "/realms/r", ClientID: "cid", ClientSecret: "sec", RedirectURL: "http://x/cb"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeToken(context.Background(), "tok", "refresh_token"); err != nil {
		t.Fatal(err)
	}
	if gotBasic || !gotPost {
		t.Fatalf("basic=%v post=%v; want the secret in the form only", gotBasic, gotPost)
	}
}

func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

// A provider whose issuer ends in a slash (Auth0 and others), configured
// through its discovery URL: discovery succeeds and tokens must carry the
// issuer exactly as the provider spells it.
func TestIssuerWithTrailingSlash(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	mux := http.NewServeMux()
	base := ""
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": base + "/", "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/oauth/token",
			"jwks_uri": base + "/.well-known/jwks.json",
		})
	})
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "a", Algorithm: "RS256", Use: "sig"}}})
	})
	base = httptestServer(t, mux)
	issuer := sso.IssuerFrom(base+"/.well-known/openid-configuration", "ignored")
	c, err := sso.New(sso.Config{Issuer: issuer, ClientID: "cid", ClientSecret: "s", RedirectURL: "http://x/cb"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Discover(ctx); err != nil {
		t.Fatalf("discovery: %v", err)
	}
	if c.Issuer() != base+"/" {
		t.Fatalf("issuer %q", c.Issuer())
	}
	claims := map[string]any{"iss": base + "/", "sub": "u", "aud": "cid", "exp": time.Now().Add(time.Minute).Unix()}
	if _, err := c.VerifyAccessToken(ctx, ssotest.MintWith(key, "a", nil, claims)); err != nil {
		t.Fatalf("token with the provider's issuer refused: %v", err)
	}
	if _, err := c.VerifyAccessToken(ctx, ssotest.MintWith(key, "a", nil, with(claims, map[string]any{"iss": base}))); err == nil {
		t.Fatal("token with the issuer spelt without the slash accepted")
	}
}

// A provider naming a different issuer in its discovery document is not
// trusted at all.
func TestDiscoveryWithForeignIssuerFails(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /realms/x/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": "https://evil.example/realms/x", "authorization_endpoint": "a", "token_endpoint": "b", "jwks_uri": "c"})
	})
	base := httptestServer(t, mux)
	c, _ := sso.New(sso.Config{Issuer: base + "/realms/x", ClientID: "cid", ClientSecret: "s", RedirectURL: "http://x/cb"})
	if err := c.Discover(context.Background()); err == nil {
		t.Fatal("discovery with a foreign issuer succeeded")
	}
}

// Token endpoint answers and how they are classed: refusals (the session
// is over) against provider failures (retry later), without the body.
func TestGrantErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		refused bool
	}{
		{"400 invalid_grant is a refusal", 400, `{"error":"invalid_grant","error_description":"Token is not active"}`, true},
		{"401 invalid_client is a refusal", 401, `{"error":"invalid_client"}`, true},
		{"200 carrying an error is a refusal", 200, `{"error":"invalid_grant"}`, true},
		{"500 is a provider failure", 500, `{"error":"server_error","leak":"refresh-token-value"}`, false},
		{"503 with an HTML page is a provider failure", 503, `<html>down refresh-token-value</html>`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			base := ""
			mux.HandleFunc("GET /realms/r/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
				e := base + "/realms/r/protocol/openid-connect"
				json.NewEncoder(w).Encode(map[string]any{"issuer": base + "/realms/r", "authorization_endpoint": e + "/auth", "token_endpoint": e + "/token", "jwks_uri": e + "/certs"})
			})
			mux.HandleFunc("POST /realms/r/protocol/openid-connect/token", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			})
			base = httptestServer(t, mux)
			c, _ := sso.New(sso.Config{Issuer: base + "/realms/r", ClientID: "cid", ClientSecret: "s", RedirectURL: "http://x/cb"})
			_, err := c.Refresh(context.Background(), "refresh-token-value")
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, sso.ErrRefused) != tc.refused {
				t.Fatalf("refused=%v: %v", errors.Is(err, sso.ErrRefused), err)
			}
			if strings.Contains(err.Error(), "refresh-token-value") {
				t.Fatalf("error echoes the token: %v", err)
			}
		})
	}
}
