// Package platform assembles and runs the document platform: it turns a
// config.Config into a store, an OIDC client, rate-limit counters (Redis
// when REDIS_URL is set, process memory otherwise) and the HTTP API, serves
// it with timeouts, and shuts it all down in order.
//
// `govkit docplatform serve` (Serve) and `govkit dev` (StartDev) both start
// the platform through Start; cmd/govkit only calls them.
package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/govkit/govkit/docplatform/config"
	"github.com/govkit/govkit/docplatform/filestore"
	"github.com/govkit/govkit/docplatform/httpapi"
	"github.com/govkit/govkit/docplatform/s3store"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/docplatform/upload"
	"github.com/govkit/govkit/docplatform/webui"
	gkmetrics "github.com/govkit/govkit/internal/metrics"
	"github.com/govkit/govkit/internal/ratelimit"
)

// Server timeouts: a slow client cannot hold a connection open forever,
// and an upload still has a minute.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	// ShutdownGrace bounds how long in-flight requests may finish.
	ShutdownGrace = 15 * time.Second
)

// Platform is a running document platform.
type Platform struct {
	URL string // base URL it serves on
	// MetricsURL is where the Prometheus metrics are served
	// (METRICS_LISTEN), "" when they are not.
	MetricsURL string
	API        *httpapi.Server
	Store      *sqlstore.Store
	OIDC       *sso.Client
	server     *http.Server
	closed     chan error

	// Uploads moves uploads through their life; its sweeper runs until
	// Shutdown.
	Uploads *upload.Manager

	counters io.Closer
	redis    *redis.Client
	// stopMetrics stops the metrics listener (nil: none).
	stopMetrics func(context.Context) error
	stopSweep   context.CancelFunc
	sweepEnded  chan struct{}
}

// Hooks are test-only observers of a running platform.
type Hooks struct {
	// Upload is told of each state an upload reaches (upload.Options.Observe).
	Upload func(ctx context.Context, s upload.State)
}

// Start opens the store, builds the API and serves it on ln (or on
// addr when ln is nil).
func Start(ctx context.Context, cfg config.Config, addr string, ln net.Listener, log *slog.Logger) (*Platform, error) {
	return StartWithHooks(ctx, cfg, addr, ln, log, Hooks{})
}

