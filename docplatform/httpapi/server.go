// Package httpapi is the document platform's HTTP layer: the route table,
// the five-check request chain, the auth endpoints of the
// backend-for-frontend login (login, callback, me, refresh, logout), the
// API-key endpoints, the group-scoped resources (groups, memberships, users,
// documents, OCR results, workflows, review sessions, audit log), the
// OpenAPI document and its docs page, health, security headers and CORS.
//
// Every route is declared in one table (routes.go) with its access level
// next to its handler. Each route's handler is wrapped in the checks in the
// seed's order, one file per check:
//
//	check1_ratelimit.go  per-IP budgets (429 + Retry-After)
//	check2_token.go      access token from the cookie, else Bearer
//	check3_apikey.go     X-API-Key, with the per-IP failure lockout
//	check4_identity.go   identity from the database; the access level
//	check5_csrf.go       signed double-submit token for cookie-authenticated writes
//
// Handlers are thin: they read the identity the chain attached
// (IdentityFrom) and call the store.
package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/config"
	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/internal/clientip"
	"github.com/govkit/govkit/internal/httperr"
	"github.com/govkit/govkit/internal/ratelimit"
)

// Options configure a Server. OIDC, Store, Counters, FrontendURL and
// CookieSecret are required.
type Options struct {
	OIDC  OIDC
	Store Store

	FrontendURL           string // where logins end; the only CORS origin
	PostLogoutRedirectURI string // default FrontendURL
	SecureCookies         bool   // false only for NODE_ENV development/test
	CookieSecret          string // keys the login-state cookie, the API-key HMAC and the CSRF tokens
	// CookieSecretPrevious, while COOKIE_SECRET is being rotated, is the
	// secret it replaces: login-state cookies and CSRF tokens made under
	// it are still accepted, and an API key hashed under it is found and
	// rehashed under CookieSecret at its first use. "" accepts only
	// CookieSecret.
	CookieSecretPrevious string

	GlobalLimit, AuthLimit, RefreshLimit ratelimit.Rule
	// APIKeyFailures: Limit failures per Window per client IP.
	APIKeyFailures ratelimit.Rule
	// Counters holds the rate-limit and API-key-failure counters: memory
	// for one process, Redis for replicas that share budgets.
	Counters ratelimit.Store
	ClientIP *clientip.Resolver
	// IPv6LimitPrefix is how many leading bits of an IPv6 client address
	// name one client for the per-IP budgets (default 64: a subscriber is
	// handed at least a /64, so keying on the whole address would give one
	// host 2^64 budgets). 128 keys on the whole address.
	IPv6LimitPrefix int

	Logger *slog.Logger
	Now    func() time.Time
	// LastUseFlush is how often API-key last-use times are written, in one
	// batch (default 30 s), instead of a database write per request.
	LastUseFlush time.Duration
	// MaxBody bounds request bodies (default 1 MiB).
	MaxBody int64
	// MaxHeaderBytes bounds the request's header fields, cookies included
	// (default 64 KiB). Larger ones get a JSON 431; set the http.Server's
	// own MaxHeaderBytes above it, or net/http answers first in plain text.
	MaxHeaderBytes int
	// RouteMaxBody raises or lowers MaxBody for single routes, keyed by
	// "METHOD /pattern" as in the route table (uploads need more than a
	// JSON body).
	RouteMaxBody map[string]int64

	// Audit, when set, receives the auth layer's audit entries.
	Audit Auditor

	// Routes are added to the platform's own (resource packages register
	// theirs here); each must declare its access level.
	Routes []Route

	// Metrics receive the request chain's counts (nil: New makes its
	// own; Server.Metrics returns them either way).
	Metrics *Metrics
	// Unavailable, when set, reports an outage of the part every API
	// request needs (the database: sqlstore.Store.Unavailable, which a
	// watcher keeps): while it returns an error, every /api/ request but
	// /api/health and CORS preflights is answered 503 at once, naming the
	// part, instead of waiting for it. Called on every request: it must
	// be cheap.
	Unavailable func() error
	// Parts are further dependencies /api/health reports (document
	// storage, the rate-limit counters). The platform works on without
	// them, in part, so they make it "degraded", never unhealthy.
	Parts []Part

	// Frontend, when set, serves the web UI: GET and HEAD requests outside
	// /api/ that no route matches (the UI's own paths and its client-side
	// routes). Paths under /api/ stay JSON 404s. It runs behind the rate
	// limit and under the security headers, the CSP included.
	Frontend http.Handler
}

