package sso

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// ErrUnknownKey is returned for a token signed with a key id the provider's
// key set does not hold (after at most one refetch per interval).
var ErrUnknownKey = errors.New("sso: signing key not in the provider's key set")

// keySet caches the provider's RSA signing keys. A token naming an unknown
// key id triggers a refetch, but at most one per minRefetch: otherwise a
// stream of forged tokens with random kids would turn every request into a
// request to the provider (go-oidc's RemoteKeySet refetches without limit).
type keySet struct {
	url        func(context.Context) (string, error)
	client     *http.Client
	minRefetch time.Duration
	now        func() time.Time

	mu   sync.RWMutex
	keys map[string]*rsa.PublicKey
	last time.Time // last fetch attempt, successful or not

	fetchMu sync.Mutex // one fetch at a time; waiters re-check the cache
	fetches atomic.Int64
}

func (k *keySet) cached(kid string) (*rsa.PublicKey, time.Time, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	key, ok := k.keys[kid]
	return key, k.last, ok
}

// key returns the public key with the given id, fetching the set again
// (at most once per minRefetch) when the id is unknown.
func (k *keySet) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	if key, _, ok := k.cached(kid); ok {
		return key, nil
	}
	if err := k.refetch(ctx, func() bool { _, _, ok := k.cached(kid); return ok }); err != nil {
		return nil, err
	}
	if key, _, ok := k.cached(kid); ok {
		return key, nil
	}
	return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, kid)
}

// holds reports whether the set still holds key under kid (for a token
// without kid, kid is "" and any entry holding key counts).
func (k *keySet) holds(kid string, key *rsa.PublicKey) bool {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if kid != "" {
		return k.keys[kid] == key
	}
	for _, v := range k.keys {
		if v == key {
			return true
		}
	}
	return false
}

// all returns every signing key, for a token that names none (allowed by
// RFC 7515; a provider with a single key may leave kid out). The set is
// fetched when nothing is cached yet, under the same refetch limit.
func (k *keySet) all(ctx context.Context) ([]*rsa.PublicKey, error) {
	list := func() []*rsa.PublicKey {
		k.mu.RLock()
		defer k.mu.RUnlock()
		out := make([]*rsa.PublicKey, 0, len(k.keys))
		for _, key := range k.keys {
			out = append(out, key)
		}
		return out
	}
	if l := list(); len(l) > 0 {
		return l, nil
	}
	if err := k.refetch(ctx, func() bool { return len(list()) > 0 }); err != nil {
		return nil, err
	}
	return list(), nil
}

// refetch downloads the set unless done() already holds after waiting for
// a fetch in flight, or the last fetch was less than minRefetch ago.
func (k *keySet) refetch(ctx context.Context, done func() bool) error {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	if done() {
		return nil
	}
	k.mu.RLock()
	last := k.last
	k.mu.RUnlock()
	if !last.IsZero() && k.now().Sub(last) < k.minRefetch {
		return nil
	}
	keys, err := k.fetch(ctx)
	k.mu.Lock()
	k.last = k.now()
	if err == nil {
		// A key the provider still publishes keeps its pointer: the token
		// cache accepts a hit only while its key is still in the set.
		for kid, key := range keys {
			if old, ok := k.keys[kid]; ok && old.Equal(key) {
				keys[kid] = old
			}
		}
		k.keys = keys
	}
	k.mu.Unlock()
	return err
}

// fetch downloads the key set and keeps the RSA signing keys. Keys of other
// types or uses are skipped rather than failing the whole set: providers
// publish encryption and EC keys beside the RS256 ones.
func (k *keySet) fetch(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	k.fetches.Add(1)
	u, err := k.url(ctx)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	// Intermediate caches must not hand back the set we are refetching
	// because it lacks a key.
	req.Header.Set("Cache-Control", "no-cache")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sso: fetch key set: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("sso: fetch key set: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("sso: fetch key set: %s", resp.Status)
	}
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("sso: key set is not JSON: %w", err)
	}
	keys := make(map[string]*rsa.PublicKey)
	for _, r := range raw.Keys {
		var jwk jose.JSONWebKey
		if err := jwk.UnmarshalJSON(r); err != nil {
			continue
		}
		pub, ok := jwk.Key.(*rsa.PublicKey)
		if !ok || (jwk.Use != "" && jwk.Use != "sig") || (jwk.Algorithm != "" && jwk.Algorithm != string(jose.RS256)) {
			continue
		}
		keys[jwk.KeyID] = pub
	}
	return keys, nil
}

