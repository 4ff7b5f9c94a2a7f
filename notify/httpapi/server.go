// Package httpapi is the HTTP API of the notification service: the routes of
// NotifyBC version 6 under restApiRoot (default /api), with the original's
// paths, status codes, text/plain versus JSON bodies and redirects, so that
// existing clients keep working.
//
// Every route is registered once, in a table, together with the roles that
// may call it (route.roles; nil means everyone, anonymous included). The
// same table drives the role guard, the OpenAPI document at
// {restApiRoot}/explorer-json and its page at {restApiRoot}/explorer, so the
// document cannot fall behind the routes.
//
// Handlers are thin: they parse the request (package query for filter, where
// and array parameters; a size-limited JSON body), call a domain service or
// the store, and write the answer. Errors become the JSON body
// {"statusCode":N,"message":…,"error":…} (package internal/httperr): unknown
// or malformed ids 404, bad input 400 naming the field, a role refused by the
// guard 403 "Forbidden resource" as the original's NestJS guard says.
//
// Who is calling is decided by package notify/access before any handler
// runs; handlers read it with access.Caller. Responses to callers who are
// not administrators never show a subscription's confirmationRequest,
// unsubscriptionCode, createdBy or updatedBy, and such callers cannot
// filter, sort or project on them either (query.Schema.Hiding); their
// request bodies are limited to 100 KB (MaxPublicBodyBytes), and their
// wrong codes and failed log-ins are counted (Options.Attempts).
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/notify/access"
	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/jmesfilter"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/subscription"
)

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is 0.
// The original's body parser allows 100 kB of JSON by default; a message
// template with inline HTML can be larger, so we allow more.
const DefaultMaxBodyBytes = 1 << 20

// Pinger is a dependency the health endpoint checks.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Options are what the server needs. Config, Store, Identifier, Channel and
// Subscriptions are required.
type Options struct {
	Config     *config.Config
	Store      *mongostore.Store
	Identifier *access.Identifier
	Channel    *channel.Sender
	// Filters validates and evaluates JMESPath filters (custom functions
	// from config).
	Filters       *jmesfilter.Engine
	Subscriptions *subscription.Service
	// Queue is the queue backend the health endpoint pings; nil reports
	// the in-process queue as up.
	Queue Pinger
	// Dispatcher sends notifications; nil disables the notification
	// routes.
	Dispatcher *dispatch.Dispatcher
	Logger     *slog.Logger
	// MaxBodyBytes bounds request bodies (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Attempts keeps the counters of failed log-ins (see
	// LoginFailureLimit); nil keeps them in this process's memory. With
	// several nodes, give the Redis store (ratelimit.NewRedis) the
	// subscription service's wrong-code counters use too.
	Attempts ratelimit.Store
	// metrics are OpenApp's, which counts the sends into them before the
	// server exists (nil: New makes its own).
	metrics *metrics
}

// LoginFailureLimit bounds failed administrator log-ins per client
// address: password guessing, and each guess costs a bcrypt comparison.
var LoginFailureLimit = ratelimit.Failures{Max: 10, Window: 15 * time.Minute}

// Server serves the API. Create it with New; it is an http.Handler.
type Server struct {
	cfg     *config.Config
	store   *mongostore.Store
	ident   *access.Identifier
	channel *channel.Sender
	filters *jmesfilter.Engine
	subs    *subscription.Service
	queue   Pinger
	disp    *dispatch.Dispatcher // sends notifications; cron shares it
	log     *slog.Logger
	maxBody int64
	root    string // restApiRoot without a trailing slash
	// logins counts failed log-ins per client; ownAttempts is the memory
	// store made when Options.Attempts is nil.
	logins      ratelimit.Failures
	ownAttempts *ratelimit.Memory

	// stats keeps the console's costly counts between polls
	stats statsCache
	// foreignHost spaces out the warning about links for a Host that is
	// not the service's (a caller can send any); forwarded the warning
	// about forwarding headers from a peer that is not a trusted proxy.
	foreignHost, forwarded ratelimit.Sometimes

	mux     *http.ServeMux
	routes  []route
	handler http.Handler
	metrics *metrics
	// background work that outlives its request (asynchronous broadcasts)
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
}

// routeGroups register the routes of each API area. Files of this package
// add theirs in init, so an area's routes live in the file named after it.
var routeGroups []func(*Server)

