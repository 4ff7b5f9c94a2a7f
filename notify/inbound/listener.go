package inbound

import (
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/govkit/govkit/internal/clientip"
)

// limitListener hands out connections while fewer than maxOpen are open,
// and fewer than perClient from one address (IPv6: one /64); others are
// told to come back later and closed. Every connection it hands out lives
// sessionTime at most, and idleTimeout without a step of a transaction.
type limitListener struct {
	net.Listener
	maxOpen, perClient       int
	sessionTime, idleTimeout time.Duration
	// greet: the listener serves plain SMTP (not implicit TLS), so a refused
	// client can be answered in SMTP.
	greet bool

	mu       sync.Mutex
	open     map[*conn]struct{}
	byClient map[string]int
	stopping bool
}

func newLimitListener(l net.Listener, o serverOptions, greet bool) *limitListener {
	return &limitListener{
		Listener: l, maxOpen: o.maxClients, perClient: max(1, o.maxClientsPerAddress), greet: greet,
		sessionTime: o.maxSessionTime, idleTimeout: o.idleTimeout,
		open: map[*conn]struct{}{}, byClient: map[string]int{},
	}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := limitKey(nc)
		now := time.Now()
		c := &conn{Conn: nc, readEnd: now.Add(l.sessionTime), idle: l.idleTimeout, idleEnd: now.Add(l.idleTimeout)}
		l.mu.Lock()
		ok := len(l.open) < l.maxOpen && l.byClient[client] < l.perClient
		if ok {
			l.open[c] = struct{}{}
			l.byClient[client]++
			c.stopping = l.stopping
		}
		l.mu.Unlock()
		if !ok {
			go l.refuse(nc)
			continue
		}
		c.release = func() {
			l.mu.Lock()
			delete(l.open, c)
			if l.byClient[client]--; l.byClient[client] <= 0 {
				delete(l.byClient, client)
			}
			l.mu.Unlock()
		}
		_ = c.SetDeadline(c.readEnd)
		return c, nil
	}
}

func (l *limitListener) refuse(nc net.Conn) {
	if l.greet {
		_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = nc.Write([]byte("421 4.7.0 Too many connections, try again later\r\n"))
	}
	_ = nc.Close()
}

// shutdown ends every connection that is between transactions now, and
// every other one once its transaction is answered: for a graceful stop.
func (l *limitListener) shutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopping = true
	for c := range l.open {
		c.shutdown()
	}
}

// limitKey is what the per-client limit counts by: the client's address,
// or its /64 for IPv6, since one host is usually handed a whole /64.
func limitKey(c net.Conn) string {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return clientip.LimitKey(ap.Addr(), 64)
	}
	return c.RemoteAddr().String()
}

// clientAddr is the client's address, for the log and the records.
func clientAddr(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// conn is a connection under the server's limits: no read waits past
// readEnd (the end of the session) or idleEnd (idle time after the last
// step of a transaction), whatever deadline the SMTP server asks for, and
// once the server stops, no read waits at all between transactions.
type conn struct {
	net.Conn
	release func()
	once    sync.Once
	idle    time.Duration

	mu       sync.Mutex
	asked    time.Time // the read deadline the SMTP server asked for last
	readEnd  time.Time
	idleEnd  time.Time
	stopping bool // the server is stopping
	inTxn    bool // a transaction has recipients and is not answered yet
}

func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = t
	return c.applyReadDeadline()
}

// applyReadDeadline sets the read deadline the server asked for, bounded
// by the connection's limits. c.mu is held.
func (c *conn) applyReadDeadline() error {
	t := c.asked
	if t.IsZero() || t.After(c.readEnd) {
		t = c.readEnd
	}
	if t.After(c.idleEnd) {
		t = c.idleEnd
	}
	if c.stopping && !c.inTxn {
		t = time.Now()
	}
	return c.Conn.SetReadDeadline(t)
}

// progress records a step of a transaction: the connection may stay idle
// for its idle time from now. The read under way (a message's data after
// DATA) gets the deadline the server asked for, within the session's.
func (c *conn) progress() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idleEnd = time.Now().Add(c.idle)
	_ = c.applyReadDeadline()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.release != nil {
			c.release()
		}
	})
	return err
}

// shutdown ends the connection now if it is between transactions, else
// once its transaction is answered (its next read then fails).
func (c *conn) shutdown() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopping = true
	if !c.inTxn {
		_ = c.Conn.SetReadDeadline(time.Now())
	}
}

// endAfterReply ends the connection at its next read: the reply being
// written is the last.
func (c *conn) endAfterReply() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readEnd = time.Now()
}

// transaction records whether a transaction with recipients is open.
func (c *conn) transaction(open bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inTxn = open
}

// limited finds the conn under a connection the SMTP server holds (a TLS
// connection wraps it).
func limited(nc net.Conn) *conn {
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	c, _ := nc.(*conn)
	return c
}