// Fetches is how many times the key set was requested from the provider.
func (c *Client) Fetches() int64 { return c.keys.fetches.Load() }

// jwsHeader is the protected header of a token, as far as we read it.
type jwsHeader struct {
	Alg  string          `json:"alg"`
	Kid  string          `json:"kid"`
	Typ  json.RawMessage `json:"typ"`
	Crit json.RawMessage `json:"crit"`
}

// b64 is base64url without padding, strict: one spelling per byte string.
var b64 = base64.RawURLEncoding.Strict()

// maxToken bounds what is parsed at all. A cookie holds at most 4 KiB,
// but a Keycloak token listing many roles, sent as a Bearer header, can be
// tens of KiB; the server's header limit is 64 KiB.
const maxToken = 64 << 10

// verifyRS256 parses a JWS in compact serialization (RFC 7515 §7.1) and
// verifies it: alg exactly RS256 (so "none", HS256 signed with the public
// key, RS384, PS256 and ES256 never reach key lookup), no crit header (we
// implement no extension), and an RSASSA-PKCS1-v1_5 SHA-256 signature by
// the provider's key named in kid, or by any of its keys when kid is
// absent. Embedded keys (jwk, jku, x5u, x5c) are ignored: only the
// provider's key set is trusted. Header members are read by their exact
// names, and a header naming one twice is refused (see decodeExact).
//
// It is written on the standard library rather than go-jose because it
// runs on every request: go-jose's general JWS parser sanitises every
// header field through its own reflection-based JSON and was a third of
// the allocations of a cookie-authenticated request.
func (k *keySet) verifyRS256(ctx context.Context, raw string) (jwsHeader, []byte, *rsa.PublicKey, error) {
	var h jwsHeader
	if len(raw) > maxToken {
		return h, nil, nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidToken, maxToken)
	}
	dot1 := strings.IndexByte(raw, '.')
	dot2 := strings.LastIndexByte(raw, '.')
	if dot1 < 0 || dot1 == dot2 || strings.IndexByte(raw[dot1+1:dot2], '.') >= 0 {
		return h, nil, nil, fmt.Errorf("%w: not a compact JWS of three parts", ErrInvalidToken)
	}
	hb, err := b64.DecodeString(raw[:dot1])
	if err != nil {
		return h, nil, nil, fmt.Errorf("%w: header: %v", ErrInvalidToken, err)
	}
	if err := decodeExact(hb, &h); err != nil {
		return h, nil, nil, fmt.Errorf("%w: header: %v", ErrInvalidToken, err)
	}
	if h.Alg != "RS256" {
		return h, nil, nil, fmt.Errorf("%w: alg %q is not RS256", ErrInvalidToken, clip(h.Alg))
	}
	if h.Crit != nil {
		return h, nil, nil, fmt.Errorf("%w: crit header names extensions we do not implement", ErrInvalidToken)
	}
	sig, err := b64.DecodeString(raw[dot2+1:])
	if err != nil {
		return h, nil, nil, fmt.Errorf("%w: signature: %v", ErrInvalidToken, err)
	}
	payload, err := b64.DecodeString(raw[dot1+1 : dot2])
	if err != nil {
		return h, nil, nil, fmt.Errorf("%w: payload: %v", ErrInvalidToken, err)
	}
	digest := sha256.Sum256([]byte(raw[:dot2]))
	if h.Kid == "" {
		keys, err := k.all(ctx)
		if err != nil {
			return h, nil, nil, err
		}
		for _, key := range keys {
			if rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) == nil {
				return h, payload, key, nil
			}
		}
		return h, nil, nil, fmt.Errorf("%w: no key of the provider's set verifies a token without kid", ErrInvalidToken)
	}
	key, err := k.key(ctx, h.Kid)
	if err != nil {
		if errors.Is(err, ErrUnknownKey) {
			return h, nil, nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
		}
		return h, nil, nil, err
	}
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig); err != nil {
		return h, nil, nil, fmt.Errorf("%w: signature: %v", ErrInvalidToken, err)
	}
	return h, payload, key, nil
}

// clip shortens attacker-supplied text for error messages and logs.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// oidcKeySet lets go-oidc's ID-token verifier use the rate-limited cache.
type oidcKeySet struct{ k *keySet }

func (o oidcKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	_, payload, _, err := o.k.verifyRS256(ctx, jwt)
	return payload, err
}
