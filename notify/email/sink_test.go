package email_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// sink is a real SMTP server on loopback that records every session: its
// envelope and raw message data.
type sink struct {
	addr string // host:port
	srv  *smtp.Server

	// rcptReply, when set, answers RCPT TO for the recipients it names.
	rcptReply map[string]*smtp.SMTPError
	// auth, when set, is the user:pass the sink requires (PLAIN).
	auth string
	// stall, when set, holds every DATA until it is closed.
	stall chan struct{}
	// discard keeps only a count of messages (for benchmarks).
	discard  bool
	received atomic.Int64

	mu       sync.Mutex
	sessions []*sinkSession
	active   int
	peak     int
	conns    []*smtp.Conn
}

type sinkSession struct {
	s        *sink
	conn     *smtp.Conn
	authUser string
	msgs     []sinkMsg
	cur      sinkMsg
}

type sinkMsg struct {
	Helo string
	From string
	To   []string
	Data []byte
}

func startSink(t testing.TB, host string, configure func(*sink)) *sink {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	return serveSink(t, l, configure, nil)
}

func serveSink(t testing.TB, l net.Listener, configure func(*sink), tlsCfg *tls.Config) *sink {
	t.Helper()
	s := &sink{addr: l.Addr().String()}
	if configure != nil {
		configure(s)
	}
	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = "sink.test"
	srv.AllowInsecureAuth = true
	srv.TLSConfig = tlsCfg
	srv.ErrorLog = log.New(io.Discard, "", 0)
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	s.srv = srv
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *sink) port(t testing.TB) int {
	_, p, _ := net.SplitHostPort(s.addr)
	n, err := net.LookupPort("tcp", p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (s *sink) newSession(c *smtp.Conn) (smtp.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := &sinkSession{s: s, conn: c}
	s.sessions = append(s.sessions, ss)
	s.conns = append(s.conns, c)
	s.active++
	if s.active > s.peak {
		s.peak = s.active
	}
	return ss, nil
}

// dropConnections closes every open connection from the server side, as a
// server does when it times out idle sessions.
func (s *sink) dropConnections() {
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// messages returns every message received, in order.
func (s *sink) messages() []sinkMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sinkMsg
	for _, ss := range s.sessions {
		out = append(out, ss.msgs...)
	}
	return out
}

// perSession returns how many messages each session carried.
func (s *sink) perSession() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, ss := range s.sessions {
		if len(ss.msgs) > 0 {
			out = append(out, len(ss.msgs))
		}
	}
	return out
}

func (s *sink) peakSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

func (ss *sinkSession) AuthMechanisms() []string {
	if ss.s.auth == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *sinkSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user+":"+pass != ss.s.auth {
			return smtp.ErrAuthFailed
		}
		ss.authUser = user
		return nil
	}), nil
}

func (ss *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	if ss.s.auth != "" && ss.authUser == "" {
		return smtp.ErrAuthRequired
	}
	ss.cur = sinkMsg{From: from, Helo: ss.conn.Hostname()}
	return nil
}

func (ss *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if r := ss.s.rcptReply[to]; r != nil {
		return r
	}
	ss.cur.To = append(ss.cur.To, to)
	return nil
}

func (ss *sinkSession) Data(r io.Reader) error {
	if ss.s.stall != nil {
		<-ss.s.stall
	}
	if ss.s.discard {
		_, err := io.Copy(io.Discard, r)
		ss.s.received.Add(1)
		return err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	ss.cur.Data = b
	ss.s.mu.Lock()
	ss.msgs = append(ss.msgs, ss.cur)
	ss.s.mu.Unlock()
	ss.cur = sinkMsg{}
	return nil
}

func (ss *sinkSession) Reset() { ss.cur = sinkMsg{} }

func (ss *sinkSession) Logout() error {
	ss.s.mu.Lock()
	ss.s.active--
	ss.s.mu.Unlock()
	return nil
}

// selfSigned makes a certificate for 127.0.0.1 and smtp.example.test and
// returns it with a pool that trusts it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "smtp.example.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     []string{"smtp.example.test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	var pemBuf bytes.Buffer
	_ = pem.Encode(&pemBuf, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool, pemBuf.String()
}

// headerLine finds the raw header line name: in data, unfolded.
func headerLine(data []byte, name string) string {
	head, _, _ := strings.Cut(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n\n")
	head = strings.ReplaceAll(head, "\n ", " ")
	head = strings.ReplaceAll(head, "\n\t", " ")
	for _, line := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(k, name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

type tlsConfigT struct{ cert tls.Certificate }

func (c *tlsConfigT) server() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.cert}, MinVersion: tls.VersionTLS12}
}

func tlsListener(l net.Listener, cfg *tls.Config) net.Listener { return tls.NewListener(l, cfg) }
