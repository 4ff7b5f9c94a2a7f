package cron

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/govkit/govkit/notify/cron/timespec"
)

// lockTTL is how long the lock of one scheduled run lives. It only has to
// outlast the difference between two nodes' clocks and start-up delays;
// each run has its own key, so it never holds back the next run.
const lockTTL = 5 * time.Minute

// Run is one scheduled run, as reported to Options.OnRun.
type Run struct {
	Job string
	// At is the time the run was scheduled for.
	At time.Time
	// Skipped: another node holds this run's lock and ran it.
	Skipped bool
	Err     error
}

type job struct {
	name string
	spec *timespec.Spec
	// lock: take the cluster-wide lock of each run (jobs that change
	// data); jobs that only keep this process's own schedule run on every
	// node.
	lock   bool
	run    func(ctx context.Context) error
	cancel context.CancelFunc
}

// scheduler runs jobs at the times their specs name. A job's runs never
// overlap: a run that takes longer than the interval makes the scheduler
// skip the times it missed, as the original's scheduler does.
type scheduler struct {
	clock  Clock
	locker Locker
	loc    *time.Location
	log    *slog.Logger
	onRun  func(Run)

	// runs is the context of job runs, cancelled when Stop gives up
	// waiting; loops is that of the waiting, cancelled when Stop begins.
	runs, loops           context.Context
	cancelRuns, stopLoops context.CancelFunc

	mu      sync.Mutex
	jobs    map[string]*job
	stopped bool
	wg      sync.WaitGroup
}

func newScheduler(clock Clock, locker Locker, loc *time.Location, log *slog.Logger, onRun func(Run)) *scheduler {
	s := &scheduler{clock: clock, locker: locker, loc: loc, log: log, onRun: onRun, jobs: map[string]*job{}}
	s.runs, s.cancelRuns = context.WithCancel(context.Background())
	s.loops, s.stopLoops = context.WithCancel(s.runs)
	return s
}

// add schedules a job under a name of its own; a job of that name is
// replaced. Its first time is fixed now, so that a clock moved right after
// add still finds it waiting.
func (s *scheduler) add(name string, spec *timespec.Spec, lock bool, run func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if old := s.jobs[name]; old != nil {
		old.cancel()
	}
	ctx, cancel := context.WithCancel(s.loops)
	j := &job{name: name, spec: spec, lock: lock, run: run, cancel: cancel}
	s.jobs[name] = j
	first := spec.Next(s.clock.Now().In(s.loc))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.loop(ctx, j, first)
	}()
}

// remove stops scheduling a job; a run in progress finishes.
func (s *scheduler) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[name]; j != nil {
		j.cancel()
		delete(s.jobs, name)
	}
}

func (s *scheduler) loop(ctx context.Context, j *job, next time.Time) {
	for {
		if err := s.clock.WaitUntil(ctx, next); err != nil {
			return
		}
		r := s.runOnce(j, next)
		from := next
		if now := s.clock.Now(); now.After(from) {
			from = now
		}
		next = j.spec.Next(from.In(s.loc))
		// Reported once the next time is fixed, so that a test moving
		// its clock after the report finds the job waiting for it.
		if s.onRun != nil {
			s.onRun(r)
		}
	}
}

func (s *scheduler) runOnce(j *job, at time.Time) (r Run) {
	r = Run{Job: j.name, At: at}
	if j.lock {
		key := "cron:" + j.name + ":" + at.UTC().Format(time.RFC3339)
		ok, err := s.locker.Acquire(s.runs, key, lockTTL)
		if err != nil {
			// Better a run missed than a run twice: the next one comes.
			r.Err = fmt.Errorf("cron: lock %s: %w", key, err)
			s.log.Error("cron: run skipped: lock unavailable", "job", j.name, "at", at, "err", err)
			return r
		}
		if !ok {
			r.Skipped = true
			s.log.Debug("cron: run taken by another node", "job", j.name, "at", at)
			return r
		}
	}
	defer func() {
		if p := recover(); p != nil {
			r.Err = fmt.Errorf("cron: %s panicked: %v", j.name, p)
			s.log.Error("cron: job failed", "job", j.name, "at", at, "err", r.Err)
		}
	}()
	start := time.Now()
	if r.Err = j.run(s.runs); r.Err != nil {
		s.log.Error("cron: job failed", "job", j.name, "at", at, "err", r.Err)
	} else {
		s.log.Debug("cron: job done", "job", j.name, "at", at, "took", time.Since(start))
	}
	return r
}

// stop ends the schedule: no run starts after it; runs in progress may
// finish until ctx ends, and are then cancelled.
func (s *scheduler) stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.stopLoops()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.cancelRuns()
		return nil
	case <-ctx.Done():
		s.cancelRuns()
		<-done
		return ctx.Err()
	}
}
