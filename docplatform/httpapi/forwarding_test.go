package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestForwardingHeadersFromAnUntrustedPeerAreWarnedAboutOnce: a proxy in
// front of the platform that TRUSTED_PROXIES does not name makes every
// client one address, with one budget for all (finding 5 of the second
// hostile review). The platform cannot tell that from its configuration;
// it says so in its log, once, when such headers arrive; from a trusted
// proxy they are what is expected and nothing is said.
func TestForwardingHeadersFromAnUntrustedPeerAreWarnedAboutOnce(t *testing.T) {
	const warning = "arrive from an address that is not in TRUSTED_PROXIES"
	for _, c := range []struct {
		name    string
		trusted string
		header  string
		want    int
	}{
		{"X-Forwarded-For with no trusted proxies", "", "X-Forwarded-For", 1},
		{"Forwarded from a peer outside TRUSTED_PROXIES", "10.0.0.0/8", "Forwarded", 1},
		{"X-Forwarded-For from a trusted proxy (control)", "127.0.0.1", "X-Forwarded-For", 0},
		{"no forwarding header (control)", "", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, func(s *setup) { s.trusted = c.trusted })
			for range 3 {
				r := request{method: "GET", path: "/api/health", header: map[string]string{}}
				if c.header != "" {
					r.header[c.header] = "203.0.113.7"
				}
				if resp := h.do(nil, r); resp.StatusCode != http.StatusOK {
					t.Fatalf("health %d", resp.StatusCode)
				}
			}
			if n := strings.Count(h.logs.String(), warning); n != c.want {
				t.Fatalf("warned %d times, want %d:\n%s", n, c.want, h.logs.String())
			}
		})
	}
}
