package outbound

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
)

func TestCheck(t *testing.T) {
	tr, err := New(Policy{Allow: []string{"10.9.0.0/16", "169.254.169.254"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr, kind string
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"239.1.2.3", "multicast or broadcast"},
		{"224.0.0.1", "link-local"},
		{"ff05::2", "multicast or broadcast"},
		{"255.255.255.255", "multicast or broadcast"},
		{"10.0.0.1", "private"},
		{"172.16.5.5", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "private"},
		{"fd00::1", "private"},
		{"10.9.1.1", ""},        // allowed network
		{"169.254.169.254", ""}, // allowed address
		{"93.184.216.34", ""},
		{"2606:4700::1111", ""},
	} {
		err := tr.check("h", netip.MustParseAddr(tc.addr))
		var re *RefusedError
		switch {
		case tc.kind == "" && err != nil:
			t.Errorf("%s refused: %v", tc.addr, err)
		case tc.kind != "" && (!errors.As(err, &re) || re.Kind != tc.kind):
			t.Errorf("%s: %v, want refused as %s", tc.addr, err, tc.kind)
		}
	}
	t.Run("private networks can be admitted", func(t *testing.T) {
		tr, _ := New(Policy{AllowPrivateNetworks: true})
		if err := tr.check("h", netip.MustParseAddr("10.0.0.1")); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAProxiedRequestsTargetIsChecked(t *testing.T) {
	tr, err := New(Policy{Allow: []string{"proxy.internal", "feeds.internal"}})
	if err != nil {
		t.Fatal(err)
	}
	tr.proxy = func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.internal:3128") }
	tr.resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")}, nil
	}
	for _, target := range []string{"http://127.0.0.1:3000/api", "http://[::1]/", "http://rebinds.example/"} {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		if _, err := tr.RoundTrip(req); !errors.Is(err, ErrRefused) {
			t.Errorf("%s through the proxy: %v, want refused", target, err)
		}
	}
	if err := tr.checkTarget(context.Background(), "feeds.internal"); err != nil {
		t.Errorf("an admitted name: %v", err)
	}
}
