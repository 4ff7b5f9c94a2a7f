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
	kid := jws.Signatures[0].Header.KeyID
	if kid == "" {
		keys, err := k.all(ctx)
		if err != nil {
			return nil, nil, err
		}
		for _, key := range keys {
			if payload, err := jws.Verify(key); err == nil {
				return jws, payload, nil
			}
		}
		return nil, nil, fmt.Errorf("%w: no key of the provider's set verifies a token without kid", ErrInvalidToken)
	}
	key, err := k.key(ctx, kid)
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
