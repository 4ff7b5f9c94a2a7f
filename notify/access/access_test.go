package access_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/access"
)

type tokens map[string]*notify.AccessToken

func (t tokens) FindByID(_ context.Context, id string) (*notify.AccessToken, error) {
	if tok, ok := t[id]; ok {
		return tok, nil
	}
	return nil, notify.ErrNotFound
}

func TestParsePrefixes(t *testing.T) {
	cases := []struct {
		name string
		in   []string
		ok   bool
	}{
		{"single IPv4 address", []string{"127.0.0.1"}, true},
		{"CIDR range", []string{"10.0.0.0/8"}, true},
		{"IPv6 and mapped forms", []string{"::1", "::ffff:127.0.0.1"}, true},
		{"everyone", []string{"0.0.0.0/0"}, true},
		{"a host name is refused", []string{"localhost"}, false},
		{"a bad mask is refused", []string{"10.0.0.0/99"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := access.ParsePrefixes(c.in)
			if (err == nil) != c.ok {
				t.Fatalf("err %v", err)
			}
		})
	}
}

func TestIdentify(t *testing.T) {
	uid := notify.NewID()
	ttl := int64(10)
	id, err := access.New(access.Options{
		AdminIPs:                  []string{"127.0.0.1", "10.1.0.0/16"},
		SiteMinderReverseProxyIPs: []string{"192.168.1.1"},
		Tokens: tokens{
			"good":    {ID: "good", UserID: uid, Created: time.Now()},
			"expired": {ID: "expired", UserID: uid, TTL: &ttl, Created: time.Now().Add(-time.Minute)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		remote  string
		url     string
		headers map[string]string
		role    notify.Role
		sid     string
	}{
		{"admin address", "127.0.0.1:5000", "/", nil, notify.RoleSuperAdmin, "127.0.0.1"},
		{"admin range", "10.1.2.3:5000", "/", nil, notify.RoleSuperAdmin, "10.1.2.3"},
		{"IPv4-mapped admin address", "[::ffff:127.0.0.1]:5000", "/", nil, notify.RoleSuperAdmin, "127.0.0.1"},
		{"other address", "8.8.8.8:5000", "/", nil, notify.RoleAnonymous, "8.8.8.8"},
		{"is_anonymous on an admin address", "127.0.0.1:5000", "/", map[string]string{"is_anonymous": "1"}, notify.RoleAnonymous, "127.0.0.1"},
		{"SiteMinder header from the SiteMinder proxy", "192.168.1.1:5000", "/", map[string]string{"sm_user": "bob"}, notify.RoleAuthenticatedUser, "bob"},
		{"SiteMinder header from elsewhere is ignored", "8.8.8.8:5000", "/", map[string]string{"sm_user": "bob"}, notify.RoleAnonymous, "8.8.8.8"},
		{"an empty SiteMinder header still downgrades an admin address", "127.0.0.1:5000", "/", map[string]string{"smgov_userdisplayname": ""}, notify.RoleAnonymous, "127.0.0.1"},
		{"access token in the header", "8.8.8.8:5000", "/", map[string]string{"Authorization": "good"}, notify.RoleAdmin, uid.Hex()},
		{"access token in the query", "8.8.8.8:5000", "/?access_token=good", nil, notify.RoleAdmin, uid.Hex()},
		{"expired access token", "8.8.8.8:5000", "/", map[string]string{"Authorization": "expired"}, notify.RoleAnonymous, "8.8.8.8"},
		{"a bearer header is not looked up as an access token", "8.8.8.8:5000", "/", map[string]string{"Authorization": "Bearer good"}, notify.RoleAnonymous, "8.8.8.8"},
		{"a token wins over the admin address", "127.0.0.1:5000", "/", map[string]string{"Authorization": "good"}, notify.RoleAdmin, uid.Hex()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", c.url, nil)
			r.RemoteAddr = c.remote
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			p := id.Identify(r)
			if p.Role != c.role || p.SecurityID != c.sid {
				t.Fatalf("got %+v", p)
			}
		})
	}
}

func TestCallerDefaultsToAnonymous(t *testing.T) {
	if p := access.Caller(context.Background()); p.Role != notify.RoleAnonymous {
		t.Fatalf("got %+v", p)
	}
}

func BenchmarkIdentify(b *testing.B) {
	id, err := access.New(access.Options{AdminIPs: []string{"10.0.0.0/8", "127.0.0.1"}, SiteMinderReverseProxyIPs: []string{"127.0.0.1"}})
	if err != nil {
		b.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/api/subscriptions", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	r.Header.Set("sm_user", "bob")
	b.ReportAllocs()
	for b.Loop() {
		if p := id.Identify(r); p.Role != notify.RoleAuthenticatedUser {
			b.Fatal(p)
		}
	}
}

func TestScheme(t *testing.T) {
	id, err := access.New(access.Options{TrustedReverseProxyIPs: []string{"10.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, remote, proto, want string
	}{
		{"plain request", "8.8.8.8:1", "", "http"},
		{"X-Forwarded-Proto from a trusted proxy", "10.0.0.1:1", "https", "https"},
		{"X-Forwarded-Proto from anyone else is ignored", "8.8.8.8:1", "https", "http"},
		{"the first of a list counts", "10.0.0.1:1", "https, http", "https"},
		{"other values are ignored", "10.0.0.1:1", "javascript", "http"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			if c.proto != "" {
				r.Header.Set("X-Forwarded-Proto", c.proto)
			}
			var got string
			id.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = access.Scheme(r) })).ServeHTTP(httptest.NewRecorder(), r)
			if got != c.want {
				t.Fatalf("got %q", got)
			}
		})
	}
}
