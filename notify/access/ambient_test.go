package access_test

import (
	"net/http/httptest"
	"testing"

	"github.com/govkit/govkit/notify/access"
)

func TestHostsOwn(t *testing.T) {
	h := access.NewHosts("https://notify.example.org:8443", "10.0.0.5", []string{"notify-internal", ".apps.example.net", "Notify.Example.COM:3000"})
	cases := []struct {
		host string
		own  bool
	}{
		{"notify.example.org", true},
		{"NOTIFY.example.org.:443", true},
		{"localhost:3000", true},
		{"127.0.0.1:3000", true},
		{"127.9.9.9", true},
		{"[::1]:3000", true},
		{"::ffff:127.0.0.1", true},
		{"10.0.0.5:3000", true},
		{"notify-internal", true},
		{"notify.example.com", true},
		{"apps.example.net", true},
		{"x.y.apps.example.net:80", true},
		{"evilapps.example.net", false},
		{"notify.example.org.evil.example", false},
		{"10.0.0.6", false},
		{"foo.localhost", false},
		{"", false},
	}
	for _, c := range cases {
		if got := h.Own(c.host); got != c.own {
			t.Errorf("Own(%q) = %v, want %v", c.host, got, c.own)
		}
	}
	if access.NewHosts("", "0.0.0.0", nil).Own("0.0.0.0") {
		t.Error("an unspecified listen address is a name of the service")
	}
}

func TestAmbient(t *testing.T) {
	id, err := access.New(access.Options{Hosts: access.NewHosts("https://notify.example.org", "", nil)})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		host    string
		headers map[string]string
		ambient bool
	}{
		{"a program's request, any Host", "notify.svc.cluster.local", nil, true},
		{"a same-origin fetch", "127.0.0.1:3000", map[string]string{"Sec-Fetch-Site": "same-origin"}, true},
		{"a typed address", "localhost:3000", map[string]string{"Sec-Fetch-Site": "none"}, true},
		{"a same-origin POST with its Origin", "127.0.0.1:3000", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:3000"}, true},
		{"httpHost's origin behind a proxy that rewrites Host", "localhost:3000", map[string]string{"Origin": "https://notify.example.org"}, true},
		{"an Origin with the default port spelled out is the same", "notify.example.org", map[string]string{"Origin": "https://notify.example.org:443"}, true},
		{"PowerShell's Mozilla User-Agent without Accept-Language is a program's", "notify.svc.cluster.local", map[string]string{"User-Agent": "Mozilla/5.0 (Windows NT; Windows NT 10.0; en-US) WindowsPowerShell/5.1"}, true},
		{"curl with Accept-Language is a program's", "notify.svc.cluster.local", map[string]string{"User-Agent": "curl/8.5.0", "Accept-Language": "en"}, true},
		{"a browser's GET over plain HTTP (no Sec-Fetch-*, no Origin) proves nothing", "notify.example.org", map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0", "Accept-Language": "en-CA"}, false},
		{"a cross-site request", "127.0.0.1:3000", map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{"a same-site request", "127.0.0.1:3000", map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{"an unknown Sec-Fetch-Site", "127.0.0.1:3000", map[string]string{"Sec-Fetch-Site": "SAME-ORIGIN"}, false},
		{"Sec-Fetch-Mode alone says nothing about the site", "127.0.0.1:3000", map[string]string{"Sec-Fetch-Mode": "navigate"}, false},
		{"a foreign Origin", "127.0.0.1:3000", map[string]string{"Origin": "http://evil.example"}, false},
		{"another port's Origin", "127.0.0.1:3000", map[string]string{"Origin": "http://127.0.0.1:8080"}, false},
		{"a null Origin", "127.0.0.1:3000", map[string]string{"Origin": "null"}, false},
		{"a same-origin request under a foreign name", "rebind.evil.example:3000", map[string]string{"Sec-Fetch-Site": "same-origin"}, false},
		{"a same-origin request with a foreign Origin", "127.0.0.1:3000", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://evil.example"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://"+c.host+"/api/administrators/whoami", nil)
			r.Host = c.host
			for k, v := range c.headers {
				r.Header.Set(k, v)
			}
			if got := id.Ambient(r); got != c.ambient {
				t.Fatalf("Ambient = %v, want %v", got, c.ambient)
			}
		})
	}
}
