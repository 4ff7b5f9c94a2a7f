package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/httpapi"
	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
	"github.com/govkit/govkit/internal/clientip"
	"github.com/govkit/govkit/internal/ratelimit"
)

const cookieSecret = "0123456789abcdef0123456789abcdef-test"

// testStore is a Store the tests can also arrange data in.
type testStore interface {
	httpapi.Store
	httpapi.Auditor
	ListAudit(ctx context.Context, f docplatform.AuditFilter) ([]docplatform.AuditEntry, error)
	createGroup(name string) string
	setMember(user, group string, role docplatform.Role)
	softDelete(group string)
	setAdmin(user string, admin bool)
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type harness struct {
	t        testing.TB
	idp      *ssotest.Provider
	oidc     *sso.Client
	store    testStore
	api      *httpapi.Server
	srv      *httptest.Server
	front    *httptest.Server
	frontHit chan *url.URL
	clock    *clock
	logs     *syncBuffer
	counters ratelimit.Store
}

// setup knobs
type setup struct {
	t        testing.TB
	store    testStore
	counters ratelimit.Store
	trusted  string
	secure   bool
	global   int
	auth     int
	refresh  int
	failures int
	maxBody  int64
	// routeMaxBody is Options.RouteMaxBody.
	routeMaxBody map[string]int64
	// idp changes the test provider's discovery and authorization response.
	idp ssotest.Options
	// ipv6Prefix is Options.IPv6LimitPrefix (0: its default).
	ipv6Prefix int
}

func newHarness(t testing.TB, opts ...func(*setup)) *harness {
	t.Helper()
	cfg := setup{t: t, global: 1000, auth: 1000, refresh: 1000, failures: 20}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.store == nil {
		cfg.store = sqliteStore(t)
	}
	if cfg.counters == nil {
		m := ratelimit.NewMemory(time.Minute)
		t.Cleanup(func() { m.Close() })
		cfg.counters = m
	}
	h := &harness{t: t, idp: ssotest.New(t, cfg.idp), store: cfg.store, clock: &clock{t: time.Now()}, logs: &syncBuffer{}, frontHit: make(chan *url.URL, 16), counters: cfg.counters}
	h.front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case h.frontHit <- r.URL:
		default:
		}
		io.WriteString(w, "frontend")
	}))
	t.Cleanup(h.front.Close)

	var handler http.Handler
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(h.srv.Close)

	oc, err := sso.New(sso.Config{Issuer: h.idp.Issuer, ClientID: h.idp.ClientID, ClientSecret: h.idp.ClientSecret, RedirectURL: h.srv.URL + "/api/auth/callback"})
	if err != nil {
		t.Fatal(err)
	}
	h.oidc = oc
	resolver, err := clientip.Parse(cfg.trusted)
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(httpapi.Options{
		OIDC: oc, Store: cfg.store, FrontendURL: h.front.URL, SecureCookies: cfg.secure, CookieSecret: cookieSecret,
		GlobalLimit:    ratelimit.Rule{Limit: cfg.global, Window: time.Minute},
		AuthLimit:      ratelimit.Rule{Limit: cfg.auth, Window: time.Minute},
		RefreshLimit:   ratelimit.Rule{Limit: cfg.refresh, Window: time.Minute},
		APIKeyFailures: ratelimit.Rule{Limit: cfg.failures, Window: time.Minute},
		Counters:       cfg.counters, ClientIP: resolver, IPv6LimitPrefix: cfg.ipv6Prefix,
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    h.clock.Now, MaxBody: cfg.maxBody, RouteMaxBody: cfg.routeMaxBody, LastUseFlush: 20 * time.Millisecond,
		Routes: probeRoutes(), Audit: cfg.store,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.api = api
	handler = conform(t, api)
	t.Cleanup(func() { api.Close(context.Background()) })
	return h
}

// probeRoutes cover every access level the seed names, with handlers that
// echo the identity the chain resolved.
func probeRoutes() []httpapi.Route {
	echo := func(w http.ResponseWriter, r *http.Request) {
		id := httpapi.IdentityFrom(r.Context())
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(id)
	}
	return []httpapi.Route{
		{Method: "GET", Pattern: "/test/public", Access: httpapi.Public(), Handler: echo},
		{Method: "GET", Pattern: "/test/authenticated", Access: httpapi.Authenticated(), Handler: echo},
		{Method: "POST", Pattern: "/test/authenticated", Access: httpapi.Authenticated(), Handler: echo},
		{Method: "GET", Pattern: "/test/any", Access: httpapi.TokenOrAPIKey(), Handler: echo},
		{Method: "POST", Pattern: "/test/any", Access: httpapi.TokenOrAPIKey(), Handler: echo},
		{Method: "GET", Pattern: "/test/admin", Access: httpapi.SystemAdmin(), Handler: echo},
		{Method: "DELETE", Pattern: "/test/admin/users/{id}", Access: httpapi.Access{Level: httpapi.LevelSystemAdmin, APIKey: true}, Handler: echo},
		{Method: "GET", Pattern: "/test/groups/{groupId}", Access: httpapi.Group(httpapi.FromPath, "groupId", ""), Handler: echo},
		{Method: "PUT", Pattern: "/test/groups/{groupId}", Access: httpapi.Group(httpapi.FromPath, "groupId", docplatform.RoleAdmin), Handler: echo},
		{Method: "GET", Pattern: "/test/documents", Access: httpapi.Group(httpapi.FromQuery, "groupId", docplatform.RoleMember).WithAPIKey(), Handler: echo},
		{Method: "POST", Pattern: "/test/documents", Access: httpapi.Group(httpapi.FromBody, "groupId", docplatform.RoleMember).WithAPIKey(), Handler: echo},
	}
}

func noRedirect(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func newJar(t testing.TB) *cookiejar.Jar {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return jar
}

// login runs the whole browser flow with a cookie jar that follows the
// redirects: platform → provider → platform callback → frontend.
func (h *harness) login(user ssotest.User) *http.Client {
	h.t.Helper()
	h.idp.SetUser(user)
	c := &http.Client{Jar: newJar(h.t)}
	resp, err := c.Get(h.srv.URL + "/api/auth/login")
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.String() != h.front.URL {
		h.t.Fatalf("login ended at %s with %s", resp.Request.URL, resp.Status)
	}
	return c
}

func (h *harness) url(path string) string { return h.srv.URL + path }

// cookie returns the value of a cookie the jar would send to path.
func (h *harness) cookie(c *http.Client, path, name string) string {
	u, _ := url.Parse(h.srv.URL + path)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

type request struct {
	method, path string
	body         string
	header       map[string]string
}

func (h *harness) do(c *http.Client, r request) *http.Response {
	h.t.Helper()
	if c == nil {
		c = noRedirect(nil)
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, h.url(r.path), body)
	if err != nil {
		h.t.Fatal(err)
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readJSON(t testing.TB, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
}

type errBody struct {
	StatusCode int    `json:"statusCode"`
	Message    string `json:"message"`
	Error      string `json:"error"`
}

func setCookies(resp *http.Response) map[string][]*http.Cookie {
	out := map[string][]*http.Cookie{}
	for _, c := range resp.Cookies() {
		out[c.Name] = append(out[c.Name], c)
	}
	return out
}

var ada = ssotest.User{Subject: "user-ada", Email: "ada@example.org", Name: "Ada Lovelace", PreferredUsername: "ada"}
var bob = ssotest.User{Subject: "user-bob", Email: "bob@example.org", Name: "Bob", PreferredUsername: "bob"}

func encodeStd(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
