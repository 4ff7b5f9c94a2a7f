package sqlstore

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/govkit/govkit/docplatform"
)

// accessCacheMax bounds each of the access cache's maps (users, API
// keys). A full map is cleared, not grown: someone holding many valid
// identities can make the cache miss, never make it big.
const accessCacheMax = 10_000

// accessCache keeps, on SQLite, the two reads behind every authenticated
// request — Access(userID) and a positive APIKeyGrant(hash) — and is exact:
// every call first runs PRAGMA data_version on a connection of its own
// (watch), and a value different from the last one seen drops the whole
// cache. SQLite changes a connection's data_version whenever another
// connection commits to the file: this Store's writer, another Store, an
// operator's `govkit docplatform grant-admin` command next to the server, a
// second server on the same file. So a commit that returned before a
// call started is seen by that call, as if it had read the database.
//
// The race rule: an entry may be used only if no commit happened between
// the database read that filled it and the check of the call using it.
// Every check that finds a new data_version bumps gen (and clears the
// maps); a call
//
//  1. checks data_version and takes the resulting generation g,
//  2. uses an entry only if it is tagged g,
//  3. on a miss reads the database and stores the answer tagged g, but
//     only if gen is still g when it stores.
//
// An entry tagged g was read after a check that returned g, and the
// using call's check also returned g: data_version did not change between
// the two checks, so no commit did, and the entry holds everything
// committed before the using call's check — and so before the call began.
// A fill whose read raced a commit carries a g that a later check has
// already left behind: it is refused at step 3 or, had it slipped in
// before that check's flush, cleared by it and unusable at step 2.
//
// When the check fails, the call neither uses nor fills the cache: it
// reads the database, as the Store does without a cache, and the cache
// is dropped so that nothing from before the failure survives it.
//
// PostgreSQL has no access cache: there a check that the cache is still
// right is a round trip to the server, as dear as the read it would save.
type accessCache struct {
	watch versionWatch
	// last is the data_version seen by the last check and known whether
	// that check succeeded; both are guarded by watch.mu. checks counts
	// the checks begun (changed only with watch.mu held).
	last   int64
	known  bool
	checks atomic.Uint64

	// gen is the current generation; it changes only with mu held.
	gen atomic.Uint64
	mu  sync.RWMutex
	// users and keys hold *entries: their values are shared by every
	// call that hits them and never changed after they are stored.
	users map[string]*cachedAccess
	keys  map[string]*cachedGrant
	max   int
}

type cachedAccess struct {
	gen uint64
	a   docplatform.UserAccess
}

type cachedGrant struct {
	gen uint64
	g   docplatform.APIKeyGrant
}

func newAccessCache(open func() (driver.Conn, error)) *accessCache {
	return &accessCache{
		watch: versionWatch{open: open},
		users: make(map[string]*cachedAccess),
		keys:  make(map[string]*cachedGrant),
		max:   accessCacheMax,
	}
}

// check runs step 1 of the protocol: it reads data_version, drops the
// cache when it moved (or when the previous check failed), and returns the
// generation entries must carry to be used now. An error says
// data_version could not be read: the caller must then go to the
// database and leave the cache alone.
//
// Most checks do not ask SQLite: when the WAL-index header (walHeader)
// reads as it did just before the last data_version read, nothing was
// committed since, and that read's value still holds.
//
// Calls that queue for the watch connection share checks: a check that
// began after a call did read data_version after every commit that had
// returned before the call, so it answers for that call too. When one
// finished while the call waited, its answer is taken and data_version
// not read again.
func (c *accessCache) check() (gen uint64, err error) {
	arrived := c.checks.Load()
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	// checks moves only under watch.mu, at the start of a check: a value
	// past arrived means a check began after this call and, since the
	// lock is now this call's, has ended. known says it succeeded, and
	// gen is still what it left (only checks change it).
	if c.checks.Load() != arrived && c.known {
		return c.gen.Load(), nil
	}
	v, same := c.watch.unchanged()
	if !same {
		c.checks.Add(1)
		v, err = c.watch.version()
	}
	if err != nil || !c.known || v != c.last {
		c.flush()
		c.last, c.known = v, err == nil
	}
	if err != nil {
		return 0, err
	}
	return c.gen.Load(), nil
}

