package dev_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform/dev"
)

// The development platform relaxes the rate limits and says so, unless
// THROTTLE_* variables set them, which win as they do for `serve`.
func TestDevRateLimits(t *testing.T) {
	startWith := func(env map[string]string) (*dev.Stack, string) {
		var out bytes.Buffer
		s, err := dev.Start(context.Background(), dev.Options{DataDir: t.TempDir(), PlatformPort: "0", ProviderPort: "0",
			Getenv: func(k string) string { return env[k] }}, &out)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Stop(context.Background()) })
		return s, out.String()
	}
	statuses := func(s *dev.Stack, n int) map[int]int {
		st := &stack{Stack: s, t: t, base: s.Platform.URL}
		got := map[int]int{}
		for range n {
			got[st.do(t, nil, "GET", "/api/openapi.json", nil).StatusCode]++
		}
		return got
	}

	relaxed, out := startWith(nil)
	if !strings.Contains(out, "per IP: 10000 per minute") || !strings.Contains(out, "relaxed for development") {
		t.Errorf("output does not say the limits are relaxed:\n%s", out)
	}
	if got := statuses(relaxed, 150); got[200] != 150 {
		t.Errorf("150 requests within a minute on dev: %v, want all 200 (the production budget is 100)", got)
	}

	strict, out := startWith(map[string]string{"THROTTLE_GLOBAL_LIMIT": "3"})
	if !strings.Contains(out, "per IP: 3 per minute") {
		t.Errorf("output does not show THROTTLE_GLOBAL_LIMIT:\n%s", out)
	}
	if got := statuses(strict, 5); got[200] != 3 || got[429] != 2 {
		t.Errorf("THROTTLE_GLOBAL_LIMIT=3: %v, want 3×200 and 2×429", got)
	}
}
