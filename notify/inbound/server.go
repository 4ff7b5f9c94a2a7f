package inbound

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/subscription"
)

// Limits on what one client can take (see the package documentation).
const (
	// MaxMessageBytes is the largest message accepted, as in the original.
	MaxMessageBytes = 1_000_000
	// MaxRecipients per message: the service's own mail comes back with
	// one; more are answered 452, which a sending server follows by trying
	// the others in a later transaction.
	MaxRecipients = 10
	// MaxLineLength is twice RFC 5321's 1000 octets, as go-smtp allows.
	MaxLineLength = 2000
	// MaxCommands is how many MAIL and RCPT commands a connection may send
	// without delivering a message (DATA); then it is closed. Senders that
	// deliver can keep a connection for many messages; probing cannot.
	MaxCommands = 100
	// DefaultMaxClients is how many connections may be open at once
	// (options.maxClients).
	DefaultMaxClients = 100
	// DefaultMaxClientsPerAddress is how many of them one client address
	// (an IPv6 /64) may hold (options.maxClientsPerAddress). A sending
	// server delivers bounces over a connection or two; five addresses
	// holding twenty each filled the server.
	DefaultMaxClientsPerAddress = 5
	// DefaultSocketTimeout is how long a client may stay silent
	// (options.socketTimeout, as smtp-server's default), and how long a
	// message's data may take once DATA is sent.
	DefaultSocketTimeout = time.Minute
	// DefaultIdleTimeout is how long a connection may go without a MAIL,
	// RCPT or DATA command (options.idleTimeout): NOOP, RSET, HELO, EHLO,
	// VRFY and HELP answer but do not keep a connection, so that a client
	// cannot hold a slot by talking about nothing.
	DefaultIdleTimeout = time.Minute
	// DefaultMaxSessionTime bounds a connection's whole life
	// (options.maxSessionTime); a sender with more to deliver connects
	// again.
	DefaultMaxSessionTime = 5 * time.Minute
	// processTimeout bounds handling one message (store, acknowledgement).
	processTimeout = 30 * time.Second
)

// Options configure a Server.
type Options struct {
	// Config supplies email.inboundSmtpServer, email.bounce and
	// email.listUnsubscribeByEmail.
	Config        *config.Config
	Store         *mongostore.Store
	Subscriptions *subscription.Service
	// Certificate serves TLS (STARTTLS, options.secure) when the options
	// carry no key and cert: the deployment's server/certs. nil: no
	// STARTTLS, and options.secure serves a certificate made at start.
	Certificate *tls.Certificate
	// HTTPHost is scheme://host:port of the service, for the links in
	// acknowledgement messages when config has no httpHost (the original
	// calls its API at internalHttpHost, so its links name that host).
	HTTPHost string
	Logger   *slog.Logger
	// Now is the clock of bounce dates; nil means notify.Now.
	Now func() time.Time
	// Applied, when set, is told of each mail applied: "hard_bounce",
	// "soft_bounce" (recorded) or "unsubscribe" (for the metrics).
	Applied func(kind string)
}

// Server is the inbound SMTP server. Build it with New, serve with Start.
type Server struct {
	h       *handler
	domains []string
	opts    serverOptions
	tls     *tls.Config
	log     *slog.Logger

	handling atomic.Int64 // messages being handled
}

// New checks the configuration and builds a Server. Warnings name the
// options it ignores and settings that make it refuse everything; the
// error names every config key that is wrong.
func New(o Options) (*Server, []string, error) {
	cfg := o.Config
	in := cfg.Email.InboundSMTPServer
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	opts, warnings, err := parseOptions(in.Options)
	b := cfg.Email.Bounce
	r, rerr := compileRules(b.SubjectRegex, b.SMTPStatusCodeRegex, b.FailedRecipientRegex)
	if err = errors.Join(err, rerr); err != nil {
		return nil, nil, err
	}
	if len(in.Domains) == 0 {
		warnings = append(warnings, "email.inboundSmtpServer.domain is not set: the inbound SMTP server refuses every recipient")
	}
	now := o.Now
	if now == nil {
		now = notify.Now
	}
	s := &Server{
		h: &handler{
			store: o.Store, subs: o.Subscriptions, rules: r,
			bounce: b.Enabled, listUnsubscribe: cfg.Email.ListUnsubscribeByEmail.Enabled,
			threshold: int64(b.UnsubThreshold), httpHost: o.HTTPHost, log: log, now: now,
			applied: o.Applied,
		},
		domains: in.Domains,
		opts:    opts,
		log:     log,
	}
	cert, err := s.certificate(o.Certificate)
	if err != nil {
		return nil, nil, err
	}
	if cert != nil {
		s.tls = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}}
	}
	return s, warnings, nil
}

