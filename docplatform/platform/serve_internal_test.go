package platform

import (
	"runtime/debug"
	"testing"
)

// `docplatform serve` raises the collector's target unless the operator
// tunes the collector through the environment (GOGC or GOMEMLIMIT).
func TestTuneGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}

	for _, set := range []map[string]string{{"GOGC": "150"}, {"GOGC": "off"}, {"GOMEMLIMIT": "512MiB"}} {
		debug.SetGCPercent(100)
		if tuneGC(env(set)) {
			t.Errorf("with %v: tuneGC changed the collector", set)
		}
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("with %v: GC percent %d, want the operator's (left at 100 here)", set, got)
		}
	}

	debug.SetGCPercent(100)
	if !tuneGC(env(map[string]string{"PATH": "/usr/bin"})) {
		t.Fatal("without GOGC or GOMEMLIMIT: tuneGC did nothing")
	}
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Fatalf("GC percent %d, want %d", got, DefaultGCPercent)
	}
}
