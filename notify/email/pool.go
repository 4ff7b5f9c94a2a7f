package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	mail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"

	"github.com/govkit/govkit/notify"
)

const (
	// idleCheckAfter: a connection idle longer than this is checked with
	// NOOP before reuse, since the server may have dropped it meanwhile.
	idleCheckAfter = 5 * time.Second
	// idleTimeout: idle connections are closed after this, well inside
	// the 5 minutes RFC 5321 lets servers wait before dropping them.
	idleTimeout = time.Minute
	// quitTimeout bounds the polite QUIT when a connection is retired.
	quitTimeout = 5 * time.Second
)

// conn is one open SMTP session. The go-mail Client that dialed it is kept
// with it because sending goes through that Client's settings; each
// connection gets its own so no per-connection state is shared.
type conn struct {
	mc *mail.Client
	sc *smtp.Client
	// nc is the network connection under sc. Closing it is the one way to
	// interrupt a command in flight: sc.Close waits for the command.
	nc       net.Conn
	sent     int
	lastUsed time.Time
}

// pool keeps at most cfg.MaxConnections connections open. A sender takes
// a slot, then an idle connection or a new one, and gives both back when
// done, so there are never more connections than slots.
type pool struct {
	cfg    SMTPConfig
	tls    *tls.Config
	local  net.Addr
	log    *slog.Logger
	lookup func(ctx context.Context, host string) ([]string, error)

	slots chan struct{}

	mu     sync.Mutex
	idle   []*conn
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

func newPool(cfg SMTPConfig, s settings) (*pool, error) {
	cfg = cfg.withDefaults()
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	p := &pool{
		cfg:    cfg,
		tls:    tc,
		log:    s.logger,
		lookup: s.lookupHost,
		slots:  make(chan struct{}, cfg.MaxConnections),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	if cfg.LocalAddress != "" {
		ip := net.ParseIP(cfg.LocalAddress)
		if ip == nil {
			return nil, fmt.Errorf("email.smtp.localAddress: %q is not an IP address", cfg.LocalAddress)
		}
		p.local = &net.TCPAddr{IP: ip}
	}
	go p.reap()
	return p, nil
}

// send delivers msg over a pooled connection. A connection that was idle
// in the pool may have been dropped by the server without us noticing; if
// it breaks before the server accepted anything, the message is tried once
// more on a fresh connection.
func (p *pool) send(ctx context.Context, msg *mail.Msg) error {
	for attempt := 0; ; attempt++ {
		c, err := p.get(ctx)
		if err != nil {
			return err
		}
		reused := c.sent > 0
		if attempt == 0 {
			if err := notify.SendStarting(ctx); err != nil {
				p.put(c, true)
				return &SendError{Stage: StageConnect, Err: err}
			}
		}
		// go-mail takes no context once connected; closing the connection
		// is how a cancelled send stops waiting on the server.
		stop := context.AfterFunc(ctx, func() { _ = c.nc.Close() })
		err = c.mc.SendWithSMTPClient(c.sc, msg)
		c.sent++
		if !stop() {
			p.put(c, false)
			if err == nil {
				// The server accepted the message before the close landed.
				return nil
			}
			return classify(StageSend, fmt.Errorf("%w (%v)", ctx.Err(), err))
		}
		if err == nil {
			p.put(c, true)
			return nil
		}
		reply := isReply(err)
		p.put(c, reply)
		if !reply && reused && attempt == 0 && failedBeforeData(err) {
			p.log.Debug("smtp: pooled connection was dropped; retrying on a new one", "err", err)
			continue
		}
		return classify(StageSend, err)
	}
}

// failedBeforeData reports whether a send failed before any message content
// went out, so trying again cannot deliver the message twice.
func failedBeforeData(err error) bool {
	var ms *mail.SendError
	if !errors.As(err, &ms) {
		return false
	}
	switch ms.Reason {
	case mail.ErrConnCheck, mail.ErrSMTPMailFrom, mail.ErrSMTPRcptTo, mail.ErrSMTPData:
		return true
	}
	return false
}

func (p *pool) get(ctx context.Context) (*conn, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, classify(StageConnect, fmt.Errorf("waiting for a free SMTP connection: %w", ctx.Err()))
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			<-p.slots
			return nil, &SendError{Stage: StageConnect, Err: ErrClosed}
		}
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		// Newest first: the busiest connections stay warm and the rest
		// age out.
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		idle := time.Since(c.lastUsed)
		if idle > idleTimeout {
			p.quit(c)
			continue
		}
		if idle > idleCheckAfter {
			if err := c.sc.UpdateDeadline(p.cfg.SocketTimeout); err != nil || c.sc.Noop() != nil {
				p.discard(c)
				continue
			}
		}
		return c, nil
	}
	c, err := p.dial(ctx)
	if err != nil {
		<-p.slots
		return nil, classify(StageConnect, err)
	}
	return c, nil
}

// put returns a connection and its slot; keep=false closes the connection.
func (p *pool) put(c *conn, keep bool) {
	defer func() { <-p.slots }()
	if !keep {
		p.discard(c)
		return
	}
	if p.cfg.MaxMessages > 0 && c.sent >= p.cfg.MaxMessages {
		p.quit(c)
		return
	}
	c.lastUsed = time.Now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.quit(c)
		return
	}
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