// certificate is the options' key and cert, else the deployment's, else,
// for implicit TLS only, one made now; nil when TLS is not needed.
func (s *Server) certificate(deployment *tls.Certificate) (*tls.Certificate, error) {
	switch {
	case len(s.opts.keyPEM) > 0:
		c, err := tls.X509KeyPair(s.opts.certPEM, s.opts.keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%s: key and cert do not form a key pair: %v", optionsKey, err)
		}
		return &c, nil
	case deployment != nil:
		return deployment, nil
	case s.opts.secure:
		c, err := selfSigned(append([]string{s.hostname()}, s.domains...))
		return &c, err
	}
	return nil, nil
}

// hostname is the name the server greets with: options.name, else the
// first domain, else the machine's name.
func (s *Server) hostname() string {
	if s.opts.name != "" {
		return s.opts.name
	}
	if len(s.domains) > 0 {
		return s.domains[0]
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "localhost"
}

// Start listens on addr (host:port; port 0 picks a free one) and serves
// until stop is called. It returns the address it listens on. stop stops
// accepting, ends connections between transactions, lets open transactions
// finish within its context's deadline, then closes what is left and waits
// for the handling of any message still running.
func (s *Server) Start(ctx context.Context, addr string) (listening string, stop func(context.Context) error, err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("inbound SMTP: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Start on a listener the caller opened (`govkit dev` opens its
// ports itself); stop closes it.
func (s *Server) Serve(ctx context.Context, ln net.Listener) (listening string, stop func(context.Context) error, err error) {
	limits := newLimitListener(ln, s.opts, !s.opts.secure)
	var l net.Listener = limits
	if s.opts.secure {
		l = tls.NewListener(limits, s.tls)
	}
	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = s.hostname()
	srv.MaxMessageBytes = MaxMessageBytes
	srv.MaxRecipients = MaxRecipients
	srv.MaxLineLength = MaxLineLength
	srv.ReadTimeout = s.opts.socketTimeout
	srv.WriteTimeout = s.opts.socketTimeout
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = errorLog{s.log}
	if s.opts.startTLS && !s.opts.secure {
		// STARTTLS is offered only with a certificate of the deployment's
		// (nil otherwise): clients that verify certificates, as Go's
		// net/smtp does, would fail on one the server made itself.
		srv.TLSConfig = s.tls
	}

	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(l); err != nil && !errors.Is(err, smtp.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.log.Error("inbound SMTP server stopped", "err", err)
		}
	}()
	var once sync.Once
	var stopErr error
	stop = func(ctx context.Context) error {
		once.Do(func() {
			shut := make(chan error, 1)
			go func() { shut <- srv.Shutdown(ctx) }()
			// go-smtp closes only the listeners Serve has registered; one
			// stopped right after Start may not be yet, and would then
			// accept for ever.
			_ = limits.Close()
			limits.shutdown()
			if err := <-shut; err != nil && !errors.Is(err, smtp.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				stopErr = err
				_ = srv.Close()
			}
			<-served
			if err := s.waitHandled(ctx); err != nil {
				stopErr = errors.Join(stopErr, fmt.Errorf("inbound SMTP: messages still being handled: %w", err))
			}
		})
		return stopErr
	}
	return ln.Addr().String(), stop, nil
}

// waitHandled waits until no message is being handled, or ctx ends.
func (s *Server) waitHandled(ctx context.Context) error {
	for s.handling.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// errorLog takes go-smtp's own log: connection trouble (scanners, dropped
// clients) at debug level, panics at error level.
type errorLog struct{ log *slog.Logger }

func (l errorLog) Printf(format string, v ...any) { l.write(fmt.Sprintf(format, v...)) }
func (l errorLog) Println(v ...any)               { l.write(strings.TrimSpace(fmt.Sprintln(v...))) }

func (l errorLog) write(msg string) {
	if strings.HasPrefix(msg, "panic") {
		l.log.Error("inbound SMTP: " + msg)
		return
	}
	l.log.Debug("inbound SMTP: " + msg)
}

func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{s: s, conn: c, client: clientAddr(c.Conn())}, nil
}

// session is one SMTP connection's state.
type session struct {
	s        *Server
	conn     *smtp.Conn
	client   string
	from     string
	rcpts    []recipient
	commands int // MAIL and RCPT since the last DATA
}

func (ss *session) Reset() {
	ss.from, ss.rcpts = "", nil
	if c := limited(ss.conn.Conn()); c != nil {
		c.transaction(false)
	}
}
func (ss *session) Logout() error { return nil }

var errTooManyCommands = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0}, Message: "Too many commands, closing connection"}

