package sso

import (
	"crypto/rsa"
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultTokenCacheSize is Config.TokenCacheSize when unset.
const DefaultTokenCacheSize = 10000

// tokenCache remembers access tokens that passed every check of
// VerifyAccessToken, so a client presenting the same token on every
// request pays for one RS256 verification and one claims parse, not one
// per request (about 45 µs each, most of a request's CPU).
//
// What makes a hit as good as a full verification:
//   - The key is the token's SHA-256, never the token: the map does not
//     hold bearer credentials, and a hit needs the exact same bytes.
//   - Only tokens that passed are stored; a refusal stores nothing, so a
//     refused token is verified in full (and refused) every time.
//   - Each entry keeps the token's exp and is used only while the clock is
//     before it. The verifier forgives up to Leeway past exp for clock
//     skew; the cache does not: a token in its leeway is verified in full
//     and not stored.
//   - The issuer, audience, alg, typ and claim rules depend only on the
//     token's bytes and the client's fixed configuration, so they hold for
//     as long as the bytes are the same. The one input that changes is the
//     provider's key set: each entry keeps the key that verified it, and a
//     hit requires the key set to still hold that very key under the same
//     kid. After a rotation that drops the key (picked up by the key
//     set's next fetch) the token is verified again and refused, exactly
//     as it would be without the cache.
//   - The cache is bounded (Config.TokenCacheSize entries). When full, the
//     expired entries go first, then arbitrary ones (Go's map order is
//     randomised), a tenth of the cap at a time, so filling it costs an
//     attacker valid tokens and gains nothing but evictions.
//
// Only the verification is cached. What the token lets its holder do —
// roles, the system-admin flag, group membership — is read by the caller
// from its database on every request.
type tokenCache struct {
	max int
	mu  sync.RWMutex
	m   map[[sha256.Size]byte]cachedToken
}

type cachedToken struct {
	tok AccessToken
	kid string
	key *rsa.PublicKey
}

func newTokenCache(max int) *tokenCache {
	if max <= 0 {
		return nil
	}
	return &tokenCache{max: max, m: make(map[[sha256.Size]byte]cachedToken)}
}

func (c *tokenCache) get(h *[sha256.Size]byte) (cachedToken, bool) {
	c.mu.RLock()
	e, ok := c.m[*h]
	c.mu.RUnlock()
	return e, ok
}

func (c *tokenCache) drop(h *[sha256.Size]byte) {
	c.mu.Lock()
	delete(c.m, *h)
	c.mu.Unlock()
}

func (c *tokenCache) put(h *[sha256.Size]byte, e cachedToken, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[*h]; !ok && len(c.m) >= c.max {
		for k, v := range c.m {
			if !now.Before(v.tok.Expiry) {
				delete(c.m, k)
			}
		}
		for k := range c.m {
			if len(c.m) < c.max-c.max/10 {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[*h] = e
}

func (c *tokenCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}

// CachedTokens is how many verified access tokens the client remembers.
func (c *Client) CachedTokens() int {
	if c.verified == nil {
		return 0
	}
	return c.verified.len()
}

// Verifications is how many access tokens were verified in full (RS256
// and claims) rather than found in the cache.
func (c *Client) Verifications() int64 { return c.verifications.Load() }
