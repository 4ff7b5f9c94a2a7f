package ratelimit

import (
	"sync"
	"time"
)

// Sometimes runs a function the first time Do is called and then at most
// once per Interval, counting the calls it skipped in between: for a
// warning that a request can cause, so that a stream of such requests
// cannot flood the log. The zero Interval runs it once only. A Sometimes
// is per process; it is safe for concurrent use.
type Sometimes struct {
	Interval time.Duration

	mu      sync.Mutex
	last    time.Time
	ran     bool
	skipped int
}

// Do calls f with the number of calls skipped since f last ran, or does
// nothing when f ran less than Interval ago.
func (s *Sometimes) Do(f func(skipped int)) {
	s.mu.Lock()
	now := time.Now()
	if s.ran && (s.Interval <= 0 || now.Sub(s.last) < s.Interval) {
		s.skipped++
		s.mu.Unlock()
		return
	}
	skipped := s.skipped
	s.ran, s.last, s.skipped = true, now, 0
	s.mu.Unlock()
	f(skipped)
}
