package sso

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"
)

// The cache's map is keyed by the token's SHA-256 and holds no copy of the
// token: a heap dump or a debugger shows no bearer credential.
func TestTokenCacheKeyedByHash(t *testing.T) {
	c := newTokenCache(10)
	raw := "header.payload.signature"
	h := sha256.Sum256([]byte(raw))
	now := time.Unix(1_800_000_000, 0)
	c.put(&h, cachedToken{tok: AccessToken{Subject: "s", Expiry: now.Add(time.Minute)}, kid: "k"}, now)
	for k, v := range c.m {
		if k != h {
			t.Fatalf("entry keyed by %x, want the SHA-256 of the token", k)
		}
		if strings.Contains(v.tok.Subject+v.kid, raw) {
			t.Fatal("entry holds the token")
		}
	}
	if _, ok := c.get(&h); !ok {
		t.Fatal("entry not found by its hash")
	}
}

// A full cache evicts expired entries before live ones.
func TestTokenCacheEvictsExpiredFirst(t *testing.T) {
	c := newTokenCache(10)
	now := time.Unix(1_800_000_000, 0)
	var live [sha256.Size]byte
	for i := 0; i < 10; i++ {
		h := sha256.Sum256([]byte{byte(i)})
		exp := now.Add(-time.Second)
		if i == 0 {
			live, exp = h, now.Add(time.Hour)
		}
		c.put(&h, cachedToken{tok: AccessToken{Expiry: exp}}, now)
	}
	h := sha256.Sum256([]byte("new"))
	c.put(&h, cachedToken{tok: AccessToken{Expiry: now.Add(time.Hour)}}, now)
	if _, ok := c.get(&live); !ok {
		t.Fatal("a live entry was evicted while expired ones were there")
	}
	if n := c.len(); n != 2 {
		t.Fatalf("%d entries after the sweep, want 2", n)
	}
}
