package clientip_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/clientip"
)

func TestClientIP(t *testing.T) {
	cases := []struct {
		name    string
		trusted string
		remote  string
		xff     []string
		want    string
	}{
		{"no trusted proxies: socket address, header ignored", "", "203.0.113.7:5555", []string{"198.51.100.1"}, "203.0.113.7"},
		{"untrusted peer: spoofed header ignored", "10.0.0.0/8", "203.0.113.7:5555", []string{"198.51.100.1"}, "203.0.113.7"},
		{"trusted peer without header: the peer", "10.0.0.0/8", "10.1.2.3:80", nil, "10.1.2.3"},
		{"trusted peer: rightmost untrusted hop is the client", "10.0.0.0/8", "10.1.2.3:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"spoofed left entries are skipped past the first untrusted hop", "10.0.0.0/8", "10.1.2.3:80", []string{"1.1.1.1, 198.51.100.1"}, "198.51.100.1"},
		{"chain of trusted proxies is walked", "10.0.0.0/8, 192.168.0.0/16", "10.1.2.3:80", []string{"198.51.100.1, 192.168.5.5, 10.9.9.9"}, "198.51.100.1"},
		{"several header lines form one list", "10.0.0.0/8", "10.1.2.3:80", []string{"1.1.1.1", "198.51.100.1, 10.2.2.2"}, "198.51.100.1"},
		{"all hops trusted: the leftmost", "10.0.0.0/8", "10.1.2.3:80", []string{"10.5.5.5, 10.6.6.6"}, "10.5.5.5"},
		{"garbage hop stops the walk at the last checked address", "10.0.0.0/8", "10.1.2.3:80", []string{"1.1.1.1, not-an-ip"}, "10.1.2.3"},
		{"single trusted address without prefix length", "10.1.2.3", "10.1.2.3:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"IPv6 peer and hop", "fd00::/8", "[fd00::1]:443", []string{"2001:db8::5"}, "2001:db8::5"},
		{"IPv4-mapped IPv6 peer counts as IPv4", "127.0.0.0/8", "[::ffff:127.0.0.1]:1", []string{"198.51.100.9"}, "198.51.100.9"},
		{"hop with port", "10.0.0.0/8", "10.1.2.3:80", []string{"198.51.100.1:4711"}, "198.51.100.1"},
		{"bracketed IPv6 hop with port", "10.0.0.0/8", "10.1.2.3:80", []string{"[2001:db8::5]:4711"}, "2001:db8::5"},
		{"quoted hop (RFC 7239 style) is read", "10.0.0.0/8", "10.1.2.3:80", []string{`"198.51.100.1"`}, "198.51.100.1"},
		{"empty entries are no hops", "10.0.0.0/8", "10.1.2.3:80", []string{"198.51.100.1,, ", ""}, "198.51.100.1"},
		{"tabs and spaces around entries", "10.0.0.0/8", "10.1.2.3:80", []string{"1.1.1.1,\t198.51.100.1 ,\t10.2.2.2"}, "198.51.100.1"},
		{"garbage left of the client is never reached", "10.0.0.0/8", "10.1.2.3:80", []string{"<script>, unknown, 198.51.100.1"}, "198.51.100.1"},
		{"unknown written by a trusted proxy stops at that proxy", "10.0.0.0/8", "10.1.2.3:80", []string{"198.51.100.1, unknown"}, "10.1.2.3"},
		{"IPv6 client behind an IPv4 proxy", "10.0.0.0/8", "10.1.2.3:80", []string{"2001:db8::7"}, "2001:db8::7"},
		{"IPv4-mapped hop is reported as IPv4", "10.0.0.0/8", "10.1.2.3:80", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"IPv4-mapped trusted prefix trusts IPv4 proxies", "::ffff:10.0.0.0/104", "10.1.2.3:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"a hop spoofed as a trusted proxy left of the client changes nothing", "10.0.0.0/8", "10.1.2.3:80", []string{"10.9.9.9, 198.51.100.1"}, "198.51.100.1"},
		{"peer without port (unix socket shim)", "", "198.51.100.3", nil, "198.51.100.3"},
		{"untrusted IPv4-mapped peer is reported as IPv4", "", "[::ffff:203.0.113.7]:5555", nil, "203.0.113.7"},
		{"untrusted IPv6 peer in its canonical form", "", "[2001:0db8:0:0::1]:5555", nil, "2001:db8::1"},
		{"untrusted bracketed IPv4 peer", "", "[203.0.113.7]:5555", nil, "203.0.113.7"},
		{"untrusted IPv4 peer, shortest and longest", "", "0.0.0.0:1", nil, "0.0.0.0"},
		{"untrusted IPv4 peer, longest", "", "255.255.255.255:65535", nil, "255.255.255.255"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := clientip.Parse(c.trusted)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = c.remote
			for _, v := range c.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			if got := r.ClientIP(req); got != c.want {
				t.Errorf("ClientIP = %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseRejectsBadCIDR(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "nonsense", "10.0.0.0/8, x"} {
		if _, err := clientip.Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// Over a real loopback connection: the peer is 127.0.0.1, so the header only
// counts when loopback is a trusted proxy.
func TestOverLoopback(t *testing.T) {
	for _, c := range []struct {
		name, trusted, want string
	}{
		{"untrusted loopback peer: spoofed header ignored", "", "127.0.0.1"},
		{"trusted loopback proxy: header believed", "127.0.0.0/8", "198.51.100.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := clientip.Parse(c.trusted)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				io.WriteString(w, r.ClientIP(req))
			}))
			defer srv.Close()
			req, _ := http.NewRequest("GET", srv.URL, nil)
			req.Header.Set("X-Forwarded-For", "198.51.100.1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if string(b) != c.want {
				t.Errorf("client ip %q, want %q", b, c.want)
			}
		})
	}
}

// Whatever the header says, the answer is an address from the request (the
// peer or one of the header's entries) and nothing panics.
func FuzzClientIP(f *testing.F) {
	f.Add("10.0.0.0/8", "10.1.2.3:80", "198.51.100.1, 10.2.2.2")
	f.Add("", "203.0.113.7:5555", "1.1.1.1")
	f.Add("fd00::/8", "[fd00::1]:443", "[2001:db8::5]:80, ,x")
	f.Fuzz(func(t *testing.T, trusted, remote, xff string) {
		r, err := clientip.Parse(trusted)
		if err != nil {
			return
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = remote
		req.Header.Set("X-Forwarded-For", xff)
		got := r.ClientIP(req)
		if got == "" && remote != "" {
			t.Fatalf("empty client IP for remote %q", remote)
		}
		if want := referenceClientIP(r, req); got != want {
			t.Fatalf("trusted %q, remote %q, X-Forwarded-For %q: %q, the plain walk says %q", trusted, remote, xff, got, want)
		}
	})
}

// referenceClientIP is the walk of X-Forwarded-For as it was written
// before ClientIP cut the entries in place: the header split into its
// entries, the answer formatted by String. ClientIP must agree with it.
func referenceClientIP(r *clientip.Resolver, req *http.Request) string {
	parseHostPort := clientip.ParseHostPort
	peer, ok := parseHostPort(req.RemoteAddr)
	if !ok {
		return req.RemoteAddr
	}
	if !r.Trusts(peer) {
		return peer.String()
	}
	client := peer
	values := req.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		entries := strings.Split(values[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			if strings.TrimSpace(entries[j]) == "" {
				continue
			}
			s := strings.Trim(strings.TrimSpace(entries[j]), `"`)
			if s == "" {
				return client.String()
			}
			a, err := netip.ParseAddr(s)
			if err == nil {
				a = a.Unmap()
			} else if a, ok = parseHostPort(s); !ok {
				return client.String()
			}
			client = a
			if !r.Trusts(a) {
				return a.String()
			}
		}
	}
	return client.String()
}

// The table's cases and some hostile headers agree with the plain walk.
func TestClientIPAgreesWithThePlainWalk(t *testing.T) {
	trusted := []string{"", "10.0.0.0/8", "10.0.0.0/8, fd00::/8", "0.0.0.0/0, ::/0"}
	remotes := []string{"10.1.2.3:80", "[fd00::1]:443", "203.0.113.7:5555", "[::ffff:10.0.0.1]:1", "garbage"}
	xffs := []string{"", ",", " , ,", "198.51.100.1", "1.1.1.1, 198.51.100.1", `"198.51.100.1", 10.0.0.2`,
		"2001:db8::5, 10.0.0.2", "2001:DB8:0::5", "198.051.100.1", "[2001:db8::5]:80", "fe80::1%eth0",
		"10.0.0.1,10.0.0.2,,10.0.0.3", "unknown, 10.0.0.9", "::ffff:198.51.100.1", " 198.51.100.1\t"}
	for _, tr := range trusted {
		r, err := clientip.Parse(tr)
		if err != nil {
			t.Fatal(err)
		}
		for _, remote := range remotes {
			for _, x := range xffs {
				for _, y := range []string{"", "10.9.9.9", "203.0.113.9, 10.0.0.4"} {
					req := httptest.NewRequest("GET", "/", nil)
					req.RemoteAddr = remote
					for _, v := range []string{y, x} {
						if v != "" {
							req.Header.Add("X-Forwarded-For", v)
						}
					}
					if got, want := r.ClientIP(req), referenceClientIP(r, req); got != want {
						t.Errorf("trusted %q, remote %q, X-Forwarded-For %q: %q, want %q", tr, remote, req.Header.Values("X-Forwarded-For"), got, want)
					}
				}
			}
		}
	}
}

// Behind a trusted proxy, a client address the proxy wrote in its
// canonical form is that text: no allocation per request either.
func TestClientIPBehindAProxyAllocatesNothing(t *testing.T) {
	r, err := clientip.Parse("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ xff, want string }{
		{"1.1.1.1, 198.51.100.1, 10.2.2.2", "198.51.100.1"},
		{"2001:db8::5", "2001:db8::5"},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = "10.1.2.3:80"
		req.Header.Set("X-Forwarded-For", c.xff)
		if n := testing.AllocsPerRun(100, func() {
			if got := r.ClientIP(req); got != c.want {
				t.Fatalf("%q: %q", c.xff, got)
			}
		}); n != 0 {
			t.Errorf("%q: %v allocations per call", c.xff, n)
		}
	}
}

func TestLimitKey(t *testing.T) {
	cases := []struct {
		name string
		addr string
		bits int
		want string
	}{
		{"IPv4 is the address", "198.51.100.7", 64, "198.51.100.7"},
		{"IPv4 ignores the IPv6 prefix length", "198.51.100.7", 32, "198.51.100.7"},
		{"IPv4-mapped IPv6 is unmapped", "::ffff:198.51.100.7", 64, "198.51.100.7"},
		{"IPv4-mapped IPv6 with 128 bits is unmapped", "::ffff:198.51.100.7", 128, "198.51.100.7"},
		{"IPv6 keyed by its /64", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64, "2001:db8:1:2::/64"},
		{"two hosts of one /64 share the key", "2001:db8:1:2::1", 64, "2001:db8:1:2::/64"},
		{"neighbouring /64 gets its own key", "2001:db8:1:3::1", 64, "2001:db8:1:3::/64"},
		{"IPv6 keyed by a /48", "2001:db8:1:2::1", 48, "2001:db8:1::/48"},
		{"IPv6 keyed by a /56 not on a group boundary", "2001:db8:1:2ff::1", 56, "2001:db8:1:200::/56"},
		{"IPv6 with 128 bits is the address", "2001:db8:1:2::1", 128, "2001:db8:1:2::1"},
		{"IPv6 with 128 bits is canonical", "2001:0DB8:0:0::0001", 128, "2001:db8::1"},
		{"loopback /64", "::1", 64, "::/64"},
		{"zone dropped", "fe80::1%eth0", 64, "fe80::/64"},
		{"zone dropped with 128 bits", "fe80::1%eth0", 128, "fe80::1"},
		{"bits above 128 clamp to the address", "2001:db8::1", 200, "2001:db8::1"},
		{"negative bits clamp to /0", "2001:db8::1", -1, "::/0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := clientip.LimitKey(netip.MustParseAddr(c.addr), c.bits); got != c.want {
				t.Errorf("LimitKey(%s, %d) = %q, want %q", c.addr, c.bits, got, c.want)
			}
		})
	}
}

// The client address of a request from an IPv4 peer is read from the
// connection's address as it stands: no allocation per request.
func TestClientIPOfAnIPv4PeerAllocatesNothing(t *testing.T) {
	r, err := clientip.Parse("")
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "203.0.113.7:5555"
	if n := testing.AllocsPerRun(100, func() {
		if r.ClientIP(req) != "203.0.113.7" {
			t.Fatal("wrong address")
		}
	}); n != 0 {
		t.Errorf("%v allocations per call", n)
	}
}

func TestUntrustedForwarding(t *testing.T) {
	r, err := clientip.New([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		remote string
		header string
		want   bool
	}{
		{"no forwarding header", "192.0.2.1:5000", "", false},
		{"X-Forwarded-For from a trusted proxy", "10.1.2.3:5000", "X-Forwarded-For", false},
		{"X-Forwarded-For from anyone else", "192.0.2.1:5000", "X-Forwarded-For", true},
		{"Forwarded from anyone else", "[2001:db8::1]:5000", "Forwarded", true},
		{"an unparsable peer says nothing", "pipe", "X-Forwarded-For", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = c.remote
			if c.header != "" {
				req.Header.Set(c.header, "for=198.51.100.1")
			}
			if _, got := r.UntrustedForwarding(req); got != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = "192.0.2.1:5000"
	if n := testing.AllocsPerRun(100, func() { r.UntrustedForwarding(req) }); n != 0 {
		t.Errorf("a request without forwarding headers costs %v allocations", n)
	}
}
