package httpapi

import (
	"crypto/aes"
	"crypto/cipher"
	"sync"

	"github.com/govkit/govkit/docplatform/config"
)

// secretKeys are the keys derived from one COOKIE_SECRET, each for one
// purpose: the login-state cookie's cipher, the API keys' lookup HMAC and
// the CSRF tokens' MAC, with pools of the keyed hashes (a keyed HMAC
// costs five allocations to set up).
//
// Rotating COOKIE_SECRET without signing everyone out: a server is given
// the new secret and, as CookieSecretPrevious, the old one. Tokens and
// cookies are made with the new keys only; the old keys still verify what
// was made before (CSRF tokens, a login in progress), and an API key
// hashed under the old secret is found by its old hash and rehashed under
// the new one at its first use (check 3). Once every key in use has been
// seen and the longest session has been refreshed, the previous secret is
// dropped (README "Operating").
type secretKeys struct {
	loginAEAD   cipher.AEAD
	apiKeyMAC   []byte
	apiKeyHMACs sync.Pool // of hash.Hash keyed with apiKeyMAC
	csrfKey     []byte
	csrfHashers sync.Pool // of *csrfHasherState
}

func newSecretKeys(secret string) (*secretKeys, error) {
	block, err := aes.NewCipher(config.DeriveKey(secret, "login-state cookie"))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &secretKeys{
		loginAEAD: aead,
		apiKeyMAC: config.DeriveKey(secret, "api-key hmac"),
		csrfKey:   config.DeriveKey(secret, "csrf token"),
	}, nil
}
