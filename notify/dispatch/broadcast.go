package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/queue"
)

// A broadcast run is three kinds of queue job, named by the notification
// and the run so that a fresh dispatch's jobs never mix with an older
// one's:
//
//	plan/{notification}/{run}           choose the candidates, write the chunks
//	chunk/{notification}/{run}/{index}  send one chunk
//	finish/{notification}/{run}         final state, callback
func planJob(nid notify.ID, run string) string   { return "plan/" + nid.Hex() + "/" + run }
func finishJob(nid notify.ID, run string) string { return "finish/" + nid.Hex() + "/" + run }
func chunkJob(nid notify.ID, run string, index int) string {
	return "chunk/" + nid.Hex() + "/" + run + "/" + strconv.Itoa(index)
}

type jobRef struct {
	kind  string
	nid   notify.ID
	run   string
	index int
}

func parseJob(id string) (jobRef, error) {
	parts := strings.Split(id, "/")
	if len(parts) < 3 {
		return jobRef{}, fmt.Errorf("dispatch: job %q: unknown form", id)
	}
	nid, err := notify.ParseID(parts[1])
	if err != nil {
		return jobRef{}, fmt.Errorf("dispatch: job %q: %w", id, err)
	}
	j := jobRef{kind: parts[0], nid: nid, run: parts[2]}
	switch {
	case (j.kind == "plan" || j.kind == "finish") && len(parts) == 3:
	case j.kind == "chunk" && len(parts) == 4:
		if j.index, err = strconv.Atoi(parts[3]); err != nil || j.index < 0 {
			return jobRef{}, fmt.Errorf("dispatch: job %q: bad chunk index", id)
		}
	default:
		return jobRef{}, fmt.Errorf("dispatch: job %q: unknown form", id)
	}
	return j, nil
}

