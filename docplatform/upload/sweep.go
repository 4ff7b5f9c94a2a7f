package upload

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/filestore"
)

// Abandoned is how long an upload may sit in one state before a sweeper
// takes it over: far longer than any request works on one (the body has
// the server's 60 s read timeout, the completion a minute).
const Abandoned = 15 * time.Minute

// Sweep cadence of Run: the rows (a query on an index, normally empty)
// often; the store's listings, which read every key, at start and then
// seldom.
const (
	SweepEvery = 5 * time.Minute
	ScanEvery  = 6 * time.Hour
)

// batch is how many rows or keys a sweep handles per query.
const batch = 500

// Swept counts what a sweep did.
type Swept struct {
	Committed int // stored uploads finished and committed
	Discarded int // stored uploads that could not be finished, and discarding ones, removed
	Staged    int // staged bytes no row named, removed
	Orphans   int // readable bytes no row named, removed
}

func (s Swept) any() bool { return s != Swept{} }

// Sweep finishes or removes uploads whose state has not changed since
// before (see the package doc for what each state's leftovers become),
// and with scan also lists the store to remove staged bytes begun before
// then and readable bytes that no row names. Several processes may sweep
// at once. It stops at the first failure of the database or the store;
// what it did not reach, the next sweep does.
func (m *Manager) Sweep(ctx context.Context, before time.Time, scan bool) (Swept, error) {
	var n Swept
	for range 1000 { // pages of batch rows; a sweep ends even if rows keep coming
		recs, err := m.rows.StaleUploads(ctx, before, batch)
		if err != nil {
			return n, err
		}
		for _, rec := range recs {
			// One sweeper takes an upload over; others that listed it too
			// find it claimed and leave it (two finishing one upload at
			// once could see its object neither staged nor complete while
			// the other's completion runs, and discard it).
			claimed, err := m.rows.ClaimUpload(ctx, rec.Document.StorageKey, rec.Since)
			if err != nil {
				return n, err
			}
			if !claimed {
				continue
			}
			if err := m.takeOver(ctx, rec, &n); err != nil {
				return n, err
			}
		}
		if len(recs) < batch {
			break
		}
	}
	if !scan {
		return n, nil
	}
	var staged []string
	if err := m.files.Staged(ctx, before, func(key string) error { staged = append(staged, key); return nil }); err != nil {
		return n, err
	}
	for len(staged) > 0 {
		k := staged[:min(batch, len(staged))]
		staged = staged[len(k):]
		if err := m.removeUnknown(ctx, k, &n.Staged); err != nil {
			return n, err
		}
	}
	err := m.files.Stored(ctx, batch, func(keys []string) error { return m.removeUnknown(ctx, keys, &n.Orphans) })
	return n, err
}

// takeOver moves an upload some process left in stored or discarding on
// to committed or gone.
func (m *Manager) takeOver(ctx context.Context, rec docplatform.UploadRecord, n *Swept) error {
	u := &Upload{m: m, state: Stored, doc: rec.Document}
	if rec.Discarding {
		u.state = Discarding
	} else {
		err := u.to(ctx, Completed)
		if err == nil {
			err = u.to(ctx, Committed)
		}
		switch {
		case err == nil:
			n.Committed++
			return nil
		case errors.Is(err, ErrDiscarded):
			return nil // another process is discarding it
		case !errors.Is(err, filestore.ErrNotFound) && !errors.Is(err, docplatform.ErrNotFound):
			return err // an outage: try again next time
		}
		// The bytes are not whole, or the group is gone: discard it.
		if err := u.to(ctx, Discarding); err != nil {
			return err
		}
		if u.state == Committed {
			n.Committed++
			return nil
		}
	}
	if err := u.to(ctx, Gone); err != nil {
		return err
	}
	n.Discarded++
	return nil
}

// removeUnknown discards the bytes of those keys, listed from the store
// just before, that no row names, and counts them in *count.
func (m *Manager) removeUnknown(ctx context.Context, keys []string, count *int) error {
	known, err := m.rows.KnownKeys(ctx, keys)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if known[k] {
			continue
		}
		if err := m.files.Discard(ctx, k); err != nil {
			return err
		}
		*count++
	}
	return nil
}

// Run sweeps until ctx ends: at once and then every SweepEvery, with a
// scan of the store at once and then every ScanEvery, each time taking
// over what has not moved for Abandoned. Failures are logged and tried
// again at the next turn.
func (m *Manager) Run(ctx context.Context) {
	var lastScan time.Time
	for {
		scan := time.Since(lastScan) >= ScanEvery
		n, err := m.Sweep(ctx, time.Now().Add(-Abandoned), scan)
		if scan && err == nil {
			lastScan = time.Now()
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			m.log.WarnContext(ctx, "upload sweep stopped; trying again later", slog.String("error", err.Error()))
		case n.any():
			m.log.InfoContext(ctx, "upload sweep", slog.Int("committed", n.Committed), slog.Int("discarded", n.Discarded),
				slog.Int("staged", n.Staged), slog.Int("orphans", n.Orphans))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(SweepEvery):
		}
	}
}
