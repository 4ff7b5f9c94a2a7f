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

// This file is the life of a chunk, drawn in the package doc ("A chunk's
// life"): one attempt at a chunk job moves through the steps below, each
// a method of chunkAttempt, and run is the only place that chooses the
// next one. What happens when a part fails between two steps is decided
// here and nowhere else; coord.go and notify/mongostore only carry out
// single reads and writes.

// chunkStep is where an attempt at a chunk is.
type chunkStep int

const (
	// stepLoad reads the chunk's recorded results (the store) and its
	// marks (the queue backend).
	stepLoad chunkStep = iota
	// stepResolve sorts the candidates: recorded already, outcome kept
	// with a mark (to be recorded), or to be sent — never marked, or
	// marked without an outcome (a mark in doubt: sent again).
	stepResolve
	// stepGiveUp records the candidates left as failed without sending:
	// the chunk failed too often (or once, without guaranteed
	// processing).
	stepGiveUp
	// stepSend runs the subscribers through mark → send → outcome.
	stepSend
	// stepFlush stores the outcomes still held in memory; an attempt
	// that failed passes here before it ends.
	stepFlush
	// stepComplete makes the result document whole and marks the chunk
	// done; the last chunk done queues the finish step.
	stepComplete
	// stepEnd ends the attempt with its error (nil: done).
	stepEnd
)

var stepNames = [...]string{"load", "resolve", "give up", "send", "flush", "complete", "end"}

func (s chunkStep) String() string { return stepNames[s] }

// chunkAttempt is one attempt at a chunk job: what the steps share.
type chunkAttempt struct {
	d     *Dispatcher
	n     *notify.Notification
	hdr   mongostore.Broadcast
	index int
	job   queue.Job

	prior *mongostore.ChunkResults
	// marks of subscribers whose send began in an earlier attempt: the
	// outcome kept with the mark, or nil when it is not known.
	marks map[string]*notify.DispatchResult
	todo  []*notify.Subscription
	rec   *recorder
	// err is the attempt's failure: set by the step that failed, the
	// attempt still flushes before it ends.
	err error
}

// runChunk runs one attempt at chunk index of a broadcast.
func (d *Dispatcher) runChunk(ctx context.Context, n *notify.Notification, hdr mongostore.Broadcast, index int, j queue.Job) error {
	d.touch(ctx, n.ID)
	a := &chunkAttempt{d: d, n: n, hdr: hdr, index: index, job: j}
	a.rec = &recorder{d: d, nid: n.ID, run: hdr.Run, index: index, started: hdr.Started,
		stampBounces: d.o.Bounce && n.Channel == notify.ChannelEmail}
	return a.run(ctx)
}

// run moves the attempt from step to step: the chunk's state machine.
//
//	load ──▶ resolve ──▶ send ──▶ flush ──▶ complete ──▶ end
//	 │          │                  ▲ │          ▲         ▲
//	 │          └─ nothing to send─┤ └─ failed ─┼─────────┤
//	 ├─ attempts spent ─▶ give up──┘            │         │
//	 ├─ complete already ───────────────────────┘         │
//	 └─ failed ───────────────────────────────────────────┘
func (a *chunkAttempt) run(ctx context.Context) error {
	step := stepLoad
	for step != stepEnd {
		step = a.step(ctx, step)
		if step != stepEnd {
			hook(ctx, "chunk:"+step.String())
		}
	}
	return a.err
}

// step does one step and returns the next.
func (a *chunkAttempt) step(ctx context.Context, s chunkStep) chunkStep {
	switch s {
	case stepLoad:
		return a.load(ctx)
	case stepResolve:
		return a.resolve(ctx)
	case stepGiveUp:
		return a.giveUp()
	case stepSend:
		return a.send(ctx)
	case stepFlush:
		return a.flush(ctx)
	case stepComplete:
		return a.complete(ctx)
	}
	return stepEnd
}

// fail records the attempt's first failure.
func (a *chunkAttempt) fail(err error) {
	if a.err == nil {
		a.err = err
	}
}

