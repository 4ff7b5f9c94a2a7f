package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/govkit/govkit/docplatform"
)

// How the store answers a PostgreSQL that stops answering. A server that
// is down refuses connections, which fails at once; one behind a network
// that drops packets, or on a frozen host, accepts bytes and says
// nothing, and without a bound a request would wait for the kernel to
// give up on the connection (many minutes). A fixed deadline per
// statement cannot tell that from a statement that is merely slow (a
// large report on a loaded server), so the store asks instead: Watch
// pings the server every second on a connection of its own, with half the
// timeout to answer. When a ping goes unanswered the fuse blows: every
// read in progress on the pool's connections fails at once and every new
// one fails without waiting, so requests in flight end within about a
// second and the timeout's half of the outage's start, and Unavailable
// tells the HTTP layer to answer new requests 503 at once. The next
// answered ping mends the fuse. Connecting has half the timeout, and a
// pooled connection idle for over a second is pinged before use with
// half the timeout (pingFirst); errors of a database that does not answer
// are docplatform.ErrUnavailable.

// fuse interrupts the reads of the pool's connections while the database
// does not answer.
type fuse struct {
	blown atomic.Bool
	mu    sync.Mutex
	conns map[*answerConn]struct{}
}

func newFuse() *fuse { return &fuse{conns: map[*answerConn]struct{}{}} }

// blow fails every read in progress and every read to come, until mend.
func (f *fuse) blow() {
	if f.blown.Swap(true) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		c.interrupt()
	}
}

func (f *fuse) mend() { f.blown.Store(false) }

// dialer dials with a bound of connect, and registers each connection
// with the fuse.
func (f *fuse) dialer(connect time.Duration) pgconn.DialFunc {
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := &answerConn{Conn: nc, fuse: f}
		f.mu.Lock()
		f.conns[c] = struct{}{}
		f.mu.Unlock()
		if f.blown.Load() {
			c.interrupt()
		}
		return c, nil
	}
}

// answerConn is a connection of the pool. Its reads fail while the fuse
// is blown; otherwise they keep the deadlines pgx sets (to interrupt a
// read for a cancelled context).
type answerConn struct {
	net.Conn
	fuse        *fuse
	mu          sync.Mutex
	pgx         time.Time // pgx's read deadline; zero: none
	interrupted bool      // the fuse set a past read deadline
}

func (c *answerConn) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.interrupted = true
	c.Conn.SetReadDeadline(time.Unix(1, 0))
}

func (c *answerConn) Read(p []byte) (int, error) {
	if c.fuse.blown.Load() {
		return 0, os.ErrDeadlineExceeded
	}
	c.mu.Lock()
	if c.interrupted {
		c.interrupted = false
		c.Conn.SetReadDeadline(c.pgx)
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (c *answerConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pgx = t
	if c.interrupted {
		return c.Conn.SetWriteDeadline(t)
	}
	return c.Conn.SetDeadline(t)
}

func (c *answerConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pgx = t
	if c.interrupted {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *answerConn) Close() error {
	c.fuse.mu.Lock()
	delete(c.fuse.conns, c)
	c.fuse.mu.Unlock()
	return c.Conn.Close()
}

// pingFirst is pgx's rule for a pooled connection (ping it before use
// when it has been idle for over a second, so that a restarted server's
// dead connections are dropped rather than failing a statement) with the
// ping bounded by wait: a failed ping closes the connection, and pgx's
// own ping that follows fails at once and makes database/sql take
// another.
func pingFirst(wait time.Duration) func(context.Context, stdlib.ShouldPingParams) bool {
	return func(ctx context.Context, p stdlib.ShouldPingParams) bool {
		if p.IdleDuration <= time.Second {
			return false
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		if err := p.Conn.PgConn().Ping(pctx); err != nil {
			p.Conn.PgConn().Close(context.Background())
			return true
		}
		return false
	}
}

// unreachable reports whether err says that the database did not answer
// or would not serve (the connection failed, timed out or was closed; the
// server is shutting down, starting or out of connections; SQLite's file
// stayed locked by another process), as opposed to refusing a statement.
// A client that went away (context.Canceled) is not the database's
// failure.
func unreachable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Classes 08 connection exception, 53 insufficient resources,
		// 57 operator intervention (shutdown, cancelled statement).
		switch pgErr.Code[:min(2, len(pgErr.Code))] {
		case "08", "53", "57":
			return true
		}
		return false
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		code := liteErr.Code() & 0xff
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.As(err, &ne) || errors.As(err, &ce) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// unavailable marks err as the database's outage.
func unavailable(err error) error {
	return &docplatform.UnavailableError{Part: "database", Err: err}
}

// watcher asks PostgreSQL every interval, on a connection of its own (so
// that a pool busy with requests, or a slow statement, is not mistaken
// for a database that is down), whether it answers.
type watcher struct {
	down atomic.Pointer[error] // the last failure; nil while it answers
	stop context.CancelFunc
	done chan struct{}
}

// Watch starts asking the database every interval whether it answers;
// Unavailable reports the answer. It does nothing on SQLite (a file in
// this process) or when already watching. Close stops it.
func (s *Store) Watch(interval time.Duration) {
	if s.dialect != Postgres || s.watch != nil {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	w := &watcher{stop: stop, done: make(chan struct{})}
	s.watch = w
	// The watcher's own connection is outside the fuse: it must hear the
	// database come back.
	cfg := s.pgConfig.Copy()
	cfg.DialFunc = (&net.Dialer{Timeout: s.timeout / 2, KeepAlive: 30 * time.Second}).DialContext
	go func() {
		defer close(w.done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		for {
			err := func() error {
				pctx, cancel := context.WithTimeout(ctx, s.timeout/2)
				defer cancel()
				if conn == nil {
					c, err := pgx.ConnectConfig(pctx, cfg)
					if err != nil {
						return err
					}
					conn = c
				}
				err := conn.Ping(pctx)
				if err != nil {
					conn.Close(context.Background())
					conn = nil
				}
				return err
			}()
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				w.down.Store(&err)
				s.fuse.blow()
			} else {
				w.down.Store(nil)
				s.fuse.mend()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
}

// Unavailable is nil while the database answers, and an error that is
// docplatform.ErrUnavailable after Watch's last question went unanswered.
// It costs an atomic load: the HTTP layer asks it on every request.
func (s *Store) Unavailable() error {
	if s.watch == nil {
		return nil
	}
	if err := s.watch.down.Load(); err != nil {
		return unavailable(*err)
	}
	return nil
}

func (w *watcher) close() {
	w.stop()
	<-w.done
}
