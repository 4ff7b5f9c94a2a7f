package devidp

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	jose "github.com/go-jose/go-jose/v4"
)

// signingKey is an RSA key pair with its kid, the RFC 7638 thumbprint of
// the public key, so a key kept in a file keeps its kid across restarts.
type signingKey struct {
	id   string
	priv *rsa.PrivateKey
}

func newSigningKey(priv *rsa.PrivateKey) (*signingKey, error) {
	tp, err := (&jose.JSONWebKey{Key: &priv.PublicKey}).Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("devidp: key thumbprint: %w", err)
	}
	return &signingKey{id: base64.RawURLEncoding.EncodeToString(tp), priv: priv}, nil
}

// op.SigningKey
func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.priv }
func (k *signingKey) ID() string                                  { return k.id }

// publicKey is a JWKS entry (op.Key).
type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.priv.PublicKey }

// keyring holds the current signing key and the one before it.
type keyring struct {
	mu   sync.RWMutex
	cur  *signingKey
	prev *signingKey
	file string
}

func loadKeys(file string) (*keyring, error) {
	kr := &keyring{file: file}
	if file != "" {
		data, err := os.ReadFile(file)
		switch {
		case err == nil:
			priv, err := parseKey(data)
			if err != nil {
				return nil, fmt.Errorf("devidp: key file %s: %w", file, err)
			}
			if kr.cur, err = newSigningKey(priv); err != nil {
				return nil, err
			}
			return kr, nil
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("devidp: key file: %w", err)
		}
	}
	if _, err := kr.rotate(); err != nil {
		return nil, err
	}
	kr.prev = nil
	return kr, nil
}

func parseKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("no PEM PRIVATE KEY block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, errors.New("not an RSA key")
	}
	return priv, nil
}

func (kr *keyring) current() *signingKey {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	return kr.cur
}

// all returns the keys a verifier may need: current first.
func (kr *keyring) all() []*signingKey {
	kr.mu.RLock()
	defer kr.mu.RUnlock()
	if kr.prev == nil {
		return []*signingKey{kr.cur}
	}
	return []*signingKey{kr.cur, kr.prev}
}

func (kr *keyring) rotate() (string, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("devidp: generate key: %w", err)
	}
	k, err := newSigningKey(priv)
	if err != nil {
		return "", err
	}
	if kr.file != "" {
		if err := writeKey(kr.file, priv); err != nil {
			return "", err
		}
	}
	kr.mu.Lock()
	kr.prev, kr.cur = kr.cur, k
	kr.mu.Unlock()
	return k.id, nil
}

// writeKey replaces the key file atomically, readable by its owner only.
func writeKey(file string, priv *rsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return fmt.Errorf("devidp: encode key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("devidp: key file: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".devidp-key-*")
	if err != nil {
		return fmt.Errorf("devidp: key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		tmp.Close()
		return fmt.Errorf("devidp: key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("devidp: key file: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("devidp: key file: %w", err)
	}
	return nil
}

func (kr *keyring) sign(header map[string]any, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("devidp: sign: %w", err)
	}
	cur := kr.current()
	kid := cur.id
	opts := &jose.SignerOptions{}
	opts.WithType("JWT")
	for k, v := range header {
		switch k {
		case "alg":
			return "", errors.New("devidp: sign: alg is always RS256")
		case "kid":
			s, ok := v.(string)
			if !ok {
				return "", errors.New("devidp: sign: kid must be a string")
			}
			kid = s
		case "typ":
			if v == nil {
				delete(opts.ExtraHeaders, jose.HeaderType)
				continue
			}
			opts.WithHeader(jose.HeaderType, v)
		default:
			opts.WithHeader(jose.HeaderKey(k), v)
		}
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: &jose.JSONWebKey{Key: cur.priv, KeyID: kid}}, opts)
	if err != nil {
		return "", fmt.Errorf("devidp: sign: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("devidp: sign: %w", err)
	}
	return jws.CompactSerialize()
}
