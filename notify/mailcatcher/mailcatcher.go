// Package mailcatcher is the development mail server of `govkit dev`: an
// SMTP server on a local port that accepts every message, keeps the most
// recent ones, and serves them over HTTP — a page listing caught mail
// (newest first) with a reading view per message, and the same data as
// JSON for tests and scripts. It catches text messages too (SMSSender):
// `govkit dev` sends SMS to it instead of a provider, and the page lists
// them beside the mail.
//
// Mail is shown safely: headers and text bodies are HTML-escaped, and an
// HTML body is only ever served from its own endpoint under a Content
// Security Policy that sandboxes it (no scripts, no forms, no remote
// images or styles — a tracking pixel cannot call out) and shown in a
// sandboxed iframe.
//
// With Options.Dir (Open), every caught message is also kept as a file in
// that directory and read back at the next start, so caught mail survives
// a restart of `govkit dev`; the bounds of Options apply to what is kept
// there too. Without it (New), a restart forgets everything.
package mailcatcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"mime"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decode mail in any common charset
	gomail "github.com/emersion/go-message/mail"
	"github.com/emersion/go-smtp"
)

// Defaults for Options.
const (
	DefaultMaxMessages    = 1000
	DefaultMaxBytes       = 64 << 20
	DefaultMaxMessageSize = 4 << 20
)

// Options bound what a Catcher keeps.
type Options struct {
	// MaxMessages kept; the oldest are dropped first (default 1000).
	MaxMessages int
	// MaxBytes of raw mail kept in all (default 64 MiB).
	MaxBytes int64
	// MaxMessageSize is the largest message accepted (default 4 MiB).
	MaxMessageSize int64
	// Dir, when set (Open), keeps caught mail and SMS as files, one per
	// message, read back at the next start.
	Dir    string
	Logger *slog.Logger
}

// Mail is one caught message.
type Mail struct {
	ID       int64     `json:"id"`
	Received time.Time `json:"received"`
	// Envelope is the SMTP envelope: MAIL FROM (e.g. a bn-… bounce
	// address) and RCPT TO.
	Envelope Envelope `json:"envelope"`
	// From, To and Subject are the decoded headers.
	From    string `json:"from"`
	To      string `json:"to"`
	Subject string `json:"subject"`
	// Text and HTML are the first text/plain and text/html bodies.
	Text string `json:"text,omitempty"`
	HTML string `json:"html,omitempty"`
	// Headers holds every top-level header, as received.
	Headers map[string][]string `json:"headers"`
	Size    int                 `json:"size"`

	raw   []byte
	lines []headerLine // Headers in the order received, for the page
}

// Envelope is a message's SMTP envelope.
type Envelope struct {
	From string   `json:"from"`
	To   []string `json:"to"`
}

// Catcher keeps caught mail; it is safe for concurrent use.
type Catcher struct {
	opts Options

	mu        sync.RWMutex
	mails     []*Mail // oldest first
	bytes     int64
	nextID    int64
	texts     []SMS // oldest first
	nextSMSID int64
}

// New returns an empty Catcher that keeps what it catches in memory only
// (Options.Dir is ignored; see Open).
func New(opts Options) *Catcher {
	opts.Dir = ""
	return newCatcher(opts)
}

func newCatcher(opts Options) *Catcher {
	if opts.MaxMessages <= 0 {
		opts.MaxMessages = DefaultMaxMessages
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Catcher{opts: opts}
}

// Start listens for SMTP on addr (e.g. "127.0.0.1:1025"; port 0 picks a
// free one) and serves until stop is called or ctx ends. It returns the
// address it listens on. stop closes the listener, lets sessions finish
// within its context's deadline, then closes what is left.
func (c *Catcher) Start(ctx context.Context, addr string) (smtpAddr string, stop func(context.Context) error, err error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("mail catcher: %w", err)
	}
	return c.Serve(ctx, l)
}

// Serve is Start on a listener the caller opened; stop closes it.
func (c *Catcher) Serve(ctx context.Context, l net.Listener) (smtpAddr string, stop func(context.Context) error, err error) {
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{c: c}, nil }))
	srv.Domain = "localhost"
	srv.MaxMessageBytes = c.opts.MaxMessageSize
	srv.MaxRecipients = 100
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = log.New(io.Discard, "", 0)

	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(l); err != nil && !errors.Is(err, smtp.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			c.opts.Logger.Error("mail catcher stopped", "err", err)
		}
	}()
	var once sync.Once
	var stopErr error
	stop = func(sctx context.Context) error {
		once.Do(func() {
			if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, smtp.ErrServerClosed) {
				// Sessions outlived the deadline: cut them off.
				stopErr = err
				_ = srv.Close()
			}
			<-served
		})
		return stopErr
	}
	go func() {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = stop(sctx)
		case <-served:
		}
	}()
	return l.Addr().String(), stop, nil
}

