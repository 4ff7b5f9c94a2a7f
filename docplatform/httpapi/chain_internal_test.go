package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/clientip"
)

// The request state is the request's context: values of the context it
// wraps (the server's, a caller's) stay visible, cancellation passes
// through, and contexts derived from it still find the state.
func TestRequestStateIsTheRequestsContext(t *testing.T) {
	type outerKey struct{}
	resolver, err := clientip.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{o: Options{ClientIP: resolver, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), IPv6LimitPrefix: 64, MaxHeaderBytes: DefaultMaxHeaderBytes}, mux: http.NewServeMux(), metrics: NewMetrics()}
	var checked bool
	s.mux.HandleFunc("GET /probe", func(w http.ResponseWriter, r *http.Request) {
		checked = true
		st := state(r)
		if st.ip != "192.0.2.7" || st.limitKey != "192.0.2.7" {
			t.Errorf("ip %q, limit key %q", st.ip, st.limitKey)
		}
		st.resolved, st.identity = true, docplatform.Identity{UserID: "u1"}
		ctx, cancel := context.WithCancel(context.WithValue(r.Context(), struct{}{}, 1))
		defer cancel()
		if id := IdentityFrom(ctx); id == nil || id.UserID != "u1" {
			t.Errorf("IdentityFrom a derived context: %+v", id)
		}
		if r.Context().Value(outerKey{}) != "outer" {
			t.Error("the wrapped context's value is lost")
		}
		if r.Context().Err() != nil {
			t.Fatal("context done before its parent")
		}
		// The test's parent is cancelled below, through the request.
		r.Context().Value(cancelKey{}).(context.CancelFunc)()
		<-r.Context().Done()
		<-ctx.Done() // a child of the state is cancelled with it
		if r.Context().Err() != context.Canceled {
			t.Errorf("Err %v", r.Context().Err())
		}
	})
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), outerKey{}, "outer"))
	defer cancel()
	parent = context.WithValue(parent, cancelKey{}, cancel)
	req := httptest.NewRequestWithContext(parent, "GET", "/probe", nil)
	req.RemoteAddr = "192.0.2.7:1234"
	s.ServeHTTP(httptest.NewRecorder(), req)
	if !checked {
		t.Fatal("handler not reached")
	}

	// An IPv6 client's budget key stays its network.
	s.mux.HandleFunc("GET /probe6", func(w http.ResponseWriter, r *http.Request) {
		if st := state(r); st.ip != "2001:db8::1" || st.limitKey != "2001:db8::/64" {
			t.Errorf("ip %q, limit key %q", st.ip, st.limitKey)
		}
	})
	req = httptest.NewRequest("GET", "/probe6", nil)
	req.RemoteAddr = "[2001:db8::1]:1234"
	s.ServeHTTP(httptest.NewRecorder(), req)
}

type cancelKey struct{}

// A context derived from the request state joins the cancellation of the
// context it wraps directly, as it would from a context.WithValue: no
// goroutine per child to watch it (pgx sets a context.AfterFunc on every
// query's context).
func TestRequestStateChildrenNeedNoGoroutine(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	st := &reqState{Context: parent}
	before := runtime.NumGoroutine()
	var children []context.Context
	for range 50 {
		stop := context.AfterFunc(st, func() {})
		defer stop()
		c, cc := context.WithCancel(st)
		defer cc()
		children = append(children, c)
	}
	// One goroutine per child would be 100; other tests' leftovers may
	// start or end a few meanwhile.
	if n := runtime.NumGoroutine(); n-before >= 50 {
		t.Errorf("%d goroutines started for 100 children", n-before)
	}
	cancel()
	for _, c := range children {
		<-c.Done()
	}
}

// writeJSON's pooled encoders write what json.NewEncoder wrote: HTML
// characters escaped, one newline after the value, nothing for a value
// that cannot be encoded, and never a byte of an earlier answer.
func TestWriteJSONKeepsEncoderOutput(t *testing.T) {
	write := func(v any) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		writeJSON(rec, http.StatusCreated, v)
		return rec
	}
	big := map[string]string{"a": strings.Repeat("x", maxPooledJSON+10)}
	for range 3 {
		for _, v := range []any{map[string]string{"a": "<b>&"}, big, []int{1}, make(chan int), struct{ N int }{7}} {
			var want strings.Builder
			_ = json.NewEncoder(&want).Encode(v)
			rec := write(v)
			if rec.Code != http.StatusCreated || rec.Body.String() != want.String() {
				t.Fatalf("%T: %d %q, want %q", v, rec.Code, rec.Body.String(), want.String())
			}
			if rec.Header().Get("Content-Type") != "application/json; charset=utf-8" || rec.Header().Get("Cache-Control") != "no-store" {
				t.Fatalf("headers %v", rec.Header())
			}
		}
	}
	if got := write(map[string]string{"a": "<b>&"}).Body.String(); got != "{\"a\":\"\\u003cb\\u003e\\u0026\"}\n" {
		t.Fatalf("body %q", got)
	}
}