// Server serves the platform's API. Create it with New; it is an
// http.Handler. Close flushes pending API-key last-use times.
type Server struct {
	o      Options
	mux    *http.ServeMux
	routes []Route
	// secretKeys are COOKIE_SECRET's; prev are COOKIE_SECRET_PREVIOUS's
	// while it is being rotated (nil otherwise), accepted but never used
	// to make anything new.
	*secretKeys
	prev           *secretKeys
	failures       ratelimit.Failures
	uses           *useRecorder
	frontendOrigin string
	postLogout     string
	refreshes      refreshOnce
	metrics        *Metrics
	// forwarded spaces out the warning about forwarding headers from a
	// peer that is not in TRUSTED_PROXIES (warnForwarding).
	forwarded ratelimit.Sometimes
}

// DefaultMaxHeaderBytes is Options.MaxHeaderBytes when unset.
const DefaultMaxHeaderBytes = 64 << 10

// New builds a Server from o.
func New(o Options) (*Server, error) {
	switch {
	case o.OIDC == nil, o.Store == nil, o.Counters == nil:
		return nil, errors.New("httpapi: OIDC, Store and Counters are required")
	case len(o.CookieSecret) < config.MinCookieSecret:
		return nil, errors.New("httpapi: CookieSecret too short")
	}
	// Redirects append "/?auth_error=…" to it.
	o.FrontendURL = strings.TrimRight(o.FrontendURL, "/")
	fu, err := url.Parse(o.FrontendURL)
	if err != nil || fu.Scheme == "" || fu.Host == "" {
		return nil, errors.New("httpapi: FrontendURL must be an absolute URL")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ClientIP == nil {
		o.ClientIP, _ = clientip.New(nil)
	}
	if o.IPv6LimitPrefix == 0 {
		o.IPv6LimitPrefix = 64
	}
	if o.IPv6LimitPrefix < 1 || o.IPv6LimitPrefix > 128 {
		return nil, errors.New("httpapi: IPv6LimitPrefix must be within 1..128")
	}
	if o.LastUseFlush <= 0 {
		o.LastUseFlush = 30 * time.Second
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 1 << 20
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	for _, r := range []*ratelimit.Rule{&o.GlobalLimit, &o.AuthLimit, &o.RefreshLimit, &o.APIKeyFailures} {
		if r.Limit <= 0 || r.Window <= 0 {
			return nil, errors.New("httpapi: every limit needs a positive Limit and Window")
		}
	}
	keys, err := newSecretKeys(o.CookieSecret)
	if err != nil {
		return nil, err
	}
	var prev *secretKeys
	if o.CookieSecretPrevious != "" {
		if len(o.CookieSecretPrevious) < config.MinCookieSecret {
			return nil, errors.New("httpapi: CookieSecretPrevious too short")
		}
		if prev, err = newSecretKeys(o.CookieSecretPrevious); err != nil {
			return nil, err
		}
	}
	s := &Server{
		o:              o,
		secretKeys:     keys,
		prev:           prev,
		failures:       ratelimit.Failures{Store: o.Counters, Max: o.APIKeyFailures.Limit, Window: o.APIKeyFailures.Window},
		frontendOrigin: origin(fu),
		postLogout:     o.PostLogoutRedirectURI,
		metrics:        o.Metrics,
	}
	if s.postLogout == "" {
		s.postLogout = o.FrontendURL
	}
	s.forwarded.Interval = time.Hour
	s.uses = newUseRecorder(o.Store, o.Logger, o.LastUseFlush)
	s.mux = http.NewServeMux()
	// The fallback routes ("/" and "OPTIONS /") go last only for reading;
	// ServeMux picks the most specific pattern whatever the order.
	s.routes = append(s.routeTable(), o.Routes...)
	for i := range s.routes {
		rt := &s.routes[i]
		if rt.Access.Level == undeclared {
			return nil, errors.New("httpapi: route " + rt.Method + " " + rt.Pattern + " declares no access level")
		}
		s.mux.Handle(rt.pattern(), s.limitBody(rt, s.chain(rt)))
	}
	return s, nil
}

// origin is the serialisation of u's origin that browsers send in Origin
// (RFC 6454): lower-case scheme and host, the port only when it is not the
// scheme's default.
func origin(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" && !(u.Scheme == "http" && port == "80") && !(u.Scheme == "https" && port == "443") {
		host += ":" + port
	}
	return strings.ToLower(u.Scheme) + "://" + host
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Close writes the pending API-key last-use times and stops the writer.
func (s *Server) Close(ctx context.Context) error { return s.uses.close(ctx) }

// limitBody bounds the request body before any check reads it.
func (s *Server) limitBody(rt *Route, next http.Handler) http.Handler {
	max := s.o.MaxBody
	if n, ok := s.o.RouteMaxBody[rt.pattern()]; ok && n > 0 {
		max = n
	}
	rm := s.metrics.route(rt.pattern())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		state(r).metrics = rm // the route's series: its pattern, never the path
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		next.ServeHTTP(w, r)
	})
}