// Mails returns the caught mail, newest first.
func (c *Catcher) Mails() []Mail {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Mail, 0, len(c.mails))
	for i := len(c.mails) - 1; i >= 0; i-- {
		out = append(out, *c.mails[i])
	}
	return out
}

// Mail returns one caught message by id.
func (c *Catcher) Mail(id int64) (Mail, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, m := range c.mails {
		if m.ID == id {
			return *m, true
		}
	}
	return Mail{}, false
}

// Raw returns a caught message's source.
func (m Mail) Raw() []byte { return m.raw }

func (c *Catcher) add(env Envelope, raw []byte) {
	m := parse(raw)
	m.Envelope = env
	m.Received = time.Now().UTC()
	m.Size = len(raw)
	m.raw = raw
	c.mu.Lock()
	c.nextID++
	m.ID = c.nextID
	c.keepMail(m)
	c.saveMail(m)
	c.mu.Unlock()
	c.opts.Logger.Info("mail caught (not delivered)", "from", env.From, "to", strings.Join(env.To, ", "), "subject", m.Subject, "bytes", m.Size)
}

// keepMail appends m and drops the oldest mail beyond the bounds (from
// Dir too); callers hold c.mu.
func (c *Catcher) keepMail(m *Mail) {
	c.mails = append(c.mails, m)
	c.bytes += int64(len(m.raw))
	drop := 0
	for len(c.mails)-drop > c.opts.MaxMessages || (c.bytes > c.opts.MaxBytes && len(c.mails)-drop > 1) {
		c.bytes -= int64(len(c.mails[drop].raw))
		c.forget(mailFile(c.mails[drop].ID))
		drop++
	}
	if drop > 0 {
		for i := range drop {
			c.mails[i] = nil
		}
		c.mails = c.mails[drop:]
	}
}

// parse reads what the page shows. A message that does not parse is kept
// with its source only: a catcher must never refuse mail it was sent.
func parse(raw []byte) *Mail {
	m := &Mail{Headers: map[string][]string{}}
	e, err := message.Read(bytes.NewReader(raw))
	if e == nil {
		m.Text = string(raw)
		return m
	}
	fields := e.Header.Fields()
	for fields.Next() {
		v, verr := fields.Text()
		if verr != nil {
			v = fields.Value()
		}
		k := fields.Key()
		m.Headers[k] = append(m.Headers[k], v)
		m.lines = append(m.lines, headerLine{k, v})
	}
	h := gomail.Header{Header: e.Header}
	m.Subject, _ = h.Subject()
	m.From = addresses(h, "From")
	m.To = addresses(h, "To")
	if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
		m.Text = string(raw)
		return m
	}
	_ = e.Walk(func(_ []int, part *message.Entity, err error) error {
		if err != nil {
			return nil
		}
		ct, _, _ := part.Header.ContentType()
		if disp, _, _ := part.Header.ContentDisposition(); disp == "attachment" {
			return nil
		}
		switch {
		case ct == "text/plain" && m.Text == "", ct == "" && m.Text == "":
			b, _ := io.ReadAll(io.LimitReader(part.Body, DefaultMaxMessageSize))
			m.Text = string(b)
		case ct == "text/html" && m.HTML == "":
			b, _ := io.ReadAll(io.LimitReader(part.Body, DefaultMaxMessageSize))
			m.HTML = string(b)
		}
		return nil
	})
	return m
}

func addresses(h gomail.Header, key string) string {
	list, err := h.AddressList(key)
	if err != nil || len(list) == 0 {
		v, _ := new(mime.WordDecoder).DecodeHeader(h.Get(key))
		return v
	}
	parts := make([]string, len(list))
	for i, a := range list {
		parts[i] = a.Address
		if a.Name != "" {
			parts[i] = a.Name + " <" + a.Address + ">"
		}
	}
	return strings.Join(parts, ", ")
}

// session records one SMTP transaction at a time.
type session struct {
	c   *Catcher
	env Envelope
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.env = Envelope{From: from}
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.env.To = append(s.env.To, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.c.add(s.env, raw)
	s.env = Envelope{}
	return nil
}

func (s *session) Reset()        { s.env = Envelope{} }
func (s *session) Logout() error { return nil }