// StartWithHooks is Start with test hooks.
func StartWithHooks(ctx context.Context, cfg config.Config, addr string, ln net.Listener, log *slog.Logger, hooks Hooks) (*Platform, error) {
	if log == nil {
		log = slog.Default()
	}
	p := &Platform{closed: make(chan error, 1)}
	ok := false
	defer func() {
		if !ok {
			p.closeResources()
		}
	}()

	timeout := cfg.DependencyTimeout
	if timeout <= 0 {
		timeout = config.DefaultDependencyTimeout
	}
	store, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.WithTimeout(timeout))
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	p.Store = store
	// A watcher asks PostgreSQL every second whether it answers; while it
	// does not, API requests are answered 503 at once (httpapi
	// Options.Unavailable).
	store.Watch(time.Second)

	var counters ratelimit.Store
	var parts []httpapi.Part
	if cfg.RedisURL != "" {
		opt, err := redis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		// Counters are asked on every request: a Redis that does not
		// answer must cost a request a second, not go-redis's default of
		// three seconds per attempt over four attempts. The URL's own
		// dial_timeout, read_timeout and write_timeout win.
		for _, d := range []*time.Duration{&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout} {
			if *d == 0 {
				*d = timeout / 5
			}
		}
		if opt.MaxRetries == 0 {
			opt.MaxRetries = 1
		}
		p.redis = redis.NewClient(opt)
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = p.redis.Ping(pctx).Err()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		// While Redis does not answer, each replica counts on its own:
		// budgets still hold, nothing is let through unlimited and nobody
		// is refused or signed out for the counters' outage.
		mem := ratelimit.NewMemory(cfg.APIKeySweepInterval)
		failover := ratelimit.NewFailover(ratelimit.NewRedis(p.redis, cfg.RedisKeyPrefix), mem,
			func(ctx context.Context) error { return p.redis.Ping(ctx).Err() },
			func(err error) {
				if err != nil {
					log.Warn("Redis does not answer: rate-limit and API-key-failure counters are kept per replica until it does", slog.String("error", err.Error()))
				} else {
					log.Info("Redis answers again: counters are shared again")
				}
			})
		p.counters = closers{failover, mem}
		counters = failover
		parts = append(parts, httpapi.Part{Name: "rateLimitCounters", Check: func(ctx context.Context) error { return p.redis.Ping(ctx).Err() }})
	} else {
		mem := ratelimit.NewMemory(cfg.APIKeySweepInterval)
		p.counters = mem
		counters = mem
	}

	oc, err := sso.New(sso.Config{Issuer: cfg.Issuer, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURI})
	if err != nil {
		return nil, err
	}
	p.OIDC = oc
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := oc.Discover(dctx); err != nil {
		// The provider may come up after us; the health check says so and
		// discovery is retried on use.
		log.Warn("identity provider discovery failed; retrying on use", slog.String("issuer", cfg.Issuer), slog.String("error", err.Error()))
	}
	cancel()

	files, err := openDocumentStorage(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("DOCUMENT_STORAGE: %w", err)
	}
	log.Info("document storage", slog.String("at", files.String()))
	parts = append(parts, httpapi.Part{Name: "documentStorage", Check: files.Ping})
	p.Uploads = upload.New(files, store, upload.Options{Logger: log, Observe: hooks.Upload})
	// Every replica sweeps what crashed or stalled uploads left; sweeps
	// are safe to run at once (see package upload).
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stopSweep, p.sweepEnded = stop, make(chan struct{})
	go func() {
		defer close(p.sweepEnded)
		p.Uploads.Run(sctx)
	}()
	res := httpapi.Resources{Files: files, Uploads: p.Uploads, MaxUpload: cfg.DocumentMaxBytes, ReviewLock: cfg.ReviewLockTTL}
	metrics := newMetrics(store.Pools(), p.redis)

	api, err := httpapi.New(httpapi.Options{
		OIDC: oc, Store: httpapi.WithResources(store, res), RouteMaxBody: httpapi.ResourceBodyLimits(res),
		FrontendURL: cfg.FrontendURL, PostLogoutRedirectURI: cfg.PostLogoutRedirectURI,
		SecureCookies: cfg.SecureCookies, CookieSecret: cfg.CookieSecret, CookieSecretPrevious: cfg.CookieSecretPrevious,
		GlobalLimit: cfg.GlobalLimit, AuthLimit: cfg.AuthLimit, RefreshLimit: cfg.RefreshLimit,
		APIKeyFailures: ratelimit.Rule{Limit: cfg.APIKeyMaxFailedAttempts, Window: cfg.APIKeyFailedWindow},
		Counters:       counters, ClientIP: cfg.TrustedProxies, IPv6LimitPrefix: cfg.RateLimitIPv6Prefix, Logger: log,
		Audit:       store,
		Unavailable: store.Unavailable,
		Parts:       parts,
		Frontend:    webui.Handler(),
		Metrics:     metrics,
	})
	if err != nil {
		return nil, err
	}
	p.API = api
	if cfg.MetricsListen != "" {
		if p.MetricsURL, p.stopMetrics, err = gkmetrics.Listen(cfg.MetricsListen, metrics.Registry, log); err != nil {
			return nil, fmt.Errorf("METRICS_LISTEN: %w", err)
		}
	}

	if ln == nil {
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
	}
	p.URL = "http://" + ln.Addr().String()
	p.server = &http.Server{
		Handler:           api,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		// Above the API's own bound (httpapi.DefaultMaxHeaderBytes), so
		// oversized headers get its JSON 431 with the security headers
		// rather than net/http's plain-text one.
		MaxHeaderBytes: 1 << 20,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:    func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	go func() {
		err := p.server.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		p.closed <- err
	}()
	ok = true
	return p, nil
}

// documentStorage is a document store that can say where it is and
// whether it answers.
type documentStorage interface {
	httpapi.DocumentFiles
	Ping(ctx context.Context) error
	String() string
}

// closers closes each in turn.
type closers []io.Closer

func (cs closers) Close() error {
	var err error
	for _, c := range cs {
		err = errors.Join(err, c.Close())
	}
	return err
}

// openDocumentStorage opens the directory or the object store that
// DOCUMENT_STORAGE names.
func openDocumentStorage(ctx context.Context, cfg config.Config) (documentStorage, error) {
	if cfg.S3 != nil {
		octx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return s3store.Open(octx, *cfg.S3)
	}
	return filestore.Open(cfg.DocumentStorage)
}

// Shutdown stops accepting connections, lets in-flight requests finish
// within ctx, writes pending API-key use times and closes the store.
func (p *Platform) Shutdown(ctx context.Context) error {
	err := p.server.Shutdown(ctx)
	if p.stopMetrics != nil {
		// Scrapes are short; the last one may see the final counts.
		err = errors.Join(err, p.stopMetrics(ctx))
		p.stopMetrics = nil
	}
	if e := p.API.Close(ctx); e != nil {
		err = errors.Join(err, e)
	}
	p.closeResources()
	return err
}

// Done yields the server's exit error (nil after Shutdown).
func (p *Platform) Done() <-chan error { return p.closed }

func (p *Platform) closeResources() {
	if p.stopSweep != nil {
		p.stopSweep()
		<-p.sweepEnded
	}
	if p.Store != nil {
		p.Store.Close()
	}
	if p.counters != nil {
		p.counters.Close()
	}
	if p.redis != nil {
		p.redis.Close()
	}
	if p.stopMetrics != nil {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = p.stopMetrics(c)
		cancel()
	}
}