// chain wraps a route's handler in the five checks, first check outermost.
func (s *Server) chain(rt *Route) http.Handler {
	var h http.Handler = rt.Handler
	for _, check := range []func(*Route) func(http.Handler) http.Handler{
		s.csrfCheck, s.identityCheck, s.apiKeyCheck, s.tokenCheck, s.rateLimit,
	} {
		h = check(rt)(h)
	}
	return h
}

// credential is what authenticated a request.
type credential int

const (
	credNone credential = iota
	credCookie
	credBearer
	credAPIKey
)

func (c credential) String() string {
	return [...]string{"none", "cookie", "bearer", "api-key"}[c]
}

// reqState travels with a request through the chain. It is also the
// request's context: it wraps the server's and answers Value(stateKey{})
// itself, so attaching it costs no context.WithValue allocation.
type reqState struct {
	context.Context
	route    *Route
	ip       string
	cred     credential
	token    sso.AccessToken
	key      docplatform.APIKey
	identity docplatform.Identity
	// access is what check 4 read about a token's user, for handlers
	// that need more than the identity (/me).
	access   docplatform.UserAccess
	resolved bool
	status   int
	// note says what the request did or why it was refused, for the
	// request's log line: one line per request, whatever happened in it.
	note string
	// limitKey names the client in the per-IP budgets: the address, or
	// for IPv6 its network (Options.IPv6LimitPrefix).
	limitKey string
	// accessCookie is the access token of a cookie-authenticated request.
	accessCookie string
	// metrics are the series of the route that served the request.
	metrics *routeMetrics
	// sw is the request's response writer, allocated with the state.
	sw statusWriter
	// rlRemaining and rlReset back check 1's X-RateLimit-Remaining and
	// -Reset header values, so they cost no slice allocation of their own.
	rlRemaining, rlReset [1]string
	// keyHash holds check 3's lookup hash of the request's API key.
	keyHash [sha256.Size]byte
	// logRest holds the request log line's attributes after the first
	// four (ServeHTTP).
	logRest [4]slog.Attr
	// req is the request as the chain and the handler see it: r with the
	// state as its context. Held here, it is allocated with the state
	// instead of by WithContext on its own.
	req http.Request
	// text holds the short strings the chain builds for the request (its
	// counter keys, its rate-limit header values; see concat and itoa),
	// each written once and never changed after. A string made from it
	// stays valid for as long as anything holds it: the state is never
	// reused, so nothing writes over text while a string points into it.
	text  [128]byte
	ntext int
}

// concat is a+b, built in the state's text when there is room left (no
// allocation), else on the heap. The result must not be written to (no
// string is).
func (st *reqState) concat(a, b string) string {
	n := len(a) + len(b)
	if n == 0 {
		return ""
	}
	if n > len(st.text)-st.ntext {
		return a + b
	}
	// The three-index slice caps buf at its own bytes: nothing appended to
	// it could run into the next string.
	buf := st.text[st.ntext : st.ntext+n : st.ntext+n]
	copy(buf[copy(buf, a):], b)
	st.ntext += n
	return unsafe.String(&buf[0], n)
}