func (p *pool) dial(ctx context.Context) (*conn, error) {
	var nc net.Conn
	opts := []mail.Option{
		mail.WithPort(p.cfg.Port),
		mail.WithTimeout(p.cfg.SocketTimeout),
		mail.WithTLSConfig(p.tls),
		mail.WithDialContextFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
			var err error
			nc, err = p.dialContext(ctx, network, addr)
			return nc, err
		}),
		// Pooled connections are checked by us (NOOP only after idling),
		// and a finished DATA already ends the transaction, so go-mail's
		// NOOP before and RSET after every message are round trips saved.
		mail.WithoutNoop(),
		mail.WithoutRset(),
	}
	switch {
	case p.cfg.Secure, p.cfg.IgnoreTLS:
		// Secure connections are TLS from the first byte (see dialContext).
		opts = append(opts, mail.WithTLSPolicy(mail.NoTLS))
	case p.cfg.RequireTLS:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSMandatory))
	default:
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	}
	if p.cfg.Name != "" {
		opts = append(opts, mail.WithHELO(p.cfg.Name))
	}
	mc, err := mail.NewClient(p.cfg.Host, opts...)
	if err != nil {
		return nil, err
	}
	sc, err := mc.DialToSMTPClientWithContext(ctx)
	if err != nil {
		if nc != nil {
			_ = nc.Close()
		}
		return nil, err
	}
	// Like nodemailer, log in only when the server offers AUTH: a relay
	// that takes mail without it is used as is.
	if ok, _ := sc.Extension("AUTH"); ok && p.cfg.User != "" {
		if err := sc.Auth(&pickAuth{user: p.cfg.User, pass: p.cfg.Pass, method: p.cfg.AuthMethod}); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("SMTP AUTH failed: %w", err)
		}
	}
	return &conn{mc: mc, sc: sc, nc: nc, lastUsed: time.Now()}, nil
}

// dialContext opens the TCP (and for secure, TLS) connection. A host name
// with several addresses is tried address by address until one accepts the
// connection, as the original does when its first attempt fails.
func (p *pool) dialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	host, port := p.cfg.Host, strconv.Itoa(p.cfg.Port)
	addrs := []string{host}
	if net.ParseIP(host) == nil {
		var err error
		addrs, err = p.lookup(ctx, host)
		if err != nil {
			return nil, fmt.Errorf("resolve SMTP host %s: %w", host, err)
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("resolve SMTP host %s: no addresses", host)
		}
	}
	var errs []error
	for i, a := range addrs {
		d := net.Dialer{Timeout: p.cfg.ConnectionTimeout, LocalAddr: p.local}
		nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(a, port))
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			if i < len(addrs)-1 {
				p.log.Warn("smtp: cannot connect to one address of the SMTP host; trying the next", "host", host, "address", a, "err", err)
			}
			continue
		}
		if !p.cfg.Secure {
			return nc, nil
		}
		tc := tls.Client(nc, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", net.JoinHostPort(a, port), err)
		}
		return tc, nil
	}
	return nil, fmt.Errorf("connect to SMTP host %s port %s: %w", host, port, errors.Join(errs...))
}

// quit ends a healthy connection politely, without waiting long for it.
func (p *pool) quit(c *conn) {
	if err := c.sc.UpdateDeadline(quitTimeout); err == nil {
		if c.mc.CloseWithSMTPClient(c.sc) == nil {
			return
		}
	}
	_ = c.nc.Close()
}

// discard drops a connection that is known or suspected to be broken.
func (p *pool) discard(c *conn) { _ = c.nc.Close() }

// reap closes connections that stayed idle past idleTimeout, so an idle
// service does not hold sessions the server would drop anyway.
func (p *pool) reap() {
	defer close(p.done)
	t := time.NewTicker(idleTimeout / 2)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		var old []*conn
		keep := p.idle[:0]
		for _, c := range p.idle {
			if time.Since(c.lastUsed) > idleTimeout {
				old = append(old, c)
			} else {
				keep = append(keep, c)
			}
		}
		p.idle = keep
		p.mu.Unlock()
		for _, c := range old {
			p.quit(c)
		}
	}
}

// close retires idle connections now; busy ones are closed when their
// send finishes.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	for _, c := range idle {
		p.quit(c)
	}
}

// pickAuth chooses the SASL mechanism when the server's EHLO reply is known,
// and delegates to go-mail's implementation of it. One is made per
// connection because mechanisms such as LOGIN keep state.
type pickAuth struct {
	user, pass, method string
	chosen             smtp.Auth
}

func (a *pickAuth) Start(s *smtp.ServerInfo) (string, []byte, error) {
	method := a.method
	if method == "" {
		for _, want := range []string{"PLAIN", "LOGIN", "CRAM-MD5"} {
			for _, have := range s.Auth {
				if have == want {
					method = want
					break
				}
			}
			if method != "" {
				break
			}
		}
	}
	switch method {
	case "PLAIN":
		a.chosen = smtp.PlainAuth("", a.user, a.pass, s.Name, false)
	case "LOGIN":
		a.chosen = smtp.LoginAuth(a.user, a.pass, s.Name, false)
	case "CRAM-MD5":
		a.chosen = smtp.CRAMMD5Auth(a.user, a.pass)
	case "XOAUTH2":
		a.chosen = smtp.XOAuth2Auth(a.user, a.pass)
	default:
		return "", nil, fmt.Errorf("the SMTP server offers no authentication mechanism govkit can use (offered: %v)", s.Auth)
	}
	return a.chosen.Start(s)
}

func (a *pickAuth) Next(fromServer []byte, more bool) ([]byte, error) {
	return a.chosen.Next(fromServer, more)
}