func newRun() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startBroadcast records the broadcast's header — unless it has one: then
// this is a resumption of that run — sets state sending and queues the
// plan. It returns the run.
func (d *Dispatcher) startBroadcast(ctx context.Context, n *notify.Notification, host string, user *notify.UserProfile) (string, error) {
	hdr := mongostore.Broadcast{NotificationID: n.ID, Run: newRun(), HTTPHost: host, User: profileFields(user), Started: d.o.Now()}
	var cur mongostore.Broadcast
	err := d.retry(ctx, func(ctx context.Context) (err error) {
		cur, _, err = d.o.Store.Broadcasts.StartBroadcast(ctx, hdr)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("dispatch: start broadcast: %w", err)
	}
	if err := d.o.Store.Broadcasts.SetBroadcastCounts(ctx, n.ID, nil); err != nil {
		return "", fmt.Errorf("dispatch: start broadcast: %w", err)
	}
	if err := d.setState(ctx, n.ID, notify.StateSending, profileFields(user)); err != nil {
		return "", err
	}
	if err := d.co.clearFinished(ctx, n.ID, cur.Run); err != nil {
		return "", fmt.Errorf("%w: %v", ErrQueueUnavailable, err)
	}
	if _, err := d.q.EnqueueFront(ctx, planJob(n.ID, cur.Run)); err != nil {
		return "", fmt.Errorf("%w: %v", ErrQueueUnavailable, err)
	}
	return cur.Run, nil
}

// handle runs one queue job. Jobs of a run that is no longer the
// notification's (sent afresh, or deleted) are dropped.
func (d *Dispatcher) handle(ctx context.Context, j queue.Job) error {
	ref, err := parseJob(j.ID)
	if err != nil {
		d.log.Error("notify: dropping a job of unknown form", "job", j.ID, "err", err)
		return nil
	}
	var hdr mongostore.Broadcast
	err = d.retry(ctx, func(ctx context.Context) (err error) {
		hdr, err = d.o.Store.Broadcasts.Broadcast(ctx, ref.nid)
		return err
	})
	if errors.Is(err, notify.ErrNotFound) || (err == nil && hdr.Run != ref.run) {
		return nil
	}
	if err != nil {
		return err
	}
	n, err := d.o.Store.Notifications.FindByID(ctx, ref.nid.Hex())
	if errors.Is(err, notify.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	switch ref.kind {
	case "plan":
		return d.plan(ctx, n, hdr, j)
	case "chunk":
		return d.runChunk(ctx, n, hdr, ref.index, j)
	default:
		return d.finish(ctx, n, hdr)
	}
}

// planAttempts is how often planning is tried before the broadcast ends in
// state error (planning sends nothing, so it is retried whatever
// guaranteed processing says).
const planAttempts = 8

// plan chooses the candidates and writes the chunks (once per run),
// queueing each chunk as soon as it is written so that sending goes on
// while the rest is planned; then it queues every chunk not yet done, or
// the finish step when none is left. Running it again after it completed
// only queues what is missing, which is how a stale broadcast resumes; a
// plan whose node died is continued after the chunks it wrote.
func (d *Dispatcher) plan(ctx context.Context, n *notify.Notification, hdr mongostore.Broadcast, j queue.Job) error {
	d.touch(ctx, n.ID)
	if !hdr.Planned {
		if j.Attempt > planAttempts {
			d.log.Error("notify: broadcast could not be planned; giving up", "notification", n.ID.Hex(), "attempts", j.Attempt-1)
			if err := d.setState(ctx, n.ID, notify.StateError, nil); err != nil {
				return err
			}
			return d.enqueue(ctx, true, finishJob(n.ID, hdr.Run))
		}
		b := d.o.Store.Broadcasts
		p := mongostore.Plan{ServiceName: n.ServiceName, Channel: n.Channel, Size: d.o.ChunkSize, Pick: inlinePick(n.Dispatch),
			Written: func(i, candidates int) error {
				d.co.chunkPlanned(ctx, n.ID, hdr.Run, i, candidates)
				if err := d.enqueue(ctx, false, chunkJob(n.ID, hdr.Run, i)); err != nil {
					return err
				}
				hook(ctx, "plan:chunk-written:"+strconv.Itoa(i))
				return nil
			}}
		planned, from, err := b.PlannedCandidates(ctx, n.ID)
		if err != nil {
			return fmt.Errorf("dispatch: plan: %w", err)
		}
		if from > 0 {
			d.log.Info("notify: continuing an interrupted plan", "notification", n.ID.Hex(), "chunks", from)
			p.From = from
			inner := p.Pick
			p.Pick = func(id string) (bool, bool) {
				switch {
				case planned[id]:
					return false, false
				case inner == nil:
					return true, true
				}
				return inner(id)
			}
			var jobs []string
			for i := range from {
				jobs = append(jobs, chunkJob(n.ID, hdr.Run, i))
			}
			if err := d.enqueue(ctx, false, jobs...); err != nil {
				return err
			}
		}
		chunks, candidates, err := b.PlanChunks(ctx, n.ID, p)
		if err != nil {
			return fmt.Errorf("dispatch: plan: %w", err)
		}
		candidates += int64(len(planned))
		if err := b.SetBroadcastPlanned(ctx, n.ID, hdr.Run, chunks, candidates); err != nil {
			return fmt.Errorf("dispatch: plan: %w", err)
		}
		hdr.Chunks = chunks
		d.log.Info("notify: broadcast planned", "notification", n.ID.Hex(), "candidates", candidates, "chunks", chunks)
	}
	var all bool
	if err := d.untilLease(ctx, func(ctx context.Context) (err error) {
		all, err = d.co.planned(ctx, n.ID, hdr.Run, hdr.Chunks)
		return err
	}); err != nil {
		return err
	}
	if all {
		return d.enqueue(ctx, true, finishJob(n.ID, hdr.Run))
	}
	var done map[int]bool
	if err := d.untilLease(ctx, func(ctx context.Context) (err error) {
		done, err = d.co.doneChunks(ctx, n.ID, hdr.Run)
		return err
	}); err != nil {
		return err
	}
	var jobs []string
	for i := range hdr.Chunks {
		if !done[i] {
			jobs = append(jobs, chunkJob(n.ID, hdr.Run, i))
		}
	}
	return d.enqueue(ctx, false, jobs...)
}

// enqueue queues jobs (at the front: short jobs others wait for), trying
// for up to a lease: queueing a known job again is harmless.
func (d *Dispatcher) enqueue(ctx context.Context, front bool, jobs ...string) error {
	return d.untilLease(ctx, func(ctx context.Context) (err error) {
		if front {
			_, err = d.q.EnqueueFront(ctx, jobs...)
		} else {
			_, err = d.q.Enqueue(ctx, jobs...)
		}
		return err
	})
}

// inlinePick is how a notification the original left half-sent keeps
// what it holds inline: its candidate list (when it has one) and the
// subscribers it recorded an outcome for, who are not sent to again.
func inlinePick(inline *notify.Dispatch) func(string) (bool, bool) {
	if inline == nil || len(inline.Candidates)+len(inline.Successful)+len(inline.Failed)+len(inline.Skipped) == 0 {
		return nil
	}
	cands := make(map[string]bool, len(inline.Candidates))
	for _, id := range inline.Candidates {
		cands[id] = true
	}
	done := make(map[string]bool, len(inline.Successful)+len(inline.Failed)+len(inline.Skipped))
	for _, id := range inline.Successful {
		done[id] = true
	}
	for _, f := range inline.Failed {
		done[f.SubscriptionID] = true
	}
	for _, id := range inline.Skipped {
		done[id] = true
	}
	return func(id string) (bool, bool) {
		return len(cands) == 0 || cands[id], !done[id]
	}
}

// touch refreshes the notification's updated date, at most once a minute
// across the cluster, so that the stale-broadcast cron job leaves a
// broadcast that is progressing alone (the original's worker heartbeat).
func (d *Dispatcher) touch(ctx context.Context, nid notify.ID) {
	if !d.co.touchDue(ctx, nid, time.Minute) {
		return
	}
	if err := d.o.Store.Notifications.UpdateByID(ctx, nid.Hex(), doc("$set", doc("updated", d.o.Now()))); err != nil && !errors.Is(err, notify.ErrNotFound) {
		d.log.Warn("notify: broadcast heartbeat not written", "notification", nid.Hex(), "err", err)
	}
	if err := d.o.Store.Broadcasts.TouchBroadcast(ctx, nid); err != nil {
		d.log.Warn("notify: broadcast heartbeat not written", "notification", nid.Hex(), "err", err)
	}
}

// chunkFinished records a chunk as done and queues the finish step when
// it was the last. A chunk finished again (a job run twice) may queue the
// finish step again; finishing twice is harmless.
func (d *Dispatcher) chunkFinished(ctx context.Context, hdr mongostore.Broadcast, index int) error {
	var all bool
	if err := d.untilLease(ctx, func(ctx context.Context) (err error) {
		all, err = d.co.chunkDone(ctx, hdr.NotificationID, hdr.Run, index)
		return err
	}); err != nil {
		return err
	}
	if all {
		return d.enqueue(ctx, true, finishJob(hdr.NotificationID, hdr.Run))
	}
	return nil
}

// finish sets the final state — sent, unless the state was set to error
// meanwhile — drops the chunks' snapshots, posts the callback and tells
// the waiting requests.
func (d *Dispatcher) finish(ctx context.Context, n *notify.Notification, hdr mongostore.Broadcast) error {
	hook(ctx, "finish")
	state := notify.StateSent
	if n.State == notify.StateError {
		state = notify.StateError
	}
	if err := d.setState(ctx, n.ID, state, hdr.User); err != nil && !errors.Is(err, notify.ErrNotFound) {
		return fmt.Errorf("dispatch: final state: %w", err)
	}
	if err := d.o.Store.Broadcasts.DeleteBroadcastSnapshots(ctx, n.ID, hdr.Chunks); err != nil {
		d.log.Warn("notify: broadcast snapshots not deleted", "notification", n.ID.Hex(), "err", err)
	}
	d.keepFinalCounts(ctx, hdr)
	if url, ok := n.AsyncBroadcastPushNotification.(string); ok && url != "" {
		d.callback(ctx, n.ID, url)
	}
	if err := d.untilLease(ctx, func(ctx context.Context) error { return d.co.setFinished(ctx, n.ID, hdr.Run) }); err != nil {
		return err
	}
	d.signal(n.ID, hdr.Run)
	d.log.Info("notify: broadcast finished", "notification", n.ID.Hex(), "state", state)
	return nil
}

func runKey(nid notify.ID, run string) string { return nid.Hex() + "/" + run }

// signal wakes the requests of this process waiting for a run.
func (d *Dispatcher) signal(nid notify.ID, run string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ch := range d.waiters[runKey(nid, run)] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// waitFinished waits for a run's finish step, done by any node: this
// process's signal, or the flag in the queue backend (looked at four times
// a second).
func (d *Dispatcher) waitFinished(ctx context.Context, nid notify.ID, run string) error {
	key := runKey(nid, run)
	ch := make(chan struct{}, 1)
	d.mu.Lock()
	d.waiters[key] = append(d.waiters[key], ch)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		list := d.waiters[key]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(d.waiters, key)
		} else {
			d.waiters[key] = list
		}
	}()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		done, err := d.co.finished(ctx, nid, run)
		if err == nil && done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		case <-t.C:
		}
	}
}

func profileFields(u *notify.UserProfile) notify.Fields {
	if u == nil {
		return nil
	}
	return u.Fields()
}
