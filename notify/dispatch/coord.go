package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/govkit/govkit/notify"
)

// coordinator keeps the state of a broadcast run that the nodes share in
// the queue backend, under {prefix}{notification hex}:{run}:…:
//
//	done          set of chunk indexes finished (the last one to finish
//	              sees the set full and queues the finish step)
//	chunks        how many chunks the run has, once its plan is complete
//	inflight:{i}  hash of the subscribers of chunk i whose send has begun:
//	              subscription id → "" while the send is under way, then
//	              the outcome (JSON), until the chunk's results are stored
//	finished      flag set by the finish step, which sync requests wait for
//
// and {prefix}{notification hex}:touch, which spaces the refreshes of the
// notification's updated date while its chunks are worked on. Keys expire
// after a week: long enough to resume any broadcast.
type coordinator struct {
	c      redis.UniversalClient
	prefix string
}

const coordTTL = 7 * 24 * time.Hour

func (c coordinator) key(nid notify.ID, run, what string) string {
	return c.prefix + nid.Hex() + ":" + run + ":" + what
}

// doneScript adds chunk index ARGV[1] (if any) to the done set and
// answers whether the run's plan is complete and every chunk done.
var doneScript = redis.NewScript(`
if ARGV[1] ~= '' then
  redis.call('SADD', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
local n = redis.call('GET', KEYS[2])
if n and redis.call('SCARD', KEYS[1]) >= tonumber(n) then return 1 end
return 0
`)

// chunkDone records chunk index as finished and reports whether every
// chunk of the run is (which needs the plan to be complete).
func (c coordinator) chunkDone(ctx context.Context, nid notify.ID, run string, index int) (bool, error) {
	n, err := doneScript.Run(ctx, c.c, []string{c.key(nid, run, "done"), c.key(nid, run, "chunks")}, index, coordTTL.Milliseconds()).Int()
	return n == 1, err
}

// planned records the run's chunk count and reports whether every chunk
// is done already (all were sent while the plan went on).
func (c coordinator) planned(ctx context.Context, nid notify.ID, run string, chunks int) (bool, error) {
	if err := c.c.Set(ctx, c.key(nid, run, "chunks"), chunks, coordTTL).Err(); err != nil {
		return false, err
	}
	n, err := doneScript.Run(ctx, c.c, []string{c.key(nid, run, "done"), c.key(nid, run, "chunks")}, "", coordTTL.Milliseconds()).Int()
	return n == 1, err
}

// doneChunks returns the indexes of the run's finished chunks.
func (c coordinator) doneChunks(ctx context.Context, nid notify.ID, run string) (map[int]bool, error) {
	list, err := c.c.SMembers(ctx, c.key(nid, run, "done")).Result()
	if err != nil {
		return nil, err
	}
	done := make(map[int]bool, len(list))
	for _, s := range list {
		if i, err := strconv.Atoi(s); err == nil {
			done[i] = true
		}
	}
	return done, nil
}

func (c coordinator) inflightKey(nid notify.ID, run string, index int) string {
	return c.key(nid, run, "inflight:"+strconv.Itoa(index))
}

// markSending records that a subscriber's send is beginning. It must
// succeed before the send: after a crash, a subscriber marked without an
// outcome is one whose mail may or may not have gone. Setting it again is
// harmless, so a write whose reply was lost is simply written again.
func (c coordinator) markSending(ctx context.Context, nid notify.ID, run string, index int, subscriptionID string) error {
	return c.c.HSet(ctx, c.inflightKey(nid, run, index), subscriptionID, "").Err()
}

// keepOutcome stores outcomes with their marks (fields: id, outcome, …).
func (c coordinator) keepOutcome(ctx context.Context, key string, fields []any) error {
	return c.c.HSet(ctx, key, fields...).Err()
}

// sentOutcome is an outcome kept with a mark until the chunk's results
// are stored.
type sentOutcome struct {
	Outcome       notify.DispatchOutcome `json:"o"`
	UserChannelID string                 `json:"u,omitempty"`
	Error         json.RawMessage        `json:"e,omitempty"`
}

