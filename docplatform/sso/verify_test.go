package sso_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

// clock is a settable time for the client under test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClient(t testing.TB, p *ssotest.Provider, clk *clock) *sso.Client {
	t.Helper()
	cfg := sso.Config{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret, RedirectURL: "http://127.0.0.1/api/auth/callback"}
	if clk != nil {
		cfg.Now = clk.Now
	}
	c, err := sso.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func with(base map[string]any, change map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range change {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

func hs256(secret []byte, header, claims map[string]any) string {
	signing := b64(header) + "." + b64(claims)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

func TestVerifyAccessToken(t *testing.T) {
	p := ssotest.New(t)
	now := time.Unix(1_800_000_000, 0)
	clk := &clock{t: now}
	c := newClient(t, p, clk)
	ctx := context.Background()

	good := map[string]any{
		"iss": p.Issuer, "sub": "user-1", "aud": "account", "azp": p.ClientID, "typ": "Bearer",
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&p.Key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	other, _ := rsa.GenerateKey(rand.Reader, 2048)

	cases := []struct {
		name  string
		token string
		ok    bool
	}{
		{"valid Keycloak-style token (client in azp only) passes", p.Mint(nil, good), true},
		{"client in aud without azp passes", p.Mint(nil, with(good, map[string]any{"azp": nil, "aud": []string{"account", p.ClientID}})), true},
		{"RFC 9068 token (header at+jwt, no payload typ, client_id) passes", p.Mint(map[string]any{"typ": "at+jwt"}, with(good, map[string]any{"typ": nil, "client_id": p.ClientID})), true},
		{"token without header typ passes", p.Mint(map[string]any{"typ": nil}, good), true},
		{"expired 29 s ago passes within the 30 s leeway", p.Mint(nil, with(good, map[string]any{"exp": now.Add(-29 * time.Second).Unix()})), true},
		{"expired 31 s ago is refused", p.Mint(nil, with(good, map[string]any{"exp": now.Add(-31 * time.Second).Unix()})), false},
		{"token without exp is refused", p.Mint(nil, with(good, map[string]any{"exp": nil})), false},
		{"token valid only in a minute (nbf) is refused", p.Mint(nil, with(good, map[string]any{"nbf": now.Add(time.Minute).Unix()})), false},
		{"token without sub is refused", p.Mint(nil, with(good, map[string]any{"sub": nil})), false},
		{"other issuer is refused", p.Mint(nil, with(good, map[string]any{"iss": p.Issuer + "x"})), false},
		{"issuer with trailing slash is refused (exact match)", p.Mint(nil, with(good, map[string]any{"iss": p.Issuer + "/"})), false},
		{"client in neither aud nor azp is refused", p.Mint(nil, with(good, map[string]any{"azp": "other-client"})), false},
		{"ID token (payload typ ID, nonce) is refused", p.Mint(nil, with(good, map[string]any{"typ": "ID", "aud": p.ClientID, "nonce": "n"})), false},
		{"refresh token (payload typ Refresh) is refused", p.Mint(nil, with(good, map[string]any{"typ": "Refresh"})), false},
		{"lower-case payload typ bearer is refused (Keycloak writes Bearer)", p.Mint(nil, with(good, map[string]any{"typ": "bearer"})), false},
		{"header typ other than JWT or at+jwt is refused", p.Mint(map[string]any{"typ": "logout+jwt"}, good), false},
		{"token carrying nonce is refused", p.Mint(nil, with(good, map[string]any{"nonce": "abc"})), false},
		{"token carrying at_hash is refused", p.Mint(nil, with(good, map[string]any{"at_hash": "abc"})), false},
		{"ID token without typ claim is refused by its nonce", p.Mint(nil, with(good, map[string]any{"typ": nil, "aud": p.ClientID, "nonce": "n"})), false},
		{"alg none is refused", b64(map[string]any{"alg": "none", "typ": "JWT", "kid": p.KeyID}) + "." + b64(good) + ".", false},
		{"HS256 signed with the public key (PEM) is refused", hs256(pubPEM, map[string]any{"alg": "HS256", "typ": "JWT", "kid": p.KeyID}, good), false},
		{"HS256 signed with the public key (DER) is refused", hs256(pubDER, map[string]any{"alg": "HS256", "typ": "JWT", "kid": p.KeyID}, good), false},
		{"signature by another key under the provider's kid is refused", ssotest.MintWith(other, p.KeyID, nil, good), false},
		{"unknown kid is refused", p.Mint(map[string]any{"kid": "nope"}, good), false},
		{"tampered payload is refused", tamper(p.Mint(nil, good)), false},
		{"garbage is refused", "not.a.jwt", false},
		{"empty token is refused", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.VerifyAccessToken(ctx, tc.token)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.Subject != "user-1" {
					t.Fatalf("subject %q", got.Subject)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, sso.ErrInvalidToken) {
				t.Fatalf("error %v does not wrap ErrInvalidToken", err)
			}
		})
	}
}

func tamper(tok string) string {
	var parts [3]string
	n := 0
	start := 0
	for i := 0; i < len(tok); i++ {
		if tok[i] == '.' {
			parts[n] = tok[start:i]
			n++
			start = i + 1
		}
	}
	parts[2] = tok[start:]
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	json.Unmarshal(raw, &claims)
	claims["sub"] = "admin"
	return parts[0] + "." + b64(claims) + "." + parts[2]
}

// A flood of tokens with unknown key ids costs the provider at most one key
// set fetch per 10 s, however many arrive and however concurrently.
func TestUnknownKidFloodIsRateLimited(t *testing.T) {
	p := ssotest.New(t)
	clk := &clock{t: time.Now()}
	c := newClient(t, p, clk)
	ctx := context.Background()
	claims := p.AccessClaims("user-1")
	if _, err := c.VerifyAccessToken(ctx, p.Mint(nil, claims)); err != nil {
		t.Fatal(err)
	}
	if got := p.JWKSFetches.Load(); got != 1 {
		t.Fatalf("%d fetches for the first token, want 1", got)
	}
	flood := func(n int) {
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if _, err := c.VerifyAccessToken(ctx, p.Mint(map[string]any{"kid": fmt.Sprintf("forged-%d", i)}, claims)); err == nil {
					t.Error("token with unknown kid accepted")
				}
			}(i)
		}
		wg.Wait()
	}
	flood(200)
	// The first unknown kid within 10 s of the initial fetch causes none.
	if got := p.JWKSFetches.Load(); got != 1 {
		t.Fatalf("%d fetches after a flood within 10 s of the last fetch, want 1", got)
	}
	clk.Add(11 * time.Second)
	flood(200)
	if got := p.JWKSFetches.Load(); got != 2 {
		t.Fatalf("%d fetches after a flood 11 s later, want 2", got)
	}
	if got := c.Fetches(); got != 2 {
		t.Fatalf("client counted %d fetches, want 2", got)
	}
	// Known keys keep working from the cache during a flood.
	if _, err := c.VerifyAccessToken(ctx, p.Mint(nil, claims)); err != nil {
		t.Fatal(err)
	}
}

// A provider that rotates keys: the new kid is picked up by one refetch.
func TestKeyRotationIsPickedUp(t *testing.T) {
	p := ssotest.New(t)
	clk := &clock{t: time.Now()}
	c := newClient(t, p, clk)
	ctx := context.Background()
	if _, err := c.VerifyAccessToken(ctx, p.Mint(nil, p.AccessClaims("u"))); err != nil {
		t.Fatal(err)
	}
	newKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	p.Key, p.KeyID = newKey, "k2"
	clk.Add(11 * time.Second)
	if _, err := c.VerifyAccessToken(ctx, p.Mint(nil, p.AccessClaims("u"))); err != nil {
		t.Fatalf("rotated key refused: %v", err)
	}
}

func TestIssuerFrom(t *testing.T) {
	cases := []struct{ name, server, realm, want string }{
		{"base URL gets /realms/{realm}", "https://sso.example.org/auth", "standard", "https://sso.example.org/auth/realms/standard"},
		{"trailing slash is dropped", "https://sso.example.org/", "r", "https://sso.example.org/realms/r"},
		{"full endpoint URL loses /protocol/openid-connect", "https://sso.example.org/auth/realms/standard/protocol/openid-connect", "ignored", "https://sso.example.org/auth/realms/standard"},
		{"endpoint URL with a path after it", "https://sso.example.org/realms/x/protocol/openid-connect/auth", "y", "https://sso.example.org/realms/x"},
		{"endpoint URL with a trailing slash", "https://sso.example.org/auth/realms/x/protocol/openid-connect/", "x", "https://sso.example.org/auth/realms/x"},
		{"token endpoint URL", "https://sso.example.org/realms/x/protocol/openid-connect/token", "x", "https://sso.example.org/realms/x"},
		{"base URL with several trailing slashes", "https://sso.example.org//", "standard", "https://sso.example.org/realms/standard"},
		{"discovery URL is the issuer plus the well-known suffix", "https://sso.example.org/realms/x/.well-known/openid-configuration", "x", "https://sso.example.org/realms/x"},
		{"server URL already naming the realm is the issuer", "https://sso.example.org/auth/realms/standard/", "standard", "https://sso.example.org/auth/realms/standard"},
		{"server URL naming another realm still gets the realm appended", "https://sso.example.org/realms/master", "standard", "https://sso.example.org/realms/master/realms/standard"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sso.IssuerFrom(tc.server, tc.realm); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
