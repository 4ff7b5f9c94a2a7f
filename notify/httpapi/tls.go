package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	"github.com/govkit/govkit/notify/config"
)

// TLSConfig returns the server TLS settings of the original: TLS when the
// deployment has server/certs/key.pem and cert.pem, and client certificates
// requested (not required) when ca.pem is there too. A client certificate
// that chains to that CA makes the caller SuperAdmin (package access); one
// that does not is ignored, as the original ignores unauthorized sockets.
// nil means plain HTTP.
func TLSConfig(t config.TLS) (*tls.Config, error) {
	if !t.Enabled || len(t.Key) == 0 || len(t.Cert) == 0 {
		return nil, nil
	}
	cert, err := tls.X509KeyPair(t.Cert, t.Key)
	if err != nil {
		return nil, errors.New("tls: server/certs/cert.pem and key.pem do not form a key pair")
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if t.ClientCertificateEnabled && len(t.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(t.CA) {
			return nil, errors.New("tls: server/certs/ca.pem holds no certificate")
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return c, nil
}
