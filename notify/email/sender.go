package email

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// Sender sends Messages over SMTP. It is safe for concurrent use; Close
// it when done.
type Sender struct {
	addr Addressing
	set  settings

	mu       sync.Mutex
	pool     *pool
	closed   bool
	testMail TestAccountSource
	// failed and failedAt remember the last failed account fetch, so a
	// burst of sends fails fast instead of each waiting out the timeout.
	failed   error
	failedAt time.Time
}

type settings struct {
	logger     *slog.Logger
	lookupHost func(ctx context.Context, host string) ([]string, error)
}

// An Option adjusts a Sender.
type Option func(*settings)

// WithLogger sets where the sender logs (connection retries, test-mail
// account use). Credentials and message contents are never logged.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) {
		if l != nil {
			s.logger = l
		}
	}
}

// WithLookupHost replaces the resolver of the SMTP host name (tests use
// it to give a name several loopback addresses).
func WithLookupHost(f func(ctx context.Context, host string) ([]string, error)) Option {
	return func(s *settings) {
		if f != nil {
			s.lookupHost = f
		}
	}
}

func newSettings(o []Option) settings {
	s := settings{logger: slog.Default(), lookupHost: net.DefaultResolver.LookupHost}
	for _, f := range o {
		f(&s)
	}
	return s
}

// New returns a Sender for the SMTP server of cfg. Nothing is dialed
// until the first Send.
func New(cfg SMTPConfig, addr Addressing, o ...Option) (*Sender, error) {
	if cfg.Host == "" {
		return nil, errors.New("email.smtp.host: required")
	}
	s := &Sender{addr: addr, set: newSettings(o)}
	p, err := newPool(cfg, s.set)
	if err != nil {
		return nil, err
	}
	s.pool = p
	return s, nil
}

// Test-mail limits: the public service is a convenience for evaluation, so
// a send fails fast rather than hanging when it is out of reach.
const (
	testMailAccountTimeout = 10 * time.Second
	testMailConnectTimeout = 10 * time.Second
	testMailSocketTimeout  = 30 * time.Second
	testMailRetryAfter     = 30 * time.Second
)

// NewTestMail returns a Sender for deployments without email.smtp.host:
// mail goes to the public test-mail account that src provides, fetched at
// the first Send (never before, so starting the service needs no network).
// If fetching fails, that Send fails with an error wrapping
// ErrTestMailUnavailable, and so does every Send in the next 30 seconds
// without trying again (a broadcast must not wait out the timeout once
// per subscriber); after that the next Send tries again.
func NewTestMail(src TestAccountSource, addr Addressing, o ...Option) *Sender {
	return &Sender{addr: addr, set: newSettings(o), testMail: src}
}

// Send delivers m. Errors are *SendError; see IsPermanent.
func (s *Sender) Send(ctx context.Context, m Message) error {
	if err := ctx.Err(); err != nil {
		return &SendError{Stage: StageConnect, Err: err}
	}
	msg, err := s.addr.build(m)
	if err != nil {
		return &SendError{Stage: StageMessage, Permanent: true, Err: err}
	}
	p, err := s.getPool(ctx)
	if err != nil {
		return err
	}
	return p.send(ctx, msg)
}

func (s *Sender) getPool(ctx context.Context) (*pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &SendError{Stage: StageConnect, Err: ErrClosed}
	}
	if s.pool != nil {
		return s.pool, nil
	}
	if s.failed != nil && time.Since(s.failedAt) < testMailRetryAfter {
		return nil, s.failed
	}
	actx, cancel := context.WithTimeout(ctx, testMailAccountTimeout)
	defer cancel()
	acct, err := s.testMail.TestAccount(actx)
	if err != nil {
		s.failed = &SendError{Stage: StageTestMail, Err: fmt.Errorf("%w: %w", ErrTestMailUnavailable, err)}
		s.failedAt = time.Now()
		return nil, s.failed
	}
	s.failed = nil
	p, err := newPool(SMTPConfig{
		Host:              acct.SMTP.Host,
		Port:              acct.SMTP.Port,
		Secure:            acct.SMTP.Secure,
		User:              acct.User,
		Pass:              acct.Pass,
		ConnectionTimeout: testMailConnectTimeout,
		SocketTimeout:     testMailSocketTimeout,
	}, s.set)
	if err != nil {
		return nil, &SendError{Stage: StageTestMail, Err: fmt.Errorf("%w: %w", ErrTestMailUnavailable, err)}
	}
	s.set.logger.Warn("email: no SMTP server configured; mail goes to the public test-mail service, not to recipients",
		"web", acct.Web, "user", acct.User)
	s.pool = p
	return p, nil
}

// Check opens one connection to the SMTP server as a send would — TCP,
// TLS or STARTTLS, EHLO, AUTH when the server offers it and credentials
// are set — and closes it politely, sending no mail (`govkit notify
// check-config`). A test-mail Sender has no server of its own to check:
// it returns an error saying so without any network traffic.
func (s *Sender) Check(ctx context.Context) error {
	if s.testMail != nil {
		return errors.New("no SMTP server configured (email.smtp.host): mail goes to the public test-mail service")
	}
	c, err := s.pool.dial(ctx)
	if err != nil {
		return err
	}
	s.pool.quit(c)
	return nil
}

// Close closes idle connections and makes later Sends fail with ErrClosed.
func (s *Sender) Close() error {
	s.mu.Lock()
	p := s.pool
	s.closed = true
	s.mu.Unlock()
	if p != nil {
		p.close()
	}
	return nil
}