// flush drops every entry and starts a new generation.
func (c *accessCache) flush() {
	c.mu.Lock()
	c.gen.Add(1)
	clear(c.users)
	clear(c.keys)
	c.mu.Unlock()
}

// access returns the cached access of userID if it is valid for a check
// that returned gen.
func (c *accessCache) access(userID string, gen uint64) (docplatform.UserAccess, bool) {
	c.mu.RLock()
	e := c.users[userID]
	c.mu.RUnlock()
	if e == nil || e.gen != gen {
		return docplatform.UserAccess{}, false
	}
	return e.a, true
}

// putAccess stores a read made after a check that returned gen, unless a
// later check has moved on since.
func (c *accessCache) putAccess(userID string, gen uint64, a docplatform.UserAccess) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return
	}
	if len(c.users) >= c.max {
		clear(c.users)
	}
	c.users[userID] = &cachedAccess{gen: gen, a: a}
}

// grant is access for an API key's HMAC.
func (c *accessCache) grant(hash []byte, gen uint64) (docplatform.APIKeyGrant, bool) {
	c.mu.RLock()
	e := c.keys[string(hash)]
	c.mu.RUnlock()
	if e == nil || e.gen != gen {
		return docplatform.APIKeyGrant{}, false
	}
	return e.g, true
}

// putGrant is putAccess for a key found in the database. Unknown keys are
// never stored: each guess goes to the database (and check 3 counts the
// failures), and guesses cannot fill the cache.
func (c *accessCache) putGrant(hash []byte, gen uint64, g docplatform.APIKeyGrant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return
	}
	if len(c.keys) >= c.max {
		clear(c.keys)
	}
	c.keys[string(hash)] = &cachedGrant{gen: gen, g: g}
}

func (c *accessCache) close() error {
	c.watch.mu.Lock()
	defer c.watch.mu.Unlock()
	c.watch.closed = true
	return c.watch.drop()
}

// versionWatch reads PRAGMA data_version on one read-only connection that
// belongs to no pool: the value is per connection, so it must be the same
// connection every time, and it must not be one that writes (a
// connection's own commits do not change its data_version). It goes
// through the driver directly: a statement prepared once, run with no
// arguments and no cancellable context, its one value read into a reused
// slice — about a third of the allocations of database/sql's path. A
// connection is used by one goroutine at a time: mu serialises the checks.
//
// Once the connection has read through the WAL it also maps the file's
// WAL-index header (walHeader): unchanged answers from it, without a
// statement, allocation or lock in SQLite, when nothing was committed
// since the last read.
type versionWatch struct {
	open func() (driver.Conn, error)

	mu     sync.Mutex
	conn   driver.Conn
	stmt   driver.StmtQueryContext
	dest   []driver.Value
	closed bool

	// hdr is the mapped header (nil before the first read, where it
	// cannot be mapped, and after a fault); mapTried says this connection
	// tried. snap is its reading taken just before the data_version read
	// that returned snapVersion; snapOK says both hold.
	hdr         *walHeader
	mapTried    bool
	snap        walHeaderValue
	snapVersion int64
	snapOK      bool
	// reads counts the data_version statements run (for tests).
	reads uint64
}

var errWatchClosed = errors.New("sqlstore: store closed")

// version returns the connection's data_version, opening the connection
// first if need be. After an error the connection is dropped and the next
// call opens a new one. The caller holds mu.
func (w *versionWatch) version() (int64, error) {
	if w.closed {
		return 0, errWatchClosed
	}
	if w.conn == nil {
		if err := w.connect(); err != nil {
			return 0, err
		}
	}
	// The header is read before the statement: a commit that lands
	// between the two is in v but not in snap, so the next check finds
	// the header changed and asks again — never the other way round.
	var snap walHeaderValue
	snapOK := false
	if w.hdr != nil {
		if snap, snapOK = w.hdr.read(); !snapOK {
			w.unmap()
		}
	}
	v, err := w.read()
	if err != nil {
		w.drop()
		return 0, fmt.Errorf("sqlstore: read data_version: %w", err)
	}
	w.reads++
	w.snap, w.snapVersion, w.snapOK = snap, v, snapOK
	if !w.mapTried {
		// After a read, so this connection holds the -shm file open.
		w.mapTried = true
		w.hdr = w.mapHeader()
	}
	return v, nil
}

