package inbound

import (
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// limitListener hands out connections while fewer than maxOpen are open,
// and fewer than perClient from one address; others are told to come back
// later and closed. Every connection it hands out lives MaxSessionTime at
// most.
type limitListener struct {
	net.Listener
	maxOpen, perClient int
	// greet: the listener serves plain SMTP (not implicit TLS), so a refused
	// client can be answered in SMTP.
	greet bool

	mu       sync.Mutex
	open     map[*conn]struct{}
	byClient map[string]int
}

func newLimitListener(l net.Listener, maxOpen int, greet bool) *limitListener {
	return &limitListener{
		Listener: l, maxOpen: maxOpen, perClient: max(1, maxOpen/clientShare), greet: greet,
		open: map[*conn]struct{}{}, byClient: map[string]int{},
	}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientAddr(nc)
		c := &conn{Conn: nc, readEnd: time.Now().Add(MaxSessionTime)}
		l.mu.Lock()
		ok := len(l.open) < l.maxOpen && l.byClient[client] < l.perClient
		if ok {
			l.open[c] = struct{}{}
			l.byClient[client]++
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
		_ = nc.SetDeadline(c.readEnd)
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

// endIdle ends every connection that is not receiving or processing a
// message now, and every other one once its message is answered: for a
// graceful shutdown.
func (l *limitListener) endIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.open {
		c.end()
	}
}

func clientAddr(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// conn is a connection under the server's limits: no read waits past
// readEnd, whatever deadline the SMTP server asks for.
type conn struct {
	net.Conn
	release func()
	once    sync.Once

	mu      sync.Mutex
	readEnd time.Time
	busy    bool // a message is being received or processed
}

func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	if t.IsZero() || t.After(c.readEnd) {
		t = c.readEnd
	}
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
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

// end makes the connection's next read fail at once, and a read waiting
// now too unless a message is in hand (its data is still read, and it is
// answered).
func (c *conn) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.readEnd.After(now) {
		c.readEnd = now
	}
	if !c.busy {
		_ = c.Conn.SetReadDeadline(now)
	}
}

func (c *conn) setBusy(b bool) {
	c.mu.Lock()
	c.busy = b
	c.mu.Unlock()
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
