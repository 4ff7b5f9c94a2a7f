//go:build !race

// The race detector allocates on its own account: these counts hold
// without it only.

package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
	"github.com/govkit/govkit/internal/ratelimit"
)

// reusedWriter is a ResponseWriter whose header map is emptied, not
// made again, between requests: what a test counts is then the chain's
// allocations, not the writer's.
type reusedWriter struct {
	h      http.Header
	status int
}

func (w *reusedWriter) Header() http.Header         { return w.h }
func (w *reusedWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *reusedWriter) WriteHeader(code int)        { w.status = code }
func (w *reusedWriter) reset()                      { clear(w.h); w.status = 0 }

// The chain's own allocations, pinned per check (P9: none added beyond
// what the handler needs). A real server (New: the provider's client with
// its token cache, the memory counters, the JSON log handler) runs the
// checks that ask nothing of the store, so that what is counted is the
// chain's own. Check 4's identity read and check 3's key lookup are the
// store's (BenchmarkChain shows them with the rest).
func TestChainAllocations(t *testing.T) {
	idp := ssotest.New(t)
	oc, err := sso.New(sso.Config{Issuer: idp.Issuer, ClientID: idp.ClientID, ClientSecret: idp.ClientSecret, RedirectURL: "http://127.0.0.1:9/api/auth/callback"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "platform.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	counters := ratelimit.NewMemory(time.Minute)
	t.Cleanup(func() { counters.Close() })
	// Limits far above what the runs use: every request is let through
	// with Remaining in the millions (a number strconv would allocate for).
	rule := ratelimit.Rule{Limit: 1 << 30, Window: time.Hour}
	noop := func(http.ResponseWriter, *http.Request) {}
	s, err := New(Options{
		OIDC: oc, Store: store, Counters: counters, FrontendURL: "http://127.0.0.1:5173",
		CookieSecret: "0123456789abcdef0123456789abcdef-test",
		GlobalLimit:  rule, AuthLimit: rule, RefreshLimit: rule, APIKeyFailures: ratelimit.Rule{Limit: 5, Window: time.Minute},
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Routes: []Route{{Method: "GET", Pattern: "/alloc/public", Access: Public(), Handler: noop}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	token := idp.Mint(nil, idp.AccessClaims("alloc-user"))
	w := &reusedWriter{h: http.Header{}}

	// count is the allocations of one call of h, the writer emptied and
	// the request's state made fresh (outside the count) before each.
	count := func(t *testing.T, h http.Handler, r *http.Request, st *reqState) float64 {
		return testing.AllocsPerRun(200, func() {
			w.reset()
			if st != nil {
				st.ntext, st.cred, st.status = 0, credNone, 0
			}
			h.ServeHTTP(w, r)
			if w.status >= 400 {
				t.Fatalf("status %d", w.status)
			}
		})
	}
	// withState is r as ServeHTTP hands it to the checks.
	withState := func(r *http.Request) (*http.Request, *reqState) {
		st := &reqState{Context: context.Background(), ip: "192.0.2.7", limitKey: "192.0.2.7"}
		st.sw = statusWriter{ResponseWriter: w, st: st}
		st.req = *r.WithContext(st)
		return &st.req, st
	}
	route := &Route{Method: "GET", Pattern: "/alloc/any", Access: TokenOrAPIKey(), Handler: noop}
	next := http.HandlerFunc(noop)

	t.Run("the whole chain of a public route", func(t *testing.T) {
		// Check 1 and the log line included: the request state (which
		// holds the request's copy and the log line's attributes) and
		// nothing else.
		r := httptest.NewRequest("GET", "/alloc/public", nil)
		r.RemoteAddr = "192.0.2.7:40000"
		if n := count(t, s, r, nil); n != 1 {
			t.Errorf("%v allocations, want 1", n)
		}
	})
	t.Run("check 1, rate limit", func(t *testing.T) {
		r, st := withState(httptest.NewRequest("GET", "/alloc/any", nil))
		if n := count(t, s.rateLimit(route)(next), r, st); n != 0 {
			t.Errorf("%v allocations, want none", n)
		}
		if w.h.Get("X-Ratelimit-Remaining") == "" || w.h.Get("X-Ratelimit-Reset") != "3600" {
			t.Errorf("headers %v", w.h)
		}
	})
	t.Run("check 2, cookie", func(t *testing.T) {
		req := httptest.NewRequest("GET", "/alloc/any", nil)
		req.AddCookie(&http.Cookie{Name: cookieAccess, Value: token})
		r, st := withState(req)
		if n := count(t, s.tokenCheck(route)(next), r, st); n != 0 {
			t.Errorf("%v allocations, want none", n)
		}
		if st.cred != credCookie || st.token.Subject != "alloc-user" {
			t.Errorf("credential %v, subject %q", st.cred, st.token.Subject)
		}
	})
	t.Run("check 2, Bearer", func(t *testing.T) {
		req := httptest.NewRequest("GET", "/alloc/any", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		r, st := withState(req)
		if n := count(t, s.tokenCheck(route)(next), r, st); n != 0 {
			t.Errorf("%v allocations, want none", n)
		}
		if st.cred != credBearer {
			t.Errorf("credential %v", st.cred)
		}
	})
	t.Run("check 5, cookie write with its CSRF token", func(t *testing.T) {
		csrf := s.csrfToken(token, "refresh-token")
		req := httptest.NewRequest("POST", "/alloc/any", nil)
		req.AddCookie(&http.Cookie{Name: cookieAccess, Value: token})
		req.AddCookie(&http.Cookie{Name: cookieCSRF, Value: csrf})
		req.Header.Set("X-CSRF-Token", csrf)
		r, st := withState(req)
		reached := false
		h := s.csrfCheck(route)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
		n := testing.AllocsPerRun(200, func() {
			w.reset()
			st.cred, st.accessCookie = credCookie, token
			h.ServeHTTP(w, r)
		})
		if !reached || w.status != 0 {
			t.Fatalf("refused: %d", w.status)
		}
		if n != 0 {
			t.Errorf("%v allocations, want none", n)
		}
	})

	// Checks 3 and 4 ask the store; on SQLite its answers come from the
	// exact access cache once read, and with nothing committed its check
	// runs no statement (the WAL-index header): the checks then allocate
	// nothing either.
	ctx := context.Background()
	user, err := store.UpsertUser(ctx, docplatform.User{ID: "alloc-user", Email: "alloc@example.test"})
	if err != nil {
		t.Fatal(err)
	}
	group, err := store.CreateGroup(ctx, "alloc group", "", user.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetMembership(ctx, docplatform.Membership{UserID: user.ID, GroupID: group.ID, Role: docplatform.RoleMember}); err != nil {
		t.Fatal(err)
	}
	rawKey, prefix, hash := s.newAPIKey()
	if _, err := store.CreateAPIKey(ctx, docplatform.APIKey{GroupID: group.ID, Prefix: prefix, Hash: hash}); err != nil {
		t.Fatal(err)
	}
	groupRoute := &Route{Method: "GET", Pattern: "/alloc/groups/{groupId}", Access: Group(FromPath, "groupId", docplatform.RoleMember).WithAPIKey(), Handler: noop}
	groupRequest := func() *http.Request {
		r := httptest.NewRequest("GET", "/alloc/groups/"+group.ID, nil)
		r.SetPathValue("groupId", group.ID)
		return r
	}
	t.Run("checks 3 and 4, API key", func(t *testing.T) {
		req := groupRequest()
		req.Header.Set("X-API-Key", rawKey)
		r, st := withState(req)
		if n := count(t, s.apiKeyCheck(groupRoute)(s.identityCheck(groupRoute)(next)), r, st); n != 0 {
			t.Errorf("%v allocations, want none", n)
		}
		if st.cred != credAPIKey || st.identity.GroupRoles[group.ID] != docplatform.RoleMember {
			t.Errorf("credential %v, identity %+v", st.cred, st.identity)
		}
	})
	t.Run("check 4, a token's user", func(t *testing.T) {
		r, st := withState(groupRequest())
		h := s.identityCheck(groupRoute)(next)
		n := testing.AllocsPerRun(200, func() {
			w.reset()
			st.cred, st.token.Subject, st.resolved = credCookie, user.ID, false
			h.ServeHTTP(w, r)
			if w.status >= 400 {
				t.Fatalf("status %d", w.status)
			}
		})
		if n != 0 {
			t.Errorf("%v allocations, want none", n)
		}
		if !st.resolved || st.identity.UserID != user.ID {
			t.Errorf("identity %+v", st.identity)
		}
	})
}