// unchanged returns the last data_version read when the WAL-index header
// shows that nothing was committed since; same is false when it cannot
// tell (no mapping, no reading to compare, a fault) or something may have
// been. The caller holds mu.
func (w *versionWatch) unchanged() (v int64, same bool) {
	if w.hdr == nil || !w.snapOK {
		return 0, false
	}
	now, ok := w.hdr.read()
	if !ok {
		w.unmap()
		return 0, false
	}
	return w.snapVersion, now == w.snap
}

// mapHeader maps the database's -shm file when the database is in WAL
// mode; nil when it is not or cannot be (checks then always ask SQLite).
func (w *versionWatch) mapHeader() *walHeader {
	mode, err := w.pragmaText(`PRAGMA journal_mode`, 0)
	if err != nil || mode != "wal" {
		return nil
	}
	// database_list: seq, name, file — main is the first row.
	file, err := w.pragmaText(`PRAGMA database_list`, 2)
	if err != nil || file == "" {
		return nil
	}
	h, err := mapWALHeader(file + "-shm")
	if err != nil {
		return nil
	}
	return h
}

// pragmaText runs a pragma on the watch connection and returns column col
// of its first row as text.
func (w *versionWatch) pragmaText(query string, col int) (string, error) {
	st, err := w.conn.(driver.ConnPrepareContext).PrepareContext(context.Background(), query)
	if err != nil {
		return "", err
	}
	defer st.Close()
	rows, err := st.(driver.StmtQueryContext).QueryContext(context.Background(), nil)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	if col >= len(dest) {
		return "", fmt.Errorf("%s: %d columns", query, len(dest))
	}
	if err := rows.Next(dest); err != nil {
		return "", err
	}
	switch v := dest[col].(type) {
	case string:
		return v, nil
	case []byte:
		return string(v), nil
	}
	return "", fmt.Errorf("%s: column %d of type %T", query, col, dest[col])
}

func (w *versionWatch) unmap() {
	w.hdr.close()
	w.hdr, w.snapOK = nil, false
}

func (w *versionWatch) connect() error {
	conn, err := w.open()
	if err != nil {
		return fmt.Errorf("sqlstore: open data_version connection: %w", err)
	}
	pc, ok := conn.(driver.ConnPrepareContext)
	if !ok {
		conn.Close()
		return errors.New("sqlstore: SQLite driver cannot prepare with a context")
	}
	st, err := pc.PrepareContext(context.Background(), `PRAGMA data_version`)
	if err != nil {
		conn.Close()
		return fmt.Errorf("sqlstore: prepare data_version: %w", err)
	}
	sq, ok := st.(driver.StmtQueryContext)
	if !ok {
		st.Close()
		conn.Close()
		return errors.New("sqlstore: SQLite driver cannot query with a context")
	}
	w.conn, w.stmt, w.dest = conn, sq, make([]driver.Value, 1)
	return nil
}

// read runs the prepared statement once. The background context keeps
// the driver from starting a goroutine to watch for cancellation.
func (w *versionWatch) read() (int64, error) {
	rows, err := w.stmt.QueryContext(context.Background(), nil)
	if err != nil {
		return 0, err
	}
	err = rows.Next(w.dest)
	// Close resets the statement, which ends its read transaction.
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err == io.EOF {
		return 0, errors.New("no row")
	}
	if err != nil {
		return 0, err
	}
	v, ok := w.dest[0].(int64)
	if !ok {
		return 0, fmt.Errorf("value of type %T", w.dest[0])
	}
	return v, nil
}

func (w *versionWatch) drop() error {
	if w.conn == nil {
		return nil
	}
	var err error
	if st, ok := w.stmt.(driver.Stmt); ok {
		err = st.Close()
	}
	// Unmapped before the connection closes: the mapping is safe only
	// while the connection keeps the -shm file open.
	w.unmap()
	w.mapTried = false
	err = errors.Join(err, w.conn.Close())
	w.conn, w.stmt, w.dest = nil, nil, nil
	return err
}
