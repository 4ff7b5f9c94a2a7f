package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/jmesfilter"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/queue"
)

// Errors recorded for subscribers that were not sent to.
var (
	// errDeliveryUnknown: the node sending to this subscriber stopped
	// between starting the send and recording its outcome. The mail may
	// have gone; sending it again could deliver it twice, so it is not.
	errDeliveryUnknown = errors.New("delivery unknown: the node sending this message stopped before recording whether it was accepted; not sent again, to avoid a duplicate")
)

// runChunk sends one chunk of a broadcast (see the package doc): the
// subscribers of its snapshot with no recorded outcome, except those
// whose send began in an earlier attempt (recorded as failed, delivery
// unknown). After too many attempts — one without guaranteed processing —
// the rest are recorded as failed without sending. Outcomes are written in
// batches as they come; the chunk is then marked complete and, when it is
// the last, the finish step is queued.
func (d *Dispatcher) runChunk(ctx context.Context, n *notify.Notification, hdr mongostore.Broadcast, index int, j queue.Job) error {
	d.touch(ctx, n.ID)
	b := d.o.Store.Broadcasts
	var prior *mongostore.ChunkResults
	err := d.retry(ctx, func(ctx context.Context) (err error) {
		prior, err = b.BroadcastResults(ctx, n.ID, index)
		return err
	})
	if errors.Is(err, notify.ErrNotFound) {
		return nil // planned again since: not this run's chunk
	}
	if err != nil {
		return err
	}
	if prior.Complete {
		return d.chunkFinished(ctx, hdr, index)
	}
	recorded := prior.Outcomes()
	// Marks are read on every attempt: a job released by a node that shut
	// down counts no attempt, but its cut-short sends are just as unknown.
	var began map[string]*notify.DispatchResult
	if d.o.Guaranteed {
		if began, err = d.co.sending(ctx, n.ID, hdr.Run, index); err != nil {
			return err
		}
	}
	rec := &recorder{d: d, nid: n.ID, run: hdr.Run, index: index, part: prior.Parts, started: hdr.Started,
		stampBounces: d.o.Bounce && n.Channel == notify.ChannelEmail}
	fail := func(id, userChannelID string, err error) {
		rec.results = append(rec.results, notify.DispatchResult{SubscriptionID: id, UserChannelID: userChannelID, Outcome: notify.DispatchFailed, Error: errorValue(err)})
	}
	var todo []*notify.Subscription
	if j.Attempt > d.o.MaxAttempts {
		// Give up without reading the snapshot (it may be what fails):
		// the candidates are in the results.
		cause := errors.New("not sent: its chunk failed " + strconv.Itoa(j.Attempt-1) + " times")
		if !d.o.Guaranteed {
			cause = errors.New("not sent: its chunk failed (guaranteed processing is off)")
		}
		d.log.Error("notify: giving up a broadcast chunk", "notification", n.ID.Hex(), "chunk", index, "attempts", j.Attempt-1)
		for _, id := range prior.Candidates {
			r, marked := began[id]
			switch {
			case recorded[id] != "":
			case r != nil:
				rec.results = append(rec.results, *r)
			case marked:
				fail(id, "", errDeliveryUnknown)
			default:
				fail(id, "", cause)
			}
		}
	} else {
		var subs []*notify.Subscription
		err = d.retry(ctx, func(ctx context.Context) (err error) {
			subs, err = b.BroadcastChunk(ctx, n.ID, index)
			return err
		})
		if err != nil {
			return fmt.Errorf("dispatch: chunk %d: %w", index, err)
		}
		for _, sub := range subs {
			id := sub.ID.Hex()
			r, marked := began[id]
			switch {
			case recorded[id] != "":
			case r != nil:
				// sent (or failed) by the node that died, before it
				// could store the outcome
				rec.results = append(rec.results, *r)
			case marked:
				fail(id, sub.UserChannelID, errDeliveryUnknown)
			default:
				todo = append(todo, sub)
			}
		}
	}
	if len(todo) > 0 {
		if len(recorded)+len(rec.results) > 0 {
			d.log.Info("notify: resuming a broadcast chunk", "notification", n.ID.Hex(), "chunk", index, "attempt", j.Attempt, "left", len(todo), "unknown", len(rec.results))
		}
		p := newPush(n, hdr.HTTPHost)
		p.started = hdr.Started
		if err := d.send(ctx, p, hdr.Run, index, todo, rec); err != nil {
			return err
		}
	}
	if err := rec.flush(ctx); err != nil {
		return err
	}
	final := *prior
	for _, r := range rec.all {
		switch r.Outcome {
		case notify.DispatchSuccessful:
			final.Successful = append(final.Successful, r.SubscriptionID)
		case notify.DispatchFailed:
			final.Failed = append(final.Failed, notify.DispatchFailure{SubscriptionID: r.SubscriptionID, UserChannelID: r.UserChannelID, Error: r.Error})
		case notify.DispatchSkipped:
			final.Skipped = append(final.Skipped, r.SubscriptionID)
		}
	}
	final.Parts = rec.part
	if err := d.retry(ctx, func(ctx context.Context) error { return b.CompleteChunk(ctx, n.ID, index, &final) }); err != nil {
		return err
	}
	d.co.chunkCompleted(ctx, n.ID, hdr.Run, index, rec.part, mongostore.CountChunk(&final))
	if err := d.co.forgetSending(ctx, n.ID, hdr.Run, index); err != nil {
		d.log.Warn("notify: marks of a finished chunk not dropped", "notification", n.ID.Hex(), "chunk", index, "err", err)
	}
	return d.chunkFinished(ctx, hdr, index)
}