// load reads what earlier attempts left: the results stored, and the
// marks. Marks are read on every attempt: a job released by a node that
// shut down counts no attempt, but its sends are just as much in doubt.
func (a *chunkAttempt) load(ctx context.Context) chunkStep {
	d := a.d
	err := d.retry(ctx, func(ctx context.Context) (err error) {
		a.prior, err = d.o.Store.Broadcasts.BroadcastResults(ctx, a.n.ID, a.index)
		return err
	})
	switch {
	case errors.Is(err, notify.ErrNotFound):
		return stepEnd // planned again since: not this run's chunk
	case err != nil:
		a.fail(err)
		return stepEnd
	case a.prior.Complete:
		return stepComplete
	}
	a.rec.part = a.prior.Parts
	if d.o.Guaranteed {
		err := d.untilLease(ctx, func(ctx context.Context) (err error) {
			a.marks, err = d.co.sending(ctx, a.n.ID, a.hdr.Run, a.index)
			return err
		})
		if err != nil {
			a.fail(fmt.Errorf("dispatch: chunk %d: read marks: %w", a.index, err))
			return stepEnd
		}
	}
	if a.job.Attempt > d.o.MaxAttempts {
		return stepGiveUp
	}
	return stepResolve
}

// resolve reads the snapshot and sorts its subscribers. A mark with its
// outcome is a send that ended before its node could store it: recorded
// as it ended. A mark without one is in doubt — the send began, its end
// is unknown: the mail is sent (again), as NotifyBC re-sends an
// interrupted chunk; whoever gets it twice is one whose first mail the
// server accepted without that acceptance reaching us.
func (a *chunkAttempt) resolve(ctx context.Context) chunkStep {
	d := a.d
	var subs []*notify.Subscription
	err := d.retry(ctx, func(ctx context.Context) (err error) {
		subs, err = d.o.Store.Broadcasts.BroadcastChunk(ctx, a.n.ID, a.index)
		return err
	})
	if err != nil {
		a.fail(fmt.Errorf("dispatch: chunk %d: %w", a.index, err))
		return stepEnd
	}
	recorded := a.prior.Outcomes()
	inDoubt := 0
	for _, sub := range subs {
		id := sub.ID.Hex()
		r, marked := a.marks[id]
		switch {
		case recorded[id] != "":
		case r != nil:
			a.rec.results = append(a.rec.results, *r)
		default:
			if marked {
				inDoubt++
			}
			a.todo = append(a.todo, sub)
		}
	}
	if len(recorded)+len(a.rec.results)+inDoubt > 0 && len(a.todo) > 0 {
		d.log.Info("notify: resuming a broadcast chunk", "notification", a.n.ID.Hex(), "chunk", a.index, "attempt", a.job.Attempt,
			"left", len(a.todo), "kept", len(a.rec.results), "inDoubt", inDoubt)
	}
	if len(a.todo) == 0 {
		return stepFlush
	}
	return stepSend
}

// giveUp records every candidate without an outcome as failed, without
// reading the snapshot (it may be what fails): the candidates are in the
// results. Outcomes kept with marks are recorded as they ended.
func (a *chunkAttempt) giveUp() chunkStep {
	d := a.d
	cause := errors.New("not sent: its chunk failed " + strconv.Itoa(a.job.Attempt-1) + " times")
	if !d.o.Guaranteed {
		cause = errors.New("not sent: its chunk failed (guaranteed processing is off)")
	}
	d.log.Error("notify: giving up a broadcast chunk", "notification", a.n.ID.Hex(), "chunk", a.index, "attempts", a.job.Attempt-1)
	recorded := a.prior.Outcomes()
	for _, id := range a.prior.Candidates {
		switch r := a.marks[id]; {
		case recorded[id] != "":
		case r != nil:
			a.rec.results = append(a.rec.results, *r)
		default:
			a.rec.results = append(a.rec.results, notify.DispatchResult{SubscriptionID: id, Outcome: notify.DispatchFailed, Error: errorValue(cause)})
		}
	}
	return stepFlush
}

