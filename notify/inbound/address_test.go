package inbound

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRecipient(t *testing.T) {
	domains := []string{"bounce.example.org", "Mail.Example.NET"}
	const id = "65a1b2c3d4e5f60718293a4b"
	tests := []struct {
		name string
		addr string
		want recipient
		err  error
	}{
		{"an un- address at a configured domain is accepted", "un-" + id + "-12345@bounce.example.org", recipient{kindUnsubscribe, id, "12345", "bounce.example.org"}, nil},
		{"a bn- address at the second domain is accepted, ignoring case", "bn-" + id + "-12345@mail.example.net", recipient{kindBounce, id, "12345", "mail.example.net"}, nil},
		{"the domain is compared ignoring case", "bn-" + id + "-1@BOUNCE.example.ORG", recipient{kindBounce, id, "1", "bounce.example.org"}, nil},
		{"the prefix is compared ignoring case", "UN-" + id + "-1@bounce.example.org", recipient{kindUnsubscribe, id, "1", "bounce.example.org"}, nil},
		{"an upper-case id is read as the same id", "bn-" + strings.ToUpper(id) + "-1@bounce.example.org", recipient{kindBounce, id, "1", "bounce.example.org"}, nil},
		{"a code may hold dashes and other atext", "bn-" + id + "-a-b_c.d+e@bounce.example.org", recipient{kindBounce, id, "a-b_c.d+e", "bounce.example.org"}, nil},
		{"an empty code is a code (a subscription without one)", "bn-" + id + "-@bounce.example.org", recipient{kindBounce, id, "", "bounce.example.org"}, nil},
		{"another domain is not relayed", "un-" + id + "-12345@example.com", recipient{}, errNoRelay},
		{"a subdomain of a configured domain is another domain", "un-" + id + "-12345@x.bounce.example.org", recipient{}, errNoRelay},
		{"an ordinary mailbox is refused", "postmaster@bounce.example.org", recipient{}, errNoMailbox},
		{"another prefix is refused", "undo-" + id + "-12345@bounce.example.org", recipient{}, errNoMailbox},
		{"a short id is refused", "un-1-12345@bounce.example.org", recipient{}, errNoMailbox},
		{"a non-hex id is refused", "un-" + strings.Repeat("z", 24) + "-12345@bounce.example.org", recipient{}, errNoMailbox},
		{"an id without a code part is refused", "un-" + id + "@bounce.example.org", recipient{}, errNoMailbox},
		{"a code with query syntax is refused", "un-" + id + `-{"$ne":1}@bounce.example.org`, recipient{}, errNoMailbox},
		{"a code with spaces is refused", "un-" + id + "-1 2@bounce.example.org", recipient{}, errNoMailbox},
		{"an overlong code is refused", "un-" + id + "-" + strings.Repeat("1", maxCodeLength+1) + "@bounce.example.org", recipient{}, errNoMailbox},
		{"an address without a domain is refused", "un-" + id + "-1", recipient{}, errNoMailbox},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRecipient(tc.addr, domains)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("parseRecipient(%q) = %+v, %v; want %+v, %v", tc.addr, got, err, tc.want, tc.err)
			}
		})
	}
	t.Run("no configured domain refuses everything", func(t *testing.T) {
		if _, err := parseRecipient("un-"+id+"-1@bounce.example.org", nil); !errors.Is(err, errNoRelay) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestRecipientStringRedactsTheCode(t *testing.T) {
	r := recipient{kindBounce, "65a1b2c3d4e5f60718293a4b", "s3cret", "example.org"}
	if s := r.String(); strings.Contains(s, "s3cret") || !strings.Contains(s, r.id) {
		t.Fatalf("String() = %q", s)
	}
}

func FuzzParseRecipient(f *testing.F) {
	f.Add("un-65a1b2c3d4e5f60718293a4b-12345@example.org")
	f.Add("bn-65a1b2c3d4e5f60718293a4b-@EXAMPLE.org")
	f.Add("x@@example.org")
	f.Fuzz(func(t *testing.T, addr string) {
		r, err := parseRecipient(addr, []string{"example.org"})
		if err != nil {
			return
		}
		if r.domain != "example.org" || len(r.id) != 24 || !isHex(r.id) || !isAtext(r.code) || len(r.code) > maxCodeLength ||
			(r.kind != kindUnsubscribe && r.kind != kindBounce) {
			t.Fatalf("accepted %q as %+v", addr, r)
		}
	})
}
