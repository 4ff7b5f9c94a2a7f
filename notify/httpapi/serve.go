package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	gkmetrics "github.com/govkit/govkit/internal/metrics"
	"github.com/govkit/govkit/internal/preflight"
	"github.com/govkit/govkit/notify/config"
)

// Server limits of `govkit notify serve`. The write timeout is long because
// a synchronous broadcast answers only once every subscriber was processed,
// as in the original.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = time.Minute
	WriteTimeout      = 10 * time.Minute
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 64 << 10
	ShutdownTimeout   = 30 * time.Second
)

// RunOptions configure Run.
type RunOptions struct {
	// Dir is the deployment directory: config files in Dir/src, TLS
	// material in Dir/server/certs, as in an existing deployment.
	Dir string
	// ConfigDir overrides Dir/src.
	ConfigDir string
	// DataDir holds the embedded store's files (used when the datasource has
	// no uri).
	DataDir string
	// Env is the process environment, read once at start: NODE_ENV picks
	// config files, NOTIFYBC_NODE_ROLE the node role, and the whole map is
	// process.env of .js config files.
	Env map[string]string
	// Log receives the service's log (JSON lines).
	Log io.Writer
	// Ready, when set, is called with the listening address once the
	// service accepts requests.
	Ready func(addr string)
	// RSABits is the size of a newly generated RSA key pair (0: 4096).
	RSABits int
	// MetricsListen, when set, serves /metrics there too, on a listener
	// of its own that any scraper may read (--metrics-listen).
	MetricsListen string
}

// Run starts the notification service of a deployment directory and serves
// until ctx ends, then shuts down gracefully: it stops accepting requests,
// lets in-flight requests and background work finish within
// ShutdownTimeout, and closes storage. Errors before serving (config, node
// role, storage, TLS, listening) are returned; the caller exits with 2.
func Run(ctx context.Context, o RunOptions) error {
	logger := slog.New(slog.NewJSONHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	role, err := config.ParseNodeRole(o.Env["NOTIFYBC_NODE_ROLE"])
	if err != nil {
		return err
	}
	loc := deploymentFlags{dir: o.Dir, configDir: o.ConfigDir}
	cfg, err := loc.load(o.Env, func(level, msg string) {
		logger.Info("config script", "level", level, "msg", msg)
	})
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		logger.Warn("config", "problem", w.String())
	}
	if err := CheckProduction(cfg, o.Env["NODE_ENV"]); err != nil {
		return err
	}
	warnings, err := CheckAuthority(cfg, o.Env["NODE_ENV"])
	if err != nil {
		return err
	}
	for _, w := range warnings {
		logger.Warn("start", "problem", w)
	}
	preflight.Log(logger, Parts(cfg, o.DataDir))
	tlsCfg, err := TLSConfig(cfg.TLS)
	if err != nil {
		return err
	}
	app, err := OpenApp(ctx, AppOptions{Config: cfg, Role: role, DataDir: o.DataDir, Logger: logger, RSABits: o.RSABits,
		Cron: role.RunsCron() && o.Env["NODE_ENV"] != "test"})
	if err != nil {
		return err
	}
	for _, w := range app.Warnings {
		logger.Warn("start", "problem", w)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := app.Close(c); err != nil {
			logger.Error("close", "err", err)
		}
	}()
	if o.MetricsListen != "" {
		url, stop, err := gkmetrics.Listen(o.MetricsListen, app.Server.metrics.reg, logger)
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		logger.Info("listening", "service", "metrics", "url", url)
		defer func() {
			c, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			defer cancel()
			_ = stop(c)
		}()
	}
	_, stopInbound, err := app.startInbound(ctx, InboundOptions{
		Addr: inboundAddr(cfg.Host, cfg.Email.InboundSMTPServer.ListeningSMTPPort), Certificate: deploymentCertificate(tlsCfg),
		HTTPHost: selfHTTPHost(cfg, tlsCfg != nil), Logger: logger,
	})
	if err != nil {
		return err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := stopInbound(c); err != nil {
			logger.Error("close inbound SMTP", "err", err)
		}
	}()
	return Listen(ctx, ListenOptions{
		Addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)), Handler: app.Server, TLS: tlsCfg,
		Logger: logger, Ready: o.Ready, Name: "notify",
	})
}

// configDirExists refuses a config directory that is not there: the
// service would otherwise start on the built-in defaults with an empty
// store, which is never what a deployment meant. An empty directory is
// fine (the built-in defaults, on purpose).
func configDirExists(dir string, explicit bool) error {
	st, err := os.Stat(dir)
	if err == nil && st.IsDir() {
		return nil
	}
	flag := "--dir (its src/ directory)"
	if explicit {
		flag = "--config-dir"
	}
	if err == nil {
		return fmt.Errorf("config directory %s (%s) is not a directory", dir, flag)
	}
	return fmt.Errorf("config directory %s (%s) does not exist: name the deployment's config directory, or create an empty one to run on the built-in defaults", dir, flag)
}

// ListenOptions configure Listen.
type ListenOptions struct {
	Addr    string
	Handler http.Handler
	TLS     *tls.Config
	Logger  *slog.Logger
	Ready   func(addr string)
	Name    string
	// Listener, when set, is used instead of listening on Addr.
	Listener net.Listener
}

// Listen serves h with the service's timeouts until ctx ends, then shuts
// down gracefully within ShutdownTimeout.
func Listen(ctx context.Context, o ListenOptions) error {
	ln := o.Listener
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", o.Addr)
		if err != nil {
			return fmt.Errorf("listen %s: %w", o.Addr, err)
		}
	}
	srv := &http.Server{
		Handler:           o.Handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		TLSConfig:         o.TLS,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	errc := make(chan error, 1)
	if o.TLS != nil {
		scheme = "https"
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	addr := ln.Addr().String()
	o.Logger.Info("listening", "service", o.Name, "url", scheme+"://"+addr)
	if o.Ready != nil {
		o.Ready(scheme + "://" + addr)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	o.Logger.Info("shutting down", "service", o.Name)
	c, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(c); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
