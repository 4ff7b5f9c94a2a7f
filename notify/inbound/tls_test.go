package inbound_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/smtp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSTARTTLSWithTheConfiguredCertificate(t *testing.T) {
	keyPEM, certPEM, der := testCertificate(t, "mx.invalid.local")
	e := start(t, map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"options": map[string]any{
		"key": keyPEM, "cert": certPEM,
	}}}})
	const reader = "reader@example.com"
	id := e.subscribe(t, "roads", reader)
	un := "un-" + id + "-" + e.subscription(t, id)["unsubscriptionCode"].(string) + "@invalid.local"

	c, err := smtp.Dial(e.smtpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mx.sender.test"); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(certPEM))
	if err := c.StartTLS(&tls.Config{RootCAs: pool, ServerName: "mx.invalid.local"}); err != nil {
		t.Fatalf("STARTTLS: %v", err)
	}
	if state, ok := c.TLSConnectionState(); !ok || !bytes.Equal(state.PeerCertificates[0].Raw, der) {
		t.Fatal("the server does not present the configured certificate")
	}
	if err := c.Mail(reader); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt(un); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("Subject: unsubscribe\r\n\r\n"))
	if err := w.Close(); err != nil {
		t.Fatalf("refused over TLS: %v", err)
	}
	if s := e.subscription(t, id)["state"]; s != "deleted" {
		t.Fatalf("state %v", s)
	}
}

func TestSTARTTLSCanBeDisabled(t *testing.T) {
	keyPEM, certPEM, _ := testCertificate(t, "mx.invalid.local")
	e := start(t, map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"options": map[string]any{
		"key": keyPEM, "cert": certPEM, "disabledCommands": []any{"STARTTLS"},
	}}}})
	c := e.dial(t)
	if ext := c.expect(250, "EHLO mx.sender.test"); strings.Contains(ext, "STARTTLS") {
		t.Fatalf("STARTTLS offered:\n%s", ext)
	}
}

func TestImplicitTLSWithoutACertificate(t *testing.T) {
	e := start(t, map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"options": map[string]any{"secure": true}}}})
	tc, err := tls.Dial("tcp", e.smtpAddr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	defer tc.Close()
	if names := tc.ConnectionState().PeerCertificates[0].DNSNames; !slices.Contains(names, "invalid.local") {
		t.Fatalf("certificate names %v", names)
	}
	c, err := smtp.NewClient(tc, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Hello("mx.sender.test"); err != nil {
		t.Fatal(err)
	}
	_ = c.Quit()
}

func TestImplicitTLSWithTheConfiguredCertificate(t *testing.T) {
	keyPEM, certPEM, der := testCertificate(t, "mx.invalid.local")
	e := start(t, map[string]any{"email": map[string]any{"inboundSmtpServer": map[string]any{"options": map[string]any{
		"secure": true, "key": keyPEM, "cert": certPEM,
	}}}})
	const reader = "reader@example.com"
	e.subscribe(t, "roads", reader)
	bn := e.notify(t, "roads", reader).Envelope.From

	tc, err := tls.Dial("tcp", e.smtpAddr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	if !bytes.Equal(tc.ConnectionState().PeerCertificates[0].Raw, der) {
		t.Fatal("the server does not present the configured certificate")
	}
	c, err := smtp.NewClient(tc, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		t.Error("STARTTLS offered on a TLS connection")
	}
	if err := c.Mail(""); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt(bn); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte(dsn(bn, reader, "5.1.1")))
	if err := w.Close(); err != nil {
		t.Fatalf("refused: %v", err)
	}
	if bs := e.bounces(t); len(bs) != 1 || bs[0]["hardBounceCount"] != 1.0 {
		t.Fatalf("records %v", bs)
	}
}

// testCertificate makes a self-signed certificate and key in PEM.
func testCertificate(t *testing.T, name string) (keyPEM, certPEM string, der []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})),
		string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), der
}
