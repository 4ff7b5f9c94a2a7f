package jsrt

import (
	"errors"
	"sort"
	"time"

	"github.com/dop251/goja"
)

// loop is the timer queue of one runtime. It runs only while a call waits
// for its promise: config functions are short, so a full event loop running
// in the background would add a goroutine per runtime for nothing.
type loop struct {
	seq    int64
	timers []*timer
}

type timer struct {
	id   int64
	due  time.Time
	fn   goja.Callable
	args []goja.Value
}

func (l *loop) reset() { l.timers = nil }

func (l *loop) add(fn goja.Callable, delay time.Duration, args []goja.Value) int64 {
	l.seq++
	t := &timer{id: l.seq, due: time.Now().Add(delay), fn: fn, args: args}
	l.timers = append(l.timers, t)
	// Stable by due time, so equal delays run in the order they were set,
	// as in Node.
	sort.SliceStable(l.timers, func(i, j int) bool { return l.timers[i].due.Before(l.timers[j].due) })
	return t.id
}

func (l *loop) clear(id int64) {
	for i, t := range l.timers {
		if t.id == id {
			l.timers = append(l.timers[:i], l.timers[i+1:]...)
			return
		}
	}
}

var errDeadline = errors.New("call did not finish in time")

// runUntil fires timers in order until p settles, no timer is left, or the
// deadline passes.
func (l *loop) runUntil(rt *goja.Runtime, p *goja.Promise, deadline time.Time) error {
	for p.State() == goja.PromiseStatePending && len(l.timers) > 0 {
		t := l.timers[0]
		l.timers = l.timers[1:]
		if wait := time.Until(t.due); wait > 0 {
			if t.due.After(deadline) {
				time.Sleep(time.Until(deadline))
				return errDeadline
			}
			time.Sleep(wait)
		}
		if _, err := t.fn(goja.Undefined(), t.args...); err != nil {
			return err
		}
	}
	return nil
}
