package config

import "github.com/govkit/govkit/notify/cron/timespec"

// timeSpec reads a cron job's time spec and refuses one the scheduler
// cannot run, so that a typo stops the start instead of a job.
func (r *reader) timeSpec(path string) string {
	s := r.str(path)
	if _, ok := r.get(path); !ok {
		r.bad(path, "missing: every cron job needs a time spec")
		return s
	}
	if _, err := timespec.Parse(s); err != nil {
		r.bad(path, err.Error())
	}
	return s
}

// span reads a retention or waiting time (days or hours), which cannot be
// negative: a negative retention would purge records as they are written.
func (r *reader) span(path string, v float64) float64 {
	if v < 0 {
		r.bad(path, "must not be negative")
	}
	return v
}
