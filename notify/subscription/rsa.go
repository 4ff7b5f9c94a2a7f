package subscription

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
)

// RSAConfigName is the configuration record holding the key pair that
// decrypts confirmationCodeEncrypted: value {private, public} in PEM (PKCS#8
// private key, SPKI public key), as the original writes it.
const RSAConfigName = "rsa"

// DefaultRSABits is the key size the original generates.
const DefaultRSABits = 4096

// EnsureRSAKey creates the RSA key pair configuration when it is missing.
// Only the primary (or a single node) calls it at start, as in the original;
// secondaries read what the primary wrote. bits 0 means DefaultRSABits;
// a negative bits generates nothing (the caller puts a key with PutRSAKey).
func (s *Service) EnsureRSAKey(ctx context.Context, bits int) error {
	if bits < 0 {
		return nil
	}
	n, err := s.store.Configurations().Count(ctx, bson.D{{Key: "name", Value: RSAConfigName}})
	if err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	if bits == 0 {
		bits = DefaultRSABits
	}
	priv, pub, err := GenerateRSAKeyPEM(bits)
	if err != nil {
		return err
	}
	rec := &notify.Configuration{Name: RSAConfigName, Value: notify.Fields{{Key: "private", Value: priv}, {Key: "public", Value: pub}}}
	if err := s.store.Configurations().Insert(ctx, rec); err != nil && !errors.Is(err, notify.ErrDuplicate) {
		return fmt.Errorf("store rsa key pair: %w", err)
	}
	return nil
}

// PutRSAKey stores the given PEM key pair unless one is stored already.
func (s *Service) PutRSAKey(ctx context.Context, private, public string) error {
	n, err := s.store.Configurations().Count(ctx, bson.D{{Key: "name", Value: RSAConfigName}})
	if err != nil || n > 0 {
		return err
	}
	rec := &notify.Configuration{Name: RSAConfigName, Value: notify.Fields{{Key: "private", Value: private}, {Key: "public", Value: public}}}
	return s.store.Configurations().Insert(ctx, rec)
}

// GenerateRSAKeyPEM returns a new key pair as PKCS#8 and SPKI PEM.
func GenerateRSAKeyPEM(bits int) (private, public string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		return "", "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	pubDer, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDer})), nil
}

// CheckRSAKeyPair checks the value of the rsa configuration record as it
// is about to be written: {private, public} with a private key the
// service can decrypt with (PKCS#8 or PKCS#1 PEM) and its public key in
// PEM, for the third parties that encrypt codes.
func CheckRSAKeyPair(v any) error {
	if _, err := rsaPrivateKey(v); err != nil {
		return err
	}
	val, _ := v.(notify.Fields)
	pub, _ := val.String("public")
	if block, _ := pem.Decode([]byte(pub)); block == nil {
		return errors.New("public must hold the PEM public key")
	}
	return nil
}

// rsaPrivateKey reads the private key of the rsa configuration's value.
func rsaPrivateKey(v any) (*rsa.PrivateKey, error) {
	val, _ := v.(notify.Fields)
	privPEM, _ := val.String("private")
	block, _ := pem.Decode([]byte(privPEM))
	if block == nil {
		return nil, errors.New("private must hold a PEM RSA private key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if key, ok := k.(*rsa.PrivateKey); ok {
			return key, nil
		}
	} else if key, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return key, nil
	}
	return nil, errors.New("private holds no RSA private key that can be read")
}

// errBadEncrypted is a confirmationCodeEncrypted that cannot be decrypted.
var errBadEncrypted = &notify.FieldError{Field: "confirmationRequest.confirmationCodeEncrypted", Rule: "must be base64 of a message encrypted with the service's RSA public key (OAEP)"}

// decryptConfirmation decrypts confirmationCodeEncrypted with the stored
// private key. Node's crypto.privateDecrypt, which the original uses, defaults
// to OAEP padding with SHA-1; PKCS#1 v1.5 is accepted too, since third
// parties may have encrypted with either.
func (s *Service) decryptConfirmation(ctx context.Context, encrypted string) (userChannelID, code string, err error) {
	rec, err := s.store.Configurations().FindOne(ctx, queryName(RSAConfigName))
	if err != nil {
		if errors.Is(err, notify.ErrNotFound) {
			return "", "", errors.New("the rsa key pair configuration is missing")
		}
		return "", "", err
	}
	key, err := rsaPrivateKey(rec.Value)
	if err != nil {
		return "", "", fmt.Errorf("the rsa configuration: %w", err)
	}
	ct, err := base64.StdEncoding.DecodeString(encrypted)
	if err != nil {
		return "", "", errBadEncrypted
	}
	pt, err := rsa.DecryptOAEP(sha1.New(), nil, key, ct, nil)
	if err != nil {
		pt, err = rsa.DecryptPKCS1v15(nil, key, ct)
		if err != nil {
			return "", "", errBadEncrypted
		}
	}
	parts := strings.Split(string(pt), " ")
	if len(parts) < 2 {
		return "", "", errBadEncrypted
	}
	return parts[0], parts[1], nil
}
