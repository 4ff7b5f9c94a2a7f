package platform

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/govkit/govkit/docplatform/config"
	"github.com/govkit/govkit/internal/cliflags"
	"github.com/govkit/govkit/internal/preflight"
)

// Serve is `govkit docplatform serve`: the production platform, configured
// by the environment only (getenv). It returns the process exit code: 2
// when the configuration is incomplete or the platform cannot start (every
// missing or bad variable is listed), 0 after a clean shutdown when ctx
// ends (SIGTERM/SIGINT), 1 when the server fails while running.
func Serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return ServeWithHooks(ctx, args, getenv, stdout, stderr, Hooks{})
}

// ServeWithHooks is Serve with test hooks.
func ServeWithHooks(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, hooks Hooks) int {
	fs := flag.NewFlagSet("govkit docplatform serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "./data", "directory for the default SQLite database and documents")
	listen := fs.String("listen", "", "address to listen on (default :$PORT)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: govkit docplatform serve [--data-dir DIR] [--listen ADDR]")
		fmt.Fprintln(w, "\nServes the document platform, configured by environment variables:")
		fmt.Fprintln(w, "  required: SSO_AUTH_SERVER_URL SSO_REALM SSO_CLIENT_ID SSO_CLIENT_SECRET SSO_REDIRECT_URI FRONTEND_URL COOKIE_SECRET")
		fmt.Fprintln(w, "  optional: SSO_POST_LOGOUT_REDIRECT_URI NODE_ENV DATABASE_URL PORT TRUSTED_PROXIES REDIS_URL REDIS_KEY_PREFIX")
		fmt.Fprintln(w, "            DOCUMENT_STORAGE (a directory or s3://bucket/prefix) DOCUMENT_MAX_BYTES REVIEW_LOCK_TTL_MS")
		fmt.Fprintln(w, "            with s3://: AWS_ENDPOINT_URL[_S3] AWS_REGION AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_S3_ADDRESSING_STYLE")
		fmt.Fprintln(w, "            THROTTLE_{GLOBAL,AUTH,AUTH_REFRESH}_{LIMIT,TTL_MS} API_KEY_{MAX_FAILED_ATTEMPTS,FAILED_WINDOW_MS,SWEEP_INTERVAL_MS}")
		fmt.Fprintln(w, "            METRICS_LISTEN (host:port of a listener serving /metrics only)")
		fmt.Fprintln(w, "            COOKIE_SECRET_PREVIOUS (while rotating COOKIE_SECRET: the secret it replaces)")
		fmt.Fprintln(w, "\nFlags:")
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args, stdout); !ok {
		return code
	}
	cfg, err := config.Load(getenv, *dataDir)
	if err != nil {
		fmt.Fprintf(stderr, "govkit docplatform serve: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	preflight.Log(log, Parts(cfg, getenv))
	if cfg.RedisURL == "" {
		// Said by serve, not by Start: `govkit dev` is one process.
		log.Warn("REDIS_URL is not set: rate-limit and API-key-failure counters are kept per process; replicas do not share them")
	}
	if tuneGC(os.LookupEnv) {
		log.Info("garbage collector target set", slog.Int("gogc", DefaultGCPercent))
	}
	if err := prepareDirs(cfg, *dataDir); err != nil {
		fmt.Fprintf(stderr, "govkit docplatform serve: %v\n", err)
		return 2
	}
	addr := *listen
	if addr == "" {
		addr = ":" + strconv.Itoa(cfg.Port)
	}
	p, err := StartWithHooks(ctx, cfg, addr, nil, log, hooks)
	if err != nil {
		fmt.Fprintf(stderr, "govkit docplatform serve: %v\n", err)
		return 2
	}
	// JSON like every other line: a container's log merges stdout and
	// stderr, and a plain line among JSON ones breaks a log collector's
	// parsing.
	if p.MetricsURL != "" {
		log.Info("metrics listening", slog.String("url", p.MetricsURL))
	}
	log.Info("listening", slog.String("url", p.URL))
	return wait(ctx, p, log)
}

// DefaultGCPercent is the collector's target (GOGC) of `docplatform
// serve` when the environment sets neither GOGC nor GOMEMLIMIT. The
// platform's live heap is small (a few MiB: keys, caches, prepared
// statements), so at Go's default of 100 a busy process collects dozens of
// times a second, each time marking the same live heap again and paying
// the assists and write barriers that come with it. Under the load harness,
// 400 cut an authenticated GET's CPU by 13-26 % for a few tens of MiB
// more resident memory (BENCHMARKS.md, "After (P9 end to end)"). An
// operator's GOGC or GOMEMLIMIT wins.
const DefaultGCPercent = 400

// tuneGC applies DefaultGCPercent unless the environment tunes the
// collector itself; it reports whether it did.
func tuneGC(lookup func(string) (string, bool)) bool {
	if _, ok := lookup("GOGC"); ok {
		return false
	}
	if _, ok := lookup("GOMEMLIMIT"); ok {
		return false
	}
	debug.SetGCPercent(DefaultGCPercent)
	return true
}

// wait serves until ctx ends or the server fails, then shuts down.
func wait(ctx context.Context, p *Platform, log *slog.Logger) int {
	code := 0
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-p.Done():
		if err != nil {
			log.Error("server failed", slog.String("error", err.Error()))
			code = 1
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	if err := p.Shutdown(sctx); err != nil {
		log.Error("shutdown", slog.String("error", err.Error()))
		code = 1
	}
	return code
}

// prepareDirs creates the data directory a SQLite file lives in and the
// document storage directory.
func prepareDirs(cfg config.Config, dataDir string) error {
	if cfg.S3 == nil {
		if err := os.MkdirAll(cfg.DocumentStorage, 0o700); err != nil {
			return fmt.Errorf("DOCUMENT_STORAGE: %w", err)
		}
	}
	if !isPostgres(cfg.DatabaseURL) {
		if err := os.MkdirAll(filepath.Dir(sqlitePath(cfg.DatabaseURL)), 0o700); err != nil {
			return fmt.Errorf("DATABASE_URL: %w", err)
		}
	}
	return nil
}

func isPostgres(u string) bool {
	return len(u) > 11 && (u[:11] == "postgres://" || (len(u) > 13 && u[:13] == "postgresql://"))
}

func sqlitePath(u string) string {
	if len(u) > 5 && u[:5] == "file:" {
		u = u[5:]
		for i := 0; i < len(u); i++ {
			if u[i] == '?' {
				return u[:i]
			}
		}
	}
	return u
}
