package outbound_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/outbound"
)

// server is a real HTTP server on a loopback address of its own (Linux
// routes all of 127/8 to the loopback interface) that records what it is
// asked.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string // "METHOD path body is_anonymous"
}

func listen(t *testing.T, ip string, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	s.Server = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Method+" "+r.URL.Path+" "+string(b)+" "+r.Header.Get("is_anonymous"))
		s.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	})}}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

func transport(t *testing.T, p outbound.Policy) *outbound.Transport {
	t.Helper()
	tr, err := outbound.New(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func redirectTo(target string, code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target, code) }
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	res, err := c.Get(url)
	if err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	return res, err
}

func TestLoopbackIsRefusedUnlessAllowed(t *testing.T) {
	inside := listen(t, "127.0.0.1", nil)
	c := transport(t, outbound.Policy{AllowPrivateNetworks: true}).Client(10 * time.Second)
	for _, url := range []string{inside.URL + "/api", strings.Replace(inside.URL, "127.0.0.1", "localhost", 1) + "/api"} {
		_, err := get(t, c, url)
		var re *outbound.RefusedError
		if !errors.Is(err, outbound.ErrRefused) || !errors.As(err, &re) || re.Kind != "loopback" {
			t.Fatalf("GET %s: %v, want a refused loopback address", url, err)
		}
	}
	if got := inside.requests(); len(got) != 0 {
		t.Fatalf("the loopback server was asked %v", got)
	}
	t.Run("an allowed address is reached, marked as the service's own", func(t *testing.T) {
		c := transport(t, outbound.Policy{Allow: []string{"127.0.0.1"}}).Client(10 * time.Second)
		if res, err := get(t, c, inside.URL+"/feed"); err != nil || res.StatusCode != 200 {
			t.Fatalf("%v %v", res, err)
		}
		if got := inside.requests(); len(got) != 1 || got[0] != "GET /feed  true" {
			t.Fatalf("requests %q", got)
		}
	})
}

func TestLinkLocalAndUnspecifiedAreRefusedBeforeConnecting(t *testing.T) {
	c := transport(t, outbound.Policy{AllowPrivateNetworks: true}).Client(10 * time.Second)
	for url, kind := range map[string]string{
		"http://169.254.169.254/latest/meta-data/": "link-local",
		"http://[fe80::1%25lo]/":                   "link-local",
		"http://0.0.0.0/":                          "unspecified",
		"http://[::]/":                             "unspecified",
		"http://[::ffff:127.0.0.1]/":               "loopback",
	} {
		_, err := get(t, c, url)
		var re *outbound.RefusedError
		if !errors.As(err, &re) || re.Kind != kind {
			t.Errorf("GET %s: %v, want refused as %s", url, err, kind)
		}
	}
}

func TestRedirectsAreCheckedAtEveryHop(t *testing.T) {
	// The service's own API on 127.0.0.1; a feed host on 127.0.0.2 that an
	// operator admitted, by address or by name, redirects into it.
	api := listen(t, "127.0.0.1", nil)
	target := api.URL + "/api/subscriptions/x/unsubscribe?additionalServices=_all"
	feedHost := listen(t, "127.0.0.2", redirectTo(target, http.StatusFound))
	for _, tc := range []struct {
		name, allow, url string
	}{
		{"admitted by address", "127.0.0.2/32", feedHost.URL + "/rss"},
		{"admitted by name", "localhost", strings.Replace(feedHost.URL, "127.0.0.2", "localhost", 1) + "/rss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.allow == "localhost" {
				// localhost names 127.0.0.1 here; the admitted host
				// itself is served at 127.0.0.1, and redirects to the
				// API by its address.
				feedHost = listen(t, "127.0.0.1", redirectTo(target, http.StatusFound))
				tc.url = strings.Replace(feedHost.URL, "127.0.0.1", "localhost", 1) + "/rss"
			}
			c := transport(t, outbound.Policy{Allow: []string{tc.allow}}).Client(10 * time.Second)
			_, err := get(t, c, tc.url)
			if !errors.Is(err, outbound.ErrRefused) {
				t.Fatalf("GET %s: %v, want the redirect refused", tc.url, err)
			}
			if got := api.requests(); len(got) != 0 {
				t.Fatalf("the API was asked %v", got)
			}
			if got := feedHost.requests(); len(got) != 1 {
				t.Fatalf("the admitted host was asked %v", got)
			}
		})
	}
	t.Run("a redirect within the admitted host is followed", func(t *testing.T) {
		moved := listen(t, "127.0.0.2", nil)
		hop := listen(t, "127.0.0.2", redirectTo(moved.URL+"/rss", http.StatusMovedPermanently))
		c := transport(t, outbound.Policy{Allow: []string{"127.0.0.2"}}).Client(10 * time.Second)
		if res, err := get(t, c, hop.URL+"/old"); err != nil || res.StatusCode != 200 {
			t.Fatalf("%v %v", res, err)
		}
		if got := moved.requests(); len(got) != 1 || got[0] != "GET /rss  true" {
			t.Fatalf("requests %q", got)
		}
	})
}

func TestAPOSTIsNeverTurnedIntoAGET(t *testing.T) {
	receiver := listen(t, "127.0.0.2", nil)
	c := transport(t, outbound.Policy{Allow: []string{"127.0.0.2"}}).Client(10 * time.Second)
	post := func(url string) error {
		res, err := c.Post(url, "application/json", strings.NewReader(`{"id":"n1"}`))
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		hop := listen(t, "127.0.0.2", redirectTo(receiver.URL+"/moved", code))
		if err := post(hop.URL + "/hook"); !errors.Is(err, outbound.ErrMethodChange) {
			t.Fatalf("%d: %v, want ErrMethodChange", code, err)
		}
	}
	if got := receiver.requests(); len(got) != 0 {
		t.Fatalf("the redirect target was asked %v", got)
	}
	t.Run("307 and 308 repeat the POST with its body", func(t *testing.T) {
		for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
			hop := listen(t, "127.0.0.2", redirectTo(receiver.URL+"/moved", code))
			if err := post(hop.URL + "/hook"); err != nil {
				t.Fatalf("%d: %v", code, err)
			}
		}
		if got := receiver.requests(); len(got) != 2 || got[0] != `POST /moved {"id":"n1"} true` || got[1] != got[0] {
			t.Fatalf("requests %q", got)
		}
	})
}

func TestParseAllow(t *testing.T) {
	nets, hosts, err := outbound.ParseAllow([]string{"10.1.0.0/16", "127.0.0.1", "::1", "Feeds.Internal.Example.", "localhost"})
	if err != nil || len(nets) != 3 || !hosts["feeds.internal.example"] || !hosts["localhost"] {
		t.Fatalf("%v %v %v", nets, hosts, err)
	}
	for _, bad := range []string{"http://x", "10.0.0.0/33", "a..b", "*.example.org", ""} {
		if _, _, err := outbound.ParseAllow([]string{"localhost", bad}); err == nil || !strings.Contains(err.Error(), "[1]") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