// itoa is strconv.FormatInt(v, 10), built in the state's text as concat
// builds.
func (st *reqState) itoa(v int64) string {
	room := st.text[st.ntext:]
	if len(room) < len("-9223372036854775808") {
		return strconv.FormatInt(v, 10)
	}
	b := strconv.AppendInt(room[:0:len(room)], v, 10)
	st.ntext += len(b)
	return unsafe.String(&b[0], len(b))
}

// Value answers for the request state, and asks the wrapped context for
// anything else.
func (st *reqState) Value(key any) any {
	if key == (stateKey{}) {
		return st
	}
	return st.Context.Value(key)
}

// addNote adds to the request's log line.
func (st *reqState) addNote(s string) {
	if st.note != "" {
		st.note += "; "
	}
	st.note += s
}

type stateKey struct{}

func state(r *http.Request) *reqState {
	st, _ := r.Context().Value(stateKey{}).(*reqState)
	if st == nil {
		st = &reqState{}
	}
	return st
}

// IdentityFrom returns the identity the chain resolved for the request, or
// nil on public routes.
func IdentityFrom(ctx context.Context) *docplatform.Identity {
	st, _ := ctx.Value(stateKey{}).(*reqState)
	if st == nil || !st.resolved {
		return nil
	}
	return &st.identity
}

// ServeHTTP adds the response headers every answer carries (errors and
// 404s included), finds the client address, bounds the body, routes, and
// logs one line.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	securityHeaders(w.Header())
	s.cors(w.Header(), r)
	if peer, ok := s.o.ClientIP.UntrustedForwarding(r); ok {
		s.warnForwarding(peer)
	}
	st := &reqState{Context: r.Context(), ip: s.o.ClientIP.ClientIP(r)}
	st.limitKey = st.ip
	// An IPv4 address's key is its text, which ParseAddr only accepts in
	// the canonical form: reuse it rather than format it again.
	if a, err := netip.ParseAddr(st.ip); err == nil && !a.Is4() {
		st.limitKey = clientip.LimitKey(a, s.o.IPv6LimitPrefix)
	}
	st.sw = statusWriter{ResponseWriter: w, st: st}
	rec := &st.sw
	// WithContext is inlined and its copy only read here, so that copy
	// stays on the stack: the request the chain sees is allocated with
	// the state.
	st.req = *r.WithContext(st)
	r = &st.req
	if headerBytes(r) > s.o.MaxHeaderBytes {
		httperr.Write(rec, http.StatusRequestHeaderFieldsTooLarge, "Request header fields too large")
	} else if err := s.down(r); err != nil {
		s.outage(rec, r, err)
	} else {
		s.serveRecovering(rec, r, st)
	}
	if st.status == 0 {
		st.status = http.StatusOK
	}
	now := time.Now()
	rm := st.metrics
	if rm == nil {
		rm = s.metrics.unrouted
	}
	rm.observe(st.status, now.Sub(start))
	// The record is what Logger.LogAttrs would make, built here so that
	// the call site's PC is found once, not by runtime.Callers on every
	// request (the only use of the PC is a handler's AddSource).
	h := s.o.Logger.Handler()
	if !h.Enabled(st, slog.LevelInfo) {
		return
	}
	pc := requestLogPC.Load()
	if pc == 0 {
		var pcs [1]uintptr
		runtime.Callers(1, pcs[:]) // this line of ServeHTTP
		pc = pcs[0]
		requestLogPC.Store(pc)
	}
	line := slog.NewRecord(now, slog.LevelInfo, "request", pc)
	// Path only: query strings carry codes, states and hints. A Record
	// holds five attributes inline and allocates for more, and a line has
	// six to eight: the first four — what readers of the request log look
	// for (devlog's request line) — go in as they are, the rest in one
	// group with an empty key, which every handler inlines (slog.Handler's
	// contract; the JSON and text handlers write the same line as for
	// eight plain attributes). The group's attributes live in the state.
	rest := append(st.logRest[:0], slog.String("ip", st.ip), slog.String("auth", st.cred.String()))
	if st.resolved && st.identity.UserID != "" {
		rest = append(rest, slog.String("user", st.identity.UserID))
	}
	if st.note != "" {
		rest = append(rest, slog.String("note", st.note))
	}
	line.AddAttrs(slog.String("method", r.Method), slog.String("path", r.URL.Path),
		slog.Int("status", st.status), slog.Duration("duration", now.Sub(start)),
		slog.Attr{Value: slog.GroupValue(rest...)})
	_ = h.Handle(st, line)
}