// send runs the subscribers of a chunk through a pool of
// Options.Concurrency workers and the recorder. It stops at the first
// failure of the pipeline itself (a mark or a result that cannot be
// written), or when ctx ends; what was sent by then is recorded.
func (d *Dispatcher) send(ctx context.Context, p *push, run string, index int, subs []*notify.Subscription, rec *recorder) error {
	sendCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	in := make(chan *notify.Subscription)
	out := make(chan notify.DispatchResult, d.o.Concurrency)
	var outcomes *outcomeWriter
	if d.o.Guaranteed {
		outcomes = d.co.keepOutcomes(context.WithoutCancel(ctx), p.n.ID, run, index, 2*d.o.Concurrency)
		defer func() {
			if err := outcomes.close(); err != nil {
				d.log.Warn("notify: outcomes not kept with their marks; a crash before they are stored would record them as unknown", "err", err)
			}
		}()
	}
	var wg sync.WaitGroup
	for range min(d.o.Concurrency, len(subs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sub := range in {
				r, keep, err := d.deliver(sendCtx, p, run, index, sub, outcomes)
				if err != nil {
					stop(err)
					continue
				}
				// A send cut short by the stop is not the subscriber's
				// failure: its mark stays, and a later attempt records it.
				if keep && !(r.Outcome == notify.DispatchFailed && sendCtx.Err() != nil) {
					out <- r
				}
			}
		}()
	}
	go func() {
		defer close(in)
		for _, sub := range subs {
			select {
			case in <- sub:
			case <-sendCtx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()

	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// Results are written under a context that outlives a lost lease or a
	// shutdown, so that every send that happened is recorded.
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	for {
		select {
		case r, ok := <-out:
			if !ok {
				return context.Cause(sendCtx)
			}
			if err := rec.add(writeCtx, r); err != nil {
				stop(err)
				for range out {
				}
				return err
			}
		case <-tick.C:
			if err := rec.flush(writeCtx); err != nil {
				stop(err)
				for range out {
				}
				return err
			}
		}
	}
}

func (d *Dispatcher) recordSkipped() bool { return d.o.Guaranteed && d.o.LogSkipped }

func (d *Dispatcher) recordSuccess() bool { return d.o.Guaranteed || d.o.Bounce }

// deliver handles one subscriber: filters, merge, send. With guaranteed
// processing the send is marked in the queue backend at the moment it
// begins (after any wait for the throttle or a connection) and its outcome
// kept with the mark, so that a node taking the chunk over after a crash
// knows whose mail may have gone. keep says whether the outcome is to be
// recorded; an error is the pipeline's (the mark could not be written),
// and nothing was sent.
func (d *Dispatcher) deliver(ctx context.Context, p *push, run string, index int, sub *notify.Subscription, outcomes *outcomeWriter) (r notify.DispatchResult, keep bool, err error) {
	r = notify.DispatchResult{SubscriptionID: sub.ID.Hex(), UserChannelID: sub.UserChannelID}
	if !d.wanted(ctx, p, sub) {
		r.Outcome = notify.DispatchSkipped
		return r, d.recordSkipped(), nil
	}
	sendCtx := ctx
	var markErr error
	if d.o.Guaranteed {
		sendCtx = notify.OnSendStart(ctx, func() error {
			markErr = d.co.markSending(ctx, p.n.ID, run, index, r.SubscriptionID)
			return markErr
		})
	}
	if err := d.sendTo(sendCtx, p, sub, sub.UserChannelID); err != nil {
		if markErr != nil {
			return r, false, fmt.Errorf("dispatch: mark send: %w", markErr)
		}
		r.Outcome, r.Error = notify.DispatchFailed, errorValue(err)
	} else {
		r.Outcome = notify.DispatchSuccessful
	}
	if outcomes != nil {
		outcomes.add(r)
	}
	return r, r.Outcome == notify.DispatchFailed || d.recordSuccess(), nil
}

// wanted applies the broadcast filters to one subscriber. A filter applies
// only when the data it reads is there; an evaluation error is no match.
func (d *Dispatcher) wanted(ctx context.Context, p *push, sub *notify.Subscription) bool {
	if sub.State != notify.StateConfirmed || sub.ServiceName != p.n.ServiceName || sub.Channel != p.n.Channel {
		return false
	}
	if f := sub.BroadcastPushNotificationFilter; f != "" && p.data != nil {
		if ok, err := d.o.Filters.Match(ctx, f, p.data); err != nil || !ok {
			if errors.Is(err, jmesfilter.ErrBudget) {
				d.log.Warn("notify: a subscription's filter went over its budget; the subscriber is skipped",
					"notification", p.n.ID.Hex(), "subscription", sub.ID.Hex(), "field", "broadcastPushNotificationFilter", "err", err)
			}
			return false
		}
	}
	if f := p.n.BroadcastPushNotificationSubscriptionFilter; f != "" && sub.Data != nil {
		if ok, err := d.o.Filters.Match(ctx, f, notify.PlainValue(sub.Data)); err != nil || !ok {
			// Logged once per chunk: the filter is the notification's,
			// and the subscribers whose data make it go over are many.
			if errors.Is(err, jmesfilter.ErrBudget) && p.overBudget.CompareAndSwap(false, true) {
				d.log.Warn("notify: the notification's filter went over its budget on a subscriber's data; such subscribers are skipped",
					"notification", p.n.ID.Hex(), "subscription", sub.ID.Hex(), "field", FilterField, "err", err)
			}
			return false
		}
	}
	return true
}

// recorder writes a chunk's outcomes in batches of Options.BatchSize, as
// numbered partial documents, and stamps the bounce records of the
// addresses each batch reached, so a broadcast of any size needs no
// second pass over its results.
type recorder struct {
	d            *Dispatcher
	nid          notify.ID
	run          string
	index        int
	part         int
	started      time.Time
	stampBounces bool
	results      []notify.DispatchResult // not written yet
	all          []notify.DispatchResult // written by this attempt
}

func (r *recorder) add(ctx context.Context, res notify.DispatchResult) error {
	r.results = append(r.results, res)
	if len(r.results) >= r.d.o.BatchSize {
		return r.flush(ctx)
	}
	return nil
}

func (r *recorder) flush(ctx context.Context) error {
	if len(r.results) == 0 {
		return nil
	}
	d := r.d
	// A chunk sent slowly (a throttle) is alive as long as results come.
	d.touch(ctx, r.nid)
	var written int
	err := d.retry(ctx, func(ctx context.Context) (err error) {
		next, err := d.o.Store.Broadcasts.RecordChunk(ctx, r.nid, r.index, r.part, r.results)
		written, r.part = next-1, next
		return err
	})
	if err != nil {
		return fmt.Errorf("dispatch: record results: %w", err)
	}
	d.co.partRecorded(ctx, r.nid, r.run, r.index, written, r.results)
	if r.stampBounces {
		var reached []string
		for _, res := range r.results {
			if res.Outcome == notify.DispatchSuccessful && res.UserChannelID != "" {
				reached = append(reached, res.UserChannelID)
			}
		}
		d.stampBounces(ctx, notify.ChannelEmail, r.started, reached)
	}
	r.all = append(r.all, r.results...)
	r.results = r.results[:0]
	return nil
}
