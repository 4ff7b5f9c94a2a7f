package sso

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	if kid == "" && len(k.keys) == 1 {
		// A token without kid is fine while the provider has one key.
		for _, key := range k.keys {
			return key, k.last, true
		}
	}
	key, ok := k.keys[kid]
	return key, k.last, ok
}

// key returns the public key with the given id.
func (k *keySet) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	if key, _, ok := k.cached(kid); ok {
		return key, nil
	}
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	key, last, ok := k.cached(kid)
	if ok {
		return key, nil
	}
	if !last.IsZero() && k.now().Sub(last) < k.minRefetch {
		return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, kid)
	}
	keys, err := k.fetch(ctx)
	k.mu.Lock()
	k.last = k.now()
	if err == nil {
		k.keys = keys
	}
	k.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if key, _, ok := k.cached(kid); ok {
		return key, nil
	}
	return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, kid)
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

// verifyRS256 parses a compact JWS, insists on exactly one RS256 signature
// (so "alg":"none" and HS256 signed with the public key never reach key
// lookup) and verifies it with the provider's key.
func (k *keySet) verifyRS256(ctx context.Context, raw string) (*jose.JSONWebSignature, []byte, error) {
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	if len(jws.Signatures) != 1 {
		return nil, nil, fmt.Errorf("%w: want one signature", ErrInvalidToken)
	}
	key, err := k.key(ctx, jws.Signatures[0].Header.KeyID)
	if err != nil {
		if errors.Is(err, ErrUnknownKey) {
			return nil, nil, fmt.Errorf("%w: %v", ErrInvalidToken, err)
		}
		return nil, nil, err
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: signature: %v", ErrInvalidToken, err)
	}
	return jws, payload, nil
}

// oidcKeySet lets go-oidc's ID-token verifier use the rate-limited cache.
type oidcKeySet struct{ k *keySet }

func (o oidcKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	_, payload, err := o.k.verifyRS256(ctx, jwt)
	return payload, err
}
