package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// A running broadcast's progress is counted in the queue backend, so that
// reading it costs one hash read however large the broadcast is (the
// embedded store decodes a whole result document, every id in it, even to
// return one field). The hash {prefix}{notification hex}:{run}:progress
// holds, per chunk:
//
//	c{index}         its candidates, set when the plan writes it
//	p{index}/{part}  "successful failed skipped" of each batch of outcomes
//	                 stored (a part number is used once, so setting it
//	                 again is harmless)
//	d{index}         the chunk's final counts, each subscriber once, which
//	                 replace its parts when it completes
//
// Every write sets a field, never adds, so a job run twice counts once. A
// finished broadcast keeps its counts in its header (the store) and the
// hash goes. Progress falls back to the store when the hash is gone or
// short of a chunk (an embedded queue that restarted).

func (c coordinator) progressKey(nid notify.ID, run string) string {
	return c.key(nid, run, "progress")
}

// The progress writes are best effort: a failure is logged by the caller's
// next store write or shows as a fallback to the store's counts.
func (c coordinator) setProgress(ctx context.Context, nid notify.ID, run string, del []string, kv ...any) {
	k := c.progressKey(nid, run)
	_, _ = c.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, kv...)
		if len(del) > 0 {
			p.HDel(ctx, k, del...)
		}
		p.PExpire(ctx, k, coordTTL)
		return nil
	})
}

func (c coordinator) chunkPlanned(ctx context.Context, nid notify.ID, run string, index, candidates int) {
	c.setProgress(ctx, nid, run, nil, "c"+strconv.Itoa(index), candidates)
}

func (c coordinator) partRecorded(ctx context.Context, nid notify.ID, run string, index, part int, results []notify.DispatchResult) {
	var s, f, k int64
	for _, r := range results {
		switch r.Outcome {
		case notify.DispatchSuccessful:
			s++
		case notify.DispatchFailed:
			f++
		case notify.DispatchSkipped:
			k++
		}
	}
	c.setProgress(ctx, nid, run, nil, fmt.Sprintf("p%d/%d", index, part), fmt.Sprintf("%d %d %d", s, f, k))
}

// chunkCompleted replaces a chunk's parts (numbered below parts) by its
// final counts.
func (c coordinator) chunkCompleted(ctx context.Context, nid notify.ID, run string, index, parts int, n notify.DispatchCounts) {
	del := make([]string, parts)
	for i := range parts {
		del[i] = fmt.Sprintf("p%d/%d", index, i)
	}
	c.setProgress(ctx, nid, run, del, "c"+strconv.Itoa(index), n.Candidates, "d"+strconv.Itoa(index), fmt.Sprintf("%d %d %d", n.Successful, n.Failed, n.Skipped))
}

// progress sums the hash: the counts, how many chunks it knows the
// candidates of, and how many it has the final counts of. ok is false
// when there is no hash.
func (c coordinator) progress(ctx context.Context, nid notify.ID, run string) (n notify.DispatchCounts, chunks, complete int, ok bool, err error) {
	m, err := c.c.HGetAll(ctx, c.progressKey(nid, run)).Result()
	if err != nil || len(m) == 0 {
		return n, 0, 0, false, err
	}
	done := map[string]bool{}
	for k := range m {
		if strings.HasPrefix(k, "d") {
			done[k[1:]] = true
		}
	}
	add := func(v string) {
		var s, f, k int64
		if _, err := fmt.Sscanf(v, "%d %d %d", &s, &f, &k); err == nil {
			n.Successful += s
			n.Failed += f
			n.Skipped += k
		}
	}
	for k, v := range m {
		switch {
		case strings.HasPrefix(k, "c"):
			x, _ := strconv.ParseInt(v, 10, 64)
			n.Candidates += x
			chunks++
		case strings.HasPrefix(k, "d"):
			add(v)
		case strings.HasPrefix(k, "p"):
			if index, _, _ := strings.Cut(k[1:], "/"); !done[index] {
				add(v)
			}
		}
	}
	n.Pending = max(0, n.Candidates-n.Successful-n.Failed-n.Skipped)
	return n, chunks, len(done), true, nil
}

// Progress returns how far a broadcast is: its candidates, its recorded
// outcomes and the candidates left, with Found false for a notification
// never broadcast. A finished broadcast's counts come from its header; a
// running one's from the queue backend (one hash read), or from the
// store's results when the backend lost them.
func (d *Dispatcher) Progress(ctx context.Context, nid notify.ID) (mongostore.Progress, error) {
	b := d.o.Store.Broadcasts
	hdr, err := b.Broadcast(ctx, nid)
	if errors.Is(err, notify.ErrNotFound) {
		return mongostore.Progress{}, nil
	}
	if err != nil {
		return mongostore.Progress{}, err
	}
	p := mongostore.Progress{Found: true, Planned: hdr.Planned, Started: hdr.Started}
	if hdr.Counts != nil {
		p.Counts = *hdr.Counts
		return p, nil
	}
	n, chunks, _, ok, err := d.co.progress(ctx, nid, hdr.Run)
	if err == nil && ok && (!hdr.Planned || chunks >= hdr.Chunks) {
		p.Counts = n
		return p, nil
	}
	return b.BroadcastProgress(ctx, nid)
}

// keepFinalCounts stores a finished broadcast's counts in its header, from
// the queue backend when it has every chunk's final counts, else from the
// results (a write of the progress hash is best effort: one that met a
// Redis restart is missing), and drops the progress hash.
func (d *Dispatcher) keepFinalCounts(ctx context.Context, hdr mongostore.Broadcast) {
	n, chunks, complete, ok, err := d.co.progress(ctx, hdr.NotificationID, hdr.Run)
	if err != nil || !ok || chunks < hdr.Chunks || complete < hdr.Chunks {
		p, perr := d.o.Store.Broadcasts.BroadcastProgress(ctx, hdr.NotificationID)
		if perr != nil {
			d.log.Warn("notify: broadcast counts not kept", "notification", hdr.NotificationID.Hex(), "err", perr)
			return
		}
		n = p.Counts
	}
	if err := d.o.Store.Broadcasts.SetBroadcastCounts(ctx, hdr.NotificationID, &n); err != nil {
		d.log.Warn("notify: broadcast counts not kept", "notification", hdr.NotificationID.Hex(), "err", err)
		return
	}
	_ = d.co.c.Del(ctx, d.co.progressKey(hdr.NotificationID, hdr.Run)).Err()
}