// New builds the server and its route table.
func New(o Options) *Server {
	s := &Server{
		cfg:     o.Config,
		store:   o.Store,
		ident:   o.Identifier,
		channel: o.Channel,
		filters: o.Filters,
		subs:    o.Subscriptions,
		queue:   o.Queue,
		disp:    o.Dispatcher,
		log:     o.Logger,
		maxBody: o.MaxBodyBytes,
		root:    strings.TrimRight(o.Config.RestAPIRoot, "/"),
		mux:     http.NewServeMux(),
		metrics: o.metrics,
	}
	if s.metrics == nil {
		s.metrics = newMetrics()
	}
	s.foreignHost.Interval = 10 * time.Minute
	s.forwarded.Interval = time.Hour
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.maxBody == 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	s.logins = LoginFailureLimit
	s.logins.Store = o.Attempts
	if s.logins.Store == nil {
		s.ownAttempts = ratelimit.NewMemory(time.Minute)
		s.logins.Store = s.ownAttempts
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.Background())
	for _, g := range routeGroups {
		g(s)
	}
	s.registerDocs()
	s.registerMetrics()
	s.mountConsole()
	s.handler = s.recoverPanics(s.logRequests(s.warnForwarding(s.limitBody(s.boundStoreCalls(s.ident.Middleware(s.mux))))))
	return s
}

// boundStoreCalls marks each request's context so that every database
// operation made for it takes at most datasource apiTimeoutMS (see
// mongostore.WithCallTimeout): a database that is down or does not answer
// fails the call as a 503 within it. Mail and SMS sent for the call are
// not bound by it.
func (s *Server) boundStoreCalls(next http.Handler) http.Handler {
	d := s.cfg.Datasource.APITimeout
	if d <= 0 {
		d = config.DefaultAPITimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(mongostore.WithCallTimeout(r.Context(), d)))
	})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handler.ServeHTTP(w, r)
}

// Go runs fn in the background, for work that outlives the request that
// started it. fn's context ends at Shutdown.
func (s *Server) Go(fn func(ctx context.Context)) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		fn(s.bgCtx)
	}()
}

// Shutdown waits for background work to finish, until ctx ends; then it
// cancels what is left and waits for it to return.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.ownAttempts != nil {
		defer s.ownAttempts.Close()
	}
	done := make(chan struct{})
	go func() { s.bg.Wait(); close(done) }()
	select {
	case <-done:
		s.bgCancel()
		return nil
	case <-ctx.Done():
		s.bgCancel()
		<-done
		return ctx.Err()
	}
}

// Config returns the static configuration the server runs with.
func (s *Server) Config() *config.Config { return s.cfg }

// Store returns the storage the server uses.
func (s *Server) Store() *mongostore.Store { return s.store }

// RestAPIRoot returns the API prefix, e.g. "/api".
func (s *Server) RestAPIRoot() string { return s.root }

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// logRequests writes one line per request. Only the path is logged: query
// strings carry access tokens and confirmation or unsubscription codes.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		ctx, ri := withReqInfo(r.Context())
		next.ServeHTTP(rec, r.WithContext(ctx))
		d := time.Since(start)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		s.metrics.observe(ri.route, rec.status, d)
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("route", ri.route),
			slog.Int("status", rec.status),
			slog.Duration("duration", d),
			slog.String("client", s.ident.ClientIP(r)),
		)
	})
}

func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeError(w, r, errInternal)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// AdminsOnly serves h to the callers the API makes administrators — by
// the same rules, so an admin address counts only for a same-origin
// browser request to one of the service's names (access.Identifier.Ambient)
// — and answers 403 to anyone else. govkit dev serves its caught mail so.
func (s *Server) AdminsOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !access.IsAdmin(s.ident.Identify(r)) {
			writeError(w, r, httpError(http.StatusForbidden, "for administrators only: open it from an admin address (in govkit dev, this machine) at the address the service printed, not from another site or under another name"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// warnForwarding says, at most once an hour, that forwarding headers
// arrive from a peer that is not in trustedReverseProxyIps: a proxy in
// front of the service that is missing from the list makes every client
// one address — one budget of wrong codes and log-ins for everyone, and
// super admin for everyone when that address is an admin address — and a
// client writing the headers itself is worth knowing about too.
func (s *Server) warnForwarding(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if peer, ok := s.ident.UntrustedForwarding(r); ok {
			s.forwarded.Do(func(skipped int) {
				s.log.Warn("forwarding headers (X-Forwarded-For, Forwarded) arrive from an address that is not in trustedReverseProxyIps, and are ignored: if it is a proxy in front of this service, add it, or every client shares its address (and its rights, when it is an admin address)",
					"peer", peer, "setting", "trustedReverseProxyIps", "more", skipped)
			})
		}
		next.ServeHTTP(w, r)
	})
}