// command counts a MAIL or RCPT command; past MaxCommands the connection
// is ended after this answer.
func (ss *session) command() error {
	ss.commands++
	if ss.commands <= MaxCommands {
		return nil
	}
	if c := limited(ss.conn.Conn()); c != nil {
		c.endAfterReply()
	}
	return errTooManyCommands
}

// progress marks a step of a transaction (MAIL, RCPT, DATA): the only
// commands that keep a connection from being idle.
func (ss *session) progress() {
	if c := limited(ss.conn.Conn()); c != nil {
		c.progress()
	}
}

// maxPath is RFC 5321's limit on a reverse- or forward-path (4.5.3.1.3).
// go-smtp echoes an accepted sender in its reply, and a reply line of
// some thousands of characters is more than clients read (go-smtp's own
// stops at 2,000), so a longer sender is refused here.
const maxPath = 256

var errPathTooLong = &smtp.SMTPError{Code: 501, EnhancedCode: smtp.EnhancedCode{5, 1, 7}, Message: "Sender address too long"}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	ss.progress()
	if err := ss.command(); err != nil {
		return err
	}
	if len(from) > maxPath {
		return errPathTooLong
	}
	ss.from = from
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.progress()
	if err := ss.command(); err != nil {
		return err
	}
	r, err := parseRecipient(to, ss.s.domains)
	if err != nil {
		return err
	}
	if r.kind == kindUnsubscribe {
		if !ss.s.h.listUnsubscribe {
			return errUnsubscribeOff
		}
		if ss.from == "" {
			return errNullSender
		}
	}
	// The same address twice is one recipient: a bounce counts once, and
	// its code is checked once.
	if slices.Contains(ss.rcpts, r) {
		return nil
	}
	known, err := ss.s.h.checkCode(r, ss.client)
	if err != nil {
		return err
	}
	if known {
		ss.rcpts = append(ss.rcpts, r)
	}
	if c := limited(ss.conn.Conn()); c != nil {
		c.transaction(true)
	}
	return nil
}

// Data receives the message and handles it for each recipient in turn.
// The answer is the first refusal or failure, if any.
func (ss *session) Data(r io.Reader) error {
	ss.progress()
	ss.commands = 0
	raw, err := io.ReadAll(r)
	if err != nil {
		var se *smtp.SMTPError
		if errors.As(err, &se) {
			return err // too large
		}
		return errTryLater // the connection broke off: nothing was handled
	}
	ss.s.handling.Add(1)
	defer ss.s.handling.Add(-1)
	ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
	defer cancel()
	var first error
	for _, rc := range ss.rcpts {
		var err error
		switch rc.kind {
		case kindUnsubscribe:
			err = ss.s.h.unsubscribe(ctx, rc, ss.from, ss.client)
		case kindBounce:
			err = ss.s.h.bounced(ctx, rc, raw, ss.client)
		}
		if first == nil {
			first = err
		}
	}
	return first
}
