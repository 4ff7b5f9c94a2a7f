package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/jmesfilter"
	"github.com/govkit/govkit/notify/mongostore"
)

// RunBroadcast runs one broadcast to the end: candidates, chunks, sends,
// results, final state and callback (see the package documentation). It
// resumes a broadcast that was interrupted: subscribers with a recorded
// outcome are not sent to again. The error reports a pipeline failure; the
// notification is then in state error.
func (d *Dispatcher) RunBroadcast(ctx context.Context, job Job) error {
	n, err := d.o.Store.Notifications.FindByID(ctx, job.NotificationID.Hex())
	if err != nil {
		return fmt.Errorf("dispatch: load notification: %w", err)
	}
	if err := d.candidates(ctx, n); err != nil {
		return d.finish(ctx, n, job, err)
	}
	if err := d.setState(ctx, n.ID, notify.StateSending, job.User); err != nil {
		return d.finish(ctx, n, job, err)
	}
	p := newPush(n, job.HTTPHost)
	p.started = d.o.Now()
	return d.finish(ctx, n, job, d.pipeline(ctx, p))
}

// candidates records who the broadcast goes to, once: a broadcast that
// already has candidates (re-dispatched, or written by the original with
// its lists inline) keeps them. Outcomes held inline are recorded too, so
// that those subscribers count as done.
func (d *Dispatcher) candidates(ctx context.Context, n *notify.Notification) error {
	res := d.o.Store.Results
	var counts notify.DispatchCounts
	err := d.retry(ctx, func(ctx context.Context) (err error) {
		counts, err = res.DispatchCounts(ctx, n.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("dispatch: candidates: %w", err)
	}
	inline := n.Dispatch
	if inline == nil {
		inline = &notify.Dispatch{}
	}
	var ids []string
	switch {
	case counts.Candidates > 0:
	case len(inline.Candidates) > 0:
		ids = inline.Candidates
	default:
		subs, err := d.o.Store.Subscriptions.Find(ctx, mongostore.Query{
			Filter:     doc("serviceName", n.ServiceName, "state", notify.StateConfirmed, "channel", n.Channel),
			Projection: doc("id", 1),
		})
		if err != nil {
			return fmt.Errorf("dispatch: candidates: %w", err)
		}
		ids = make([]string, len(subs))
		for i, s := range subs {
			ids[i] = s.ID.Hex()
		}
	}
	var done []notify.DispatchResult
	for _, id := range inline.Successful {
		done = append(done, notify.DispatchResult{SubscriptionID: id, Outcome: notify.DispatchSuccessful})
	}
	for _, f := range inline.Failed {
		if f.SubscriptionID != "" {
			done = append(done, notify.DispatchResult{SubscriptionID: f.SubscriptionID, UserChannelID: f.UserChannelID, Outcome: notify.DispatchFailed, Error: f.Error})
		}
	}
	for _, id := range inline.Skipped {
		done = append(done, notify.DispatchResult{SubscriptionID: id, Outcome: notify.DispatchSkipped})
	}
	if len(done) > 0 {
		err := d.retry(ctx, func(ctx context.Context) error {
			_, err := res.RecordDispatch(ctx, n.ID, done)
			return err
		})
		if err != nil {
			return fmt.Errorf("dispatch: inline results: %w", err)
		}
	}
	if len(ids) > 0 {
		err := d.retry(ctx, func(ctx context.Context) error {
			_, err := res.AddDispatchCandidates(ctx, n.ID, ids)
			return err
		})
		if err != nil {
			return fmt.Errorf("dispatch: candidates: %w", err)
		}
	}
	return nil
}

// pipeline runs the chunk, send and record stages of a broadcast
// concurrently: one goroutine pages through the pending candidates, a pool
// of workers sends, and this goroutine records the results.
func (d *Dispatcher) pipeline(ctx context.Context, p *push) error {
	// Sending stops on a pipeline failure; recording goes on under ctx,
	// so that every send that happened is recorded.
	sendCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	subs := make(chan *notify.Subscription, d.o.Concurrency)
	results := make(chan notify.DispatchResult, 2*d.o.Concurrency)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(subs)
		if err := d.chunks(sendCtx, p, subs, results); err != nil {
			stop(err)
		}
	}()
	for range d.o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sub := range subs {
				if sendCtx.Err() != nil {
					continue // leave it pending for a re-dispatch
				}
				r, keep := d.deliver(sendCtx, p, sub)
				// A send cut short by the stop is not the subscriber's
				// failure.
				if keep && !(r.Outcome == notify.DispatchFailed && sendCtx.Err() != nil) {
					results <- r
				}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	if err := d.record(ctx, p, results); err != nil {
		stop(err)
		for range results { // let the stages end
		}
		return err
	}
	return context.Cause(sendCtx)
}

// minPage is the fewest candidates the in-process runner reads at once.
// Every query the embedded store answers is a scan of the collection, so
// reading pages much smaller than this makes a broadcast quadratic; a page
// of subscriptions is a few megabytes.
const minPage = 10000

// chunks feeds the pending candidates to the workers, a page at a time:
// broadcastSubscriberChunkSize candidates, or minPage when that is more (in
// one process a chunk is only a unit of reading; the queue-based runner
// hands chunks to workers). A page whose subscriptions cannot be loaded
// ends the broadcast when guaranteed processing is on (its subscribers stay
// pending for a re-dispatch); otherwise its subscribers are recorded as
// failed, as the original does with a failed chunk, and the next page goes
// on.
func (d *Dispatcher) chunks(ctx context.Context, p *push, out chan<- *notify.Subscription, results chan<- notify.DispatchResult) error {
	after := ""
	page := int64(max(d.o.ChunkSize, minPage))
	for {
		var ids []string
		err := d.retry(ctx, func(ctx context.Context) (err error) {
			ids, err = d.o.Store.Results.DispatchPending(ctx, p.n.ID, after, page)
			return err
		})
		if err != nil {
			return fmt.Errorf("dispatch: pending candidates: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		after = ids[len(ids)-1]
		subs, err := d.loadChunk(ctx, p.n, ids)
		if err != nil {
			if d.o.Guaranteed || ctx.Err() != nil {
				return err
			}
			d.log.Error("notify: broadcast chunk failed", "notification", p.n.ID.Hex(), "subscribers", len(ids), "err", err)
			for _, id := range ids {
				results <- notify.DispatchResult{SubscriptionID: id, Outcome: notify.DispatchFailed, Error: errorValue(err)}
			}
			continue
		}
		found := make(map[string]bool, len(subs))
		for _, s := range subs {
			found[s.ID.Hex()] = true
			select {
			case out <- s:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		// Subscriptions deleted from the store since they were chosen
		// are gone for good: skipped, under the same rule as a
		// subscriber who unsubscribed meanwhile.
		for _, id := range ids {
			if !found[id] && d.recordSkipped() {
				results <- notify.DispatchResult{SubscriptionID: id, Outcome: notify.DispatchSkipped}
			}
		}
	}
}

// loadChunk reads the subscriptions of one page of candidate ids, which
// come in id order. It asks for the id range of the chunk within the
// service and channel rather than for a list of ids: MongoDB answers a
// range from the _id index, and the embedded store, which compares every
// document with every value of an $in list, answers it in one pass.
func (d *Dispatcher) loadChunk(ctx context.Context, n *notify.Notification, ids []string) ([]*notify.Subscription, error) {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	lo, errLo := notify.ParseID(ids[0])
	hi, errHi := notify.ParseID(ids[len(ids)-1])
	filter := doc("serviceName", n.ServiceName, "channel", n.Channel)
	if errLo == nil && errHi == nil && lo.Hex() <= hi.Hex() {
		filter = append(doc("id", doc("$gte", lo, "$lte", hi)), filter...)
	} else {
		in := make([]any, len(ids))
		for i, id := range ids {
			in[i] = id
		}
		filter = doc("id", doc("$in", in))
	}
	var subs []*notify.Subscription
	err := d.retry(ctx, func(ctx context.Context) (err error) {
		subs, err = d.o.Store.Subscriptions.Find(ctx, mongostore.Query{Filter: filter})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dispatch: load subscriptions: %w", err)
	}
	out := subs[:0]
	for _, s := range subs {
		if want[s.ID.Hex()] {
			out = append(out, s)
		}
	}
	return out, nil
}

func (d *Dispatcher) recordSkipped() bool { return d.o.Guaranteed && d.o.LogSkipped }

func (d *Dispatcher) recordSuccess() bool { return d.o.Guaranteed || d.o.Bounce }

// deliver handles one subscriber: filters, merge, send. keep says whether
// the outcome is to be recorded.
func (d *Dispatcher) deliver(ctx context.Context, p *push, sub *notify.Subscription) (r notify.DispatchResult, keep bool) {
	r = notify.DispatchResult{SubscriptionID: sub.ID.Hex(), UserChannelID: sub.UserChannelID}
	if !d.wanted(ctx, p, sub) {
		r.Outcome = notify.DispatchSkipped
		return r, d.recordSkipped()
	}
	if err := d.send(ctx, p, sub, sub.UserChannelID); err != nil {
		r.Outcome, r.Error = notify.DispatchFailed, errorValue(err)
		return r, true
	}
	r.Outcome = notify.DispatchSuccessful
	return r, d.recordSuccess()
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
			// Logged once per broadcast: the filter is the notification's,
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

// record is the one writer of a broadcast's results: it stores them in
// batches, and at least every second so that progress shows. After each
// batch it stamps the bounce records of the addresses the batch reached,
// so a broadcast of any size needs no second pass over its results.
func (d *Dispatcher) record(ctx context.Context, p *push, in <-chan notify.DispatchResult) error {
	batch := make([]notify.DispatchResult, 0, d.o.BatchSize)
	stampBounces := d.o.Bounce && p.n.Channel == notify.ChannelEmail
	var reached []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := d.retry(ctx, func(ctx context.Context) error {
			_, err := d.o.Store.Results.RecordDispatch(ctx, p.n.ID, batch)
			return err
		})
		if err != nil {
			return fmt.Errorf("dispatch: record results: %w", err)
		}
		if stampBounces {
			reached = reached[:0]
			for _, r := range batch {
				if r.Outcome == notify.DispatchSuccessful && r.UserChannelID != "" {
					reached = append(reached, r.UserChannelID)
				}
			}
			d.stampBounces(ctx, p.n.Channel, p.started, reached)
		}
		batch = batch[:0]
		return nil
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-in:
			if !ok {
				return flush()
			}
			batch = append(batch, r)
			if len(batch) >= d.o.BatchSize {
				if err := flush(); err != nil {
					return err
				}
			}
		case <-tick.C:
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// finish sets the final state — sent, unless the pipeline failed or the
// state was set to error meanwhile — and posts the callback.
func (d *Dispatcher) finish(ctx context.Context, n *notify.Notification, job Job, failure error) error {
	state := notify.StateSent
	if failure != nil {
		state = notify.StateError
	} else if cur, err := d.o.Store.Notifications.FindByID(ctx, n.ID.Hex()); err == nil && cur.State == notify.StateError {
		state = notify.StateError
	}
	err := d.setState(ctx, n.ID, state, job.User)
	if err != nil && !errors.Is(err, notify.ErrNotFound) {
		failure = errors.Join(failure, fmt.Errorf("dispatch: final state: %w", err))
	}
	if url, ok := n.AsyncBroadcastPushNotification.(string); ok && url != "" {
		d.callback(ctx, n.ID, url)
	}
	return failure
}
