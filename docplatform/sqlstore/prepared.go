package sqlstore

import (
	"context"
	"database/sql"
	"sync"
)

// maxPrepared bounds the statements a Store keeps prepared per pool. The
// request path uses a handful of fixed texts; a statement whose text
// depends on its input (an IN list as long as a caller's groups) would
// otherwise add one per length. Past the bound, statements run unprepared.
const maxPrepared = 64

// prepared keeps statements prepared on one pool. On SQLite
// (modernc.org/sqlite) a plain db.QueryContext parses and plans its text
// on every call — about 30 µs for the identity query, more than running
// it — while a *sql.Stmt is prepared once on each connection that runs it
// and then only reset and re-bound. PostgreSQL needs none of this: pgx's
// default exec mode (QueryExecModeCacheStatement) already prepares each
// text once per connection and keeps up to 512 of them.
type prepared struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

func newPrepared(db *sql.DB) *prepared {
	return &prepared{db: db, m: make(map[string]*sql.Stmt)}
}

// stmt returns the prepared statement for query, preparing it on first
// use; nil when the bound is reached or preparing fails (the caller then
// runs the text as before, and the failure, if real, surfaces there).
func (p *prepared) stmt(ctx context.Context, query string) *sql.Stmt {
	p.mu.RLock()
	st := p.m[query]
	p.mu.RUnlock()
	if st != nil {
		return st
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if st := p.m[query]; st != nil {
		return st
	}
	if len(p.m) >= maxPrepared {
		return nil
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	p.m[query] = st
	return st
}

func (p *prepared) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for q, st := range p.m {
		st.Close()
		delete(p.m, q)
	}
}

// uncancellable drops a request context's cancellation for a read on
// SQLite. With a context that can be cancelled, every statement starts two
// goroutines that wait for it (database/sql's Rows.awaitDone and the
// driver's interruptOnDone): about 4 % of an API-key request's CPU under
// load, for two statements. The reads through query and queryRow are
// bounded, in process, and never wait on the network, so a client that
// hangs up costs at most their few microseconds. A context with a
// deadline keeps it: someone asked for the bound.
func uncancellable(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); ok || ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// expired is the error of a context whose deadline has passed, and nil
// for any other, cancelled or not: what uncancellable lets through to a
// read, for answers (the access cache's) that need no read.
func expired(ctx context.Context) error {
	if _, ok := ctx.Deadline(); ok {
		return ctx.Err()
	}
	return nil
}

// query runs a read through the read pool, prepared on SQLite.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s.rp != nil {
		ctx = uncancellable(ctx)
		if st := s.rp.stmt(ctx, query); st != nil {
			return st.QueryContext(ctx, args...)
		}
	}
	return s.r.QueryContext(ctx, query, args...)
}

// queryRow is query for one row.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if s.rp != nil {
		ctx = uncancellable(ctx)
		if st := s.rp.stmt(ctx, query); st != nil {
			return st.QueryRowContext(ctx, args...)
		}
	}
	return s.r.QueryRowContext(ctx, query, args...)
}