// requestLogPC is the PC of the request log line's call site, once found.
var requestLogPC atomic.Uintptr

// headerBytes is about what the header fields took on the wire.
func headerBytes(r *http.Request) int {
	n := len(r.Host) + len(r.URL.RawQuery)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// serveRecovering routes the request. A panic in a handler becomes a JSON
// 500 (when nothing was written yet) and a log line, instead of net/http
// dropping the connection with no answer; the panic value stays in the
// log. http.ErrAbortHandler keeps its meaning.
func (s *Server) serveRecovering(w http.ResponseWriter, r *http.Request, st *reqState) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		s.o.Logger.ErrorContext(r.Context(), "panic in handler", slog.String("path", r.URL.Path), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
		if st.status == 0 {
			w.Header().Del("Set-Cookie") // nothing the failed handler meant to set survives
			httperr.Write(w, http.StatusInternalServerError, "Internal server error")
			return
		}
		panic(http.ErrAbortHandler) // half an answer is out: cut the connection
	}()
	s.mux.ServeHTTP(w, r)
}

type statusWriter struct {
	http.ResponseWriter
	st *reqState
}

func (w *statusWriter) WriteHeader(code int) {
	if w.st.status == 0 {
		w.st.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.st.status == 0 {
		w.st.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func writeError(w http.ResponseWriter, status int, message string) { httperr.Write(w, status, message) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Cache-Control"] = noStore
	w.WriteHeader(status)
	e := jsonEncoders.Get().(*jsonEncoder)
	// Encode writes nothing when v cannot be encoded, as before.
	if e.enc.Encode(v) == nil {
		_, _ = w.Write(e.buf.Bytes())
	}
	e.buf.Reset()
	if e.buf.Cap() <= maxPooledJSON {
		jsonEncoders.Put(e)
	}
}

// jsonEncoder is a json.Encoder with the buffer it writes into, kept in
// a pool so that an answer costs no encoder allocation. The encoder's
// settings are json.NewEncoder's (HTML escaping on, a newline after the
// value), as the answers had before.
type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// maxPooledJSON bounds the buffers kept: a large listing's buffer is
// left to the collector rather than held for every later small answer.
const maxPooledJSON = 64 << 10

var jsonEncoders = sync.Pool{New: func() any {
	e := &jsonEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

func seconds(d time.Duration) string { return strconv.FormatInt(wholeSeconds(d), 10) }

// wholeSeconds is d rounded up to whole seconds, at least 1 (what
// Retry-After and X-RateLimit-Reset say).
func wholeSeconds(d time.Duration) int64 {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// internalError answers an error no handler expected: a part's outage
// (outage) or, logged, a 500 without details.
func (s *Server) internalError(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.metrics.internalError(err)
	if outagePart(err) != "" || s.o.Unavailable != nil && s.o.Unavailable() != nil {
		s.o.Logger.WarnContext(r.Context(), what, slog.String("error", err.Error()), slog.String("path", r.URL.Path))
		s.outage(w, r, err)
		return
	}
	s.o.Logger.ErrorContext(r.Context(), what, slog.String("error", err.Error()), slog.String("path", r.URL.Path))
	httperr.Write(w, http.StatusInternalServerError, "Internal server error")
}

// queryValue is r.URL.Query().Get(name) without parsing (and allocating a
// map for) an empty query.
func queryValue(r *http.Request, name string) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return r.URL.Query().Get(name)
}

// warnForwarding says, at most once an hour, that forwarding headers
// arrive from a peer that is not in TRUSTED_PROXIES: a proxy in front of
// the platform that is missing from the list makes every client one
// address, with one budget of requests, log-ins and API-key failures for
// all; a client writing the headers itself is worth knowing about too.
func (s *Server) warnForwarding(peer string) {
	s.forwarded.Do(func(skipped int) {
		s.o.Logger.Warn("forwarding headers (X-Forwarded-For, Forwarded) arrive from an address that is not in TRUSTED_PROXIES, and are ignored: if it is a proxy in front of the platform, add it, or every client shares its address and its rate limits",
			slog.String("peer", peer), slog.String("setting", "TRUSTED_PROXIES"), slog.Int("more", skipped))
	})
}
