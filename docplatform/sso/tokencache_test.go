package sso_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

func cacheClient(t *testing.T, p *ssotest.Provider, clk *clock, size int) *sso.Client {
	t.Helper()
	c, err := sso.New(sso.Config{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: p.ClientSecret,
		RedirectURL: "http://127.0.0.1/api/auth/callback", Now: clk.Now, TokenCacheSize: size})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func claimsAt(p *ssotest.Provider, sub string, now time.Time, ttl time.Duration) map[string]any {
	return map[string]any{
		"iss": p.Issuer, "sub": sub, "aud": "account", "azp": p.ClientID, "typ": "Bearer",
		"iat": now.Unix(), "exp": now.Add(ttl).Unix(),
	}
}

// The second verification of a token is answered from the cache: same
// answer, no second RS256 verification.
func TestTokenCacheHit(t *testing.T) {
	p := ssotest.New(t)
	now := time.Unix(1_800_000_000, 0)
	clk := &clock{t: now}
	c := cacheClient(t, p, clk, 0)
	ctx := context.Background()
	tok := p.Mint(nil, claimsAt(p, "user-1", now, 5*time.Minute))
	first, err := c.VerifyAccessToken(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		got, err := c.VerifyAccessToken(ctx, tok)
		if err != nil || got != first {
			t.Fatalf("hit %d: %+v, %v; want %+v", i, got, err, first)
		}
	}
	if n := c.Verifications(); n != 1 {
		t.Fatalf("%d full verifications, want 1", n)
	}
	if n := c.CachedTokens(); n != 1 {
		t.Fatalf("%d cached tokens, want 1", n)
	}
	// A token differing in one byte of its signature is not the cached one.
	bad := []byte(tok)
	bad[len(bad)-2] ^= 'A' ^ 'B'
	if bad[len(bad)-2] == tok[len(tok)-2] {
		bad[len(bad)-2] = 'C'
	}
	if _, err := c.VerifyAccessToken(ctx, string(bad)); err == nil {
		t.Fatal("token with a changed signature accepted")
	}
}

// Refused tokens are never stored, and stay refused however often they
// come.
func TestTokenCacheNeverStoresFailures(t *testing.T) {
	p := ssotest.New(t)
	now := time.Unix(1_800_000_000, 0)
	clk := &clock{t: now}
	c := cacheClient(t, p, clk, 0)
	ctx := context.Background()
	good := claimsAt(p, "user-1", now, 5*time.Minute)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	refused := map[string]string{
		"expired":           p.Mint(nil, with(good, map[string]any{"exp": now.Add(-time.Minute).Unix()})),
		"other issuer":      p.Mint(nil, with(good, map[string]any{"iss": p.Issuer + "x"})),
		"other audience":    p.Mint(nil, with(good, map[string]any{"azp": "other"})),
		"wrong key":         ssotest.MintWith(other, p.KeyID, nil, good),
		"unknown kid":       p.Mint(map[string]any{"kid": "nope"}, good),
		"tampered payload":  tamper(p.Mint(nil, good)),
		"ID token (nonce)":  p.Mint(nil, with(good, map[string]any{"nonce": "n"})),
		"not yet valid":     p.Mint(nil, with(good, map[string]any{"nbf": now.Add(time.Hour).Unix()})),
		"refresh token typ": p.Mint(nil, with(good, map[string]any{"typ": "Refresh"})),
	}
	for name, tok := range refused {
		for i := 0; i < 2; i++ {
			if _, err := c.VerifyAccessToken(ctx, tok); err == nil {
				t.Fatalf("%s: accepted on try %d", name, i+1)
			}
		}
	}
	if n := c.CachedTokens(); n != 0 {
		t.Fatalf("%d tokens cached after refusals only", n)
	}
	if n, want := c.Verifications(), int64(2*len(refused)); n != want {
		t.Fatalf("%d full verifications, want %d (every refusal verified in full)", n, want)
	}
}

// A cached token is never accepted at or past its exp, not even within
// the leeway the full verification allows; inside that leeway it is
// verified in full each time and not stored.
func TestTokenCacheHonoursExp(t *testing.T) {
	p := ssotest.New(t)
	now := time.Unix(1_800_000_000, 0)
	clk := &clock{t: now}
	c := cacheClient(t, p, clk, 0)
	ctx := context.Background()
	tok := p.Mint(nil, claimsAt(p, "user-1", now, time.Minute))
	if _, err := c.VerifyAccessToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	clk.Add(59 * time.Second)
	if _, err := c.VerifyAccessToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if n := c.Verifications(); n != 1 {
		t.Fatalf("%d full verifications before exp, want 1", n)
	}
	clk.Add(11 * time.Second) // 10 s past exp: within the verifier's leeway
	for i := 0; i < 2; i++ {
		if _, err := c.VerifyAccessToken(ctx, tok); err != nil {
			t.Fatalf("within the leeway: %v", err)
		}
	}
	if n := c.Verifications(); n != 3 {
		t.Fatalf("%d full verifications, want 3: past exp each call is verified in full", n)
	}
	if n := c.CachedTokens(); n != 0 {
		t.Fatalf("%d tokens cached past their exp", n)
	}
	clk.Add(30 * time.Second)
	if _, err := c.VerifyAccessToken(ctx, tok); err == nil {
		t.Fatal("token accepted 40 s past its exp")
	}
}

// When the provider rotates its keys and drops the one that signed a
// cached token, the token is refused from the moment the client's key set
// learns of the rotation — the same moment a client without the cache
// would refuse it.
func TestTokenCacheFollowsKeyRotation(t *testing.T) {
	p := ssotest.New(t)
	now := time.Unix(1_800_000_000, 0)
	clk := &clock{t: now}
	c := cacheClient(t, p, clk, 0)
	ctx := context.Background()
	old := p.Mint(nil, claimsAt(p, "user-1", now, time.Hour))
	if _, err := c.VerifyAccessToken(ctx, old); err != nil {
		t.Fatal(err)
	}
	newKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	p.Key, p.KeyID = newKey, "k2"
	clk.Add(11 * time.Second)
	// A token under the new kid makes the client fetch the set again.
	if _, err := c.VerifyAccessToken(ctx, p.Mint(nil, claimsAt(p, "user-2", clk.Now(), time.Hour))); err != nil {
		t.Fatalf("token under the new key refused: %v", err)
	}
	if _, err := c.VerifyAccessToken(ctx, old); err == nil {
		t.Fatal("token signed by a key the provider dropped still accepted from the cache")
	}
	// A refetch that keeps a key keeps its cached tokens valid.
	kept := p.Mint(nil, claimsAt(p, "user-3", clk.Now(), time.Hour))
	if _, err := c.VerifyAccessToken(ctx, kept); err != nil {
		t.Fatal(err)
	}
	clk.Add(11 * time.Second)
	if _, err := c.VerifyAccessToken(ctx, p.Mint(map[string]any{"kid": "unknown"}, claimsAt(p, "x", clk.Now(), time.Hour))); err == nil {
		t.Fatal("unknown kid accepted")
	}
	before := c.Verifications()
	if _, err := c.VerifyAccessToken(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if c.Verifications() != before {
		t.Fatal("a refetch that kept the key emptied the cache")
	}
}

// The cache never holds more than its size.
func TestTokenCacheIsBounded(t *testing.T) {
	p := ssotest.New(t)
	now := time.Unix(1_800_000_000, 0)
	clk := &clock{t: now}
	c := cacheClient(t, p, clk, 5)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		if _, err := c.VerifyAccessToken(ctx, p.Mint(nil, claimsAt(p, fmt.Sprintf("user-%d", i), now, time.Hour))); err != nil {
			t.Fatal(err)
		}
		if n := c.CachedTokens(); n > 5 {
			t.Fatalf("%d tokens cached, bound 5", n)
		}
	}
	// Off: nothing is stored, every call verifies.
	off := cacheClient(t, p, clk, -1)
	tok := p.Mint(nil, claimsAt(p, "user-1", now, time.Hour))
	for i := 0; i < 2; i++ {
		if _, err := off.VerifyAccessToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if off.Verifications() != 2 || off.CachedTokens() != 0 {
		t.Fatalf("cache off: %d verifications, %d cached", off.Verifications(), off.CachedTokens())
	}
}