// send runs the subscribers left through a pool of Options.Concurrency
// workers (see deliver for one subscriber's way) and hands each outcome
// to the recorder, which stores them in batches. A failure of the
// pipeline (a mark or a result that cannot be written for a lease), or
// the end of ctx (the lease lost, a shutdown), stops new sends; the sends
// already past their mark finish, and their outcomes are kept.
func (a *chunkAttempt) send(ctx context.Context) chunkStep {
	d := a.d
	p := newPush(a.n, a.hdr.HTTPHost)
	p.started = a.hdr.Started
	feed, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	in := make(chan *notify.Subscription)
	out := make(chan notify.DispatchResult, d.o.Concurrency)
	var kept *outcomeWriter
	if d.o.Guaranteed {
		kept = d.keepOutcomes(context.WithoutCancel(ctx), a.n.ID, a.hdr.Run, a.index, 2*d.o.Concurrency)
	}
	var wg sync.WaitGroup
	for range min(d.o.Concurrency, len(a.todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sub := range in {
				r, keep, err := a.deliver(feed, p, sub, kept)
				if err != nil {
					stop(err)
					continue
				}
				if keep {
					out <- r
				}
			}
		}()
	}
	go func() {
		defer close(in)
		for _, sub := range a.todo {
			select {
			case in <- sub:
			case <-feed.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()

	// Results are written under a context that outlives a lost lease or a
	// shutdown, so that every send that happened is recorded. Once a
	// write fails the rest are only collected: the flush step tries once
	// more, and the outcomes kept with the marks cover what it cannot.
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var writeErr error
	write := func(fn func() error) {
		if writeErr != nil {
			return
		}
		if writeErr = fn(); writeErr != nil {
			stop(writeErr)
		}
	}
	for done := false; !done; {
		select {
		case r, ok := <-out:
			if !ok {
				done = true
				break
			}
			a.rec.results = append(a.rec.results, r)
			if len(a.rec.results) >= d.o.BatchSize {
				write(func() error { return a.rec.flush(writeCtx) })
			}
		case <-tick.C:
			write(func() error { return a.rec.flush(writeCtx) })
		}
	}
	if kept != nil {
		if err := kept.close(); err != nil {
			d.log.Warn("notify: outcomes not kept with their marks; sends whose outcome is not stored either will be sent again", "notification", a.n.ID.Hex(), "chunk", a.index, "err", err)
		}
	}
	if err := context.Cause(feed); err != nil {
		a.fail(err) // subscribers were left unsent: the job runs again
	}
	return stepFlush
}

// deliver takes one subscriber through filters, merge and send. With
// guaranteed processing the send is marked in the queue backend at the
// moment it begins (after any wait for the throttle or a connection) and
// its outcome kept with the mark, so that a node taking the chunk over
// knows whose send ended how:
//
//	waiting ──▶ marking ──▶ sending ──▶ outcome known ──▶ kept
//	   │           │
//	   └─ stopped  └─ mark not written for a lease: not sent (err)
//	      (cut short: no outcome, keep false)
//
// Once the mark is written the send no longer heeds feed: stopping the
// pipeline lets it finish. A send cut short before its mark is no
// outcome at all: the subscriber is sent to by a later attempt. keep says
// whether the outcome is to be stored.
func (a *chunkAttempt) deliver(feed context.Context, p *push, sub *notify.Subscription, kept *outcomeWriter) (r notify.DispatchResult, keep bool, err error) {
	d := a.d
	r = notify.DispatchResult{SubscriptionID: sub.ID.Hex(), UserChannelID: sub.UserChannelID}
	if !d.wanted(feed, p, sub) {
		if feed.Err() != nil {
			return r, false, nil // a filter cut short decides nothing
		}
		r.Outcome = notify.DispatchSkipped
		return r, d.recordSkipped(), nil
	}
	sendCtx, passMark, release := pastMark(feed)
	defer release()
	var markErr error
	passed := false
	sendCtx = notify.OnSendStart(sendCtx, func() error {
		if !passMark() {
			return context.Cause(feed)
		}
		if d.o.Guaranteed {
			markErr = d.untilLease(context.WithoutCancel(feed), func(ctx context.Context) error {
				return d.co.markSending(ctx, p.n.ID, a.hdr.Run, a.index, r.SubscriptionID)
			})
			if markErr != nil {
				return markErr
			}
		}
		passed = true
		return nil
	})
	sendErr := d.sendTo(sendCtx, p, sub, sub.UserChannelID)
	switch {
	case markErr != nil:
		return r, false, fmt.Errorf("dispatch: mark send: %w", markErr)
	case sendErr != nil && !passed && feed.Err() != nil:
		return r, false, nil // cut short while waiting: not the subscriber's failure
	case sendErr != nil:
		r.Outcome, r.Error = notify.DispatchFailed, errorValue(sendErr)
	default:
		r.Outcome = notify.DispatchSuccessful
	}
	if kept != nil {
		kept.add(r)
	}
	return r, r.Outcome == notify.DispatchFailed || d.recordSuccess(), nil
}

// pastMark returns a context for one send that ends with feed until
// passMark is called, and outlives it after: a send is stopped while it
// waits, never once it may be delivering. passMark reports false when
// feed ended first. release frees the context.
func pastMark(feed context.Context) (ctx context.Context, passMark func() bool, release func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(feed))
	var mu sync.Mutex
	passed := false
	stopAfter := context.AfterFunc(feed, func() {
		mu.Lock()
		defer mu.Unlock()
		if !passed {
			cancel(context.Cause(feed))
		}
	})
	passMark = func() bool {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return false
		}
		passed = true
		return true
	}
	return ctx, passMark, func() { stopAfter(); cancel(nil) }
}

// flush stores the outcomes held in memory. It runs after every attempt
// that got as far as its results, failed or not, under a context that
// outlives the attempt's: what is known is not dropped.
func (a *chunkAttempt) flush(ctx context.Context) chunkStep {
	writeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if err := a.rec.flush(writeCtx); err != nil {
		a.fail(err)
	}
	if a.err != nil {
		return stepEnd
	}
	return stepComplete
}

// complete folds the chunk's results into its result document, marked
// complete, drops its marks and records it done. Done already (a job run
// twice), it only records it done.
func (a *chunkAttempt) complete(ctx context.Context) chunkStep {
	d := a.d
	if !a.prior.Complete {
		final := *a.prior
		for _, r := range a.rec.all {
			switch r.Outcome {
			case notify.DispatchSuccessful:
				final.Successful = append(final.Successful, r.SubscriptionID)
			case notify.DispatchFailed:
				final.Failed = append(final.Failed, notify.DispatchFailure{SubscriptionID: r.SubscriptionID, UserChannelID: r.UserChannelID, Error: r.Error})
			case notify.DispatchSkipped:
				final.Skipped = append(final.Skipped, r.SubscriptionID)
			}
		}
		final.Parts = a.rec.part
		final.KeepFirstOutcomes()
		if err := d.retry(ctx, func(ctx context.Context) error {
			return d.o.Store.Broadcasts.CompleteChunk(ctx, a.n.ID, a.index, &final)
		}); err != nil {
			a.fail(err)
			return stepEnd
		}
		d.co.chunkCompleted(ctx, a.n.ID, a.hdr.Run, a.index, a.rec.part, mongostore.CountChunk(&final))
		if err := d.co.forgetSending(ctx, a.n.ID, a.hdr.Run, a.index); err != nil {
			d.log.Warn("notify: marks of a finished chunk not dropped", "notification", a.n.ID.Hex(), "chunk", a.index, "err", err)
		}
	}
	a.fail(d.chunkFinished(ctx, a.hdr, a.index))
	return stepEnd
}

func (d *Dispatcher) recordSkipped() bool { return d.o.Guaranteed && d.o.LogSkipped }

func (d *Dispatcher) recordSuccess() bool { return d.o.Guaranteed || d.o.Bounce }

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

// recorder writes a chunk's outcomes in batches, as numbered partial
// documents, and stamps the bounce records of the addresses each batch
// reached, so a broadcast of any size needs no second pass over its
// results.
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

// flush writes the results held; on failure they stay held.
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