// outcomeWriter keeps outcomes with their marks, so that a node taking a
// chunk over records them instead of sending again. It writes in
// batches: one round trip carries the outcomes of every send that ended
// while the previous one was under way. A write that fails is tried again
// for up to a lease (Dispatcher.untilLease); meanwhile sends wait for room
// in its buffer.
type outcomeWriter struct {
	write func(ctx context.Context, fields []any) error
	in    chan notify.DispatchResult
	done  chan struct{}
	err   error // the last write's failure
}

func (d *Dispatcher) keepOutcomes(ctx context.Context, nid notify.ID, run string, index, buffer int) *outcomeWriter {
	key := d.co.inflightKey(nid, run, index)
	w := &outcomeWriter{in: make(chan notify.DispatchResult, buffer), done: make(chan struct{}),
		write: func(ctx context.Context, fields []any) error {
			return d.untilLease(ctx, func(ctx context.Context) error { return d.co.keepOutcome(ctx, key, fields) })
		}}
	go w.loop(ctx)
	return w
}

func (w *outcomeWriter) add(r notify.DispatchResult) { w.in <- r }

// close writes what is left and stops.
func (w *outcomeWriter) close() error {
	close(w.in)
	<-w.done
	return w.err
}

func (w *outcomeWriter) loop(ctx context.Context) {
	defer close(w.done)
	var fields []any
	for r := range w.in {
		fields = append(fields[:0], r.SubscriptionID, encodeOutcome(r))
	more:
		for len(fields) < 1024 {
			select {
			case r, ok := <-w.in:
				if !ok {
					break more
				}
				fields = append(fields, r.SubscriptionID, encodeOutcome(r))
			default:
				break more
			}
		}
		if err := w.write(ctx, fields); err != nil {
			w.err = err
		}
	}
}

func encodeOutcome(r notify.DispatchResult) string {
	o := sentOutcome{Outcome: r.Outcome, UserChannelID: r.UserChannelID}
	if r.Error != nil {
		o.Error, _ = json.Marshal(r.Error)
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// sending returns the marks of a chunk: for each subscriber whose send
// began, its outcome, or nil while it is unknown. It gives the hash its
// expiry.
func (c coordinator) sending(ctx context.Context, nid notify.ID, run string, index int) (map[string]*notify.DispatchResult, error) {
	k := c.inflightKey(nid, run, index)
	var marks *redis.MapStringStringCmd
	_, err := c.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		marks = p.HGetAll(ctx, k)
		p.PExpire(ctx, k, coordTTL)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*notify.DispatchResult, len(marks.Val()))
	for id, v := range marks.Val() {
		var o sentOutcome
		if v == "" || json.Unmarshal([]byte(v), &o) != nil || o.Outcome == "" {
			out[id] = nil
			continue
		}
		r := &notify.DispatchResult{SubscriptionID: id, UserChannelID: o.UserChannelID, Outcome: o.Outcome}
		if len(o.Error) > 0 {
			r.Error, _ = notify.DecodeJSONValue(o.Error)
		}
		out[id] = r
	}
	return out, nil
}

// forgetSending drops a finished chunk's marks.
func (c coordinator) forgetSending(ctx context.Context, nid notify.ID, run string, index int) error {
	return c.c.Del(ctx, c.inflightKey(nid, run, index)).Err()
}

// setFinished raises the run's finished flag and drops its done set.
func (c coordinator) setFinished(ctx context.Context, nid notify.ID, run string) error {
	_, err := c.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, c.key(nid, run, "finished"), "1", 24*time.Hour)
		p.Del(ctx, c.key(nid, run, "done"), c.key(nid, run, "chunks"))
		return nil
	})
	return err
}

// clearFinished lowers the flag before the run is dispatched again.
func (c coordinator) clearFinished(ctx context.Context, nid notify.ID, run string) error {
	return c.c.Del(ctx, c.key(nid, run, "finished")).Err()
}

func (c coordinator) finished(ctx context.Context, nid notify.ID, run string) (bool, error) {
	err := c.c.Get(ctx, c.key(nid, run, "finished")).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return err == nil, err
}

// touchDue reports, at most once per every, that the notification's
// updated date should be refreshed (the stale-broadcast cron job looks
// for broadcasts left in sending for ten minutes).
func (c coordinator) touchDue(ctx context.Context, nid notify.ID, every time.Duration) bool {
	ok, err := c.c.SetNX(ctx, c.prefix+nid.Hex()+":touch", "1", every).Result()
	return err == nil && ok
}
