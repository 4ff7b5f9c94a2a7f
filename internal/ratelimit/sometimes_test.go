package ratelimit_test

import (
	"testing"

	"github.com/govkit/govkit/internal/ratelimit"
)

func TestSometimesRunsOnceAndCountsWhatItSkipped(t *testing.T) {
	var s ratelimit.Sometimes // zero Interval: once
	runs := 0
	for range 5 {
		s.Do(func(int) { runs++ })
	}
	if runs != 1 {
		t.Fatalf("ran %d times, want 1", runs)
	}
}

func TestSometimesRunsAgainAfterInterval(t *testing.T) {
	s := ratelimit.Sometimes{Interval: 1} // 1 ns: every call after the first is past it
	var skipped []int
	s.Do(func(n int) { skipped = append(skipped, n) })
	for !func() bool { ran := false; s.Do(func(n int) { ran = true; skipped = append(skipped, n) }); return ran }() {
	}
	if len(skipped) != 2 || skipped[0] != 0 {
		t.Fatalf("skipped counts %v", skipped)
	}
}
