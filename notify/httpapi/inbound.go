package httpapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"

	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/inbound"
)

// DevInboundSMTPPort is the port `govkit dev` tries first for the inbound
// SMTP server (list-unsubscribe mail and bounces); a busy port falls back
// to a free one, with a warning.
const DevInboundSMTPPort = "2525"

// InboundOptions configure startInbound.
type InboundOptions struct {
	// Addr is host:port to listen on; port 0 picks a free one.
	Addr string
	// Listener, when set, is served instead of listening on Addr.
	Listener net.Listener
	// Certificate is the deployment's (server/certs), for TLS; nil when it
	// has none.
	Certificate *tls.Certificate
	// HTTPHost is scheme://host:port of the API, for links in the
	// acknowledgement of an unsubscription by mail.
	HTTPHost string
	Logger   *slog.Logger
}

// startInbound starts the inbound SMTP server of an App when
// email.inboundSmtpServer.enabled (on every node role, as in the
// original). It returns the address it listens on ("" when disabled) and
// the function that stops it.
func (a *App) startInbound(ctx context.Context, o InboundOptions) (string, func(context.Context) error, error) {
	cfg := a.Server.Config()
	if !cfg.Email.InboundSMTPServer.Enabled {
		return "", func(context.Context) error { return nil }, nil
	}
	srv, warnings, err := inbound.New(inbound.Options{
		Config: cfg, Store: a.Store, Subscriptions: a.Subscriptions,
		Certificate: o.Certificate, HTTPHost: o.HTTPHost, Logger: o.Logger,
		Applied: a.Server.metrics.countInbound,
	})
	if err != nil {
		return "", nil, err
	}
	for _, w := range warnings {
		o.Logger.Warn("inbound SMTP", "problem", w)
	}
	var addr string
	var stop func(context.Context) error
	if o.Listener != nil {
		addr, stop, err = srv.Serve(ctx, o.Listener)
	} else {
		addr, stop, err = srv.Start(ctx, o.Addr)
	}
	if err != nil {
		return "", nil, err
	}
	o.Logger.Info("listening", "service", "inbound SMTP", "addr", addr, "domains", cfg.Email.InboundSMTPServer.Domains)
	return addr, stop, nil
}

// inboundAddr is where `govkit notify serve` takes inbound mail: the
// service's host (as the API) and email.inboundSmtpServer.listeningSmtpPort.
func inboundAddr(host string, port int) string {
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// deploymentCertificate is the certificate of the deployment's TLS
// settings, if any.
func deploymentCertificate(c *tls.Config) *tls.Certificate {
	if c == nil || len(c.Certificates) == 0 {
		return nil
	}
	return &c.Certificates[0]
}

// selfHTTPHost is how the service reaches its own API, for links in mail
// sent on behalf of inbound mail: internalHttpHost, else localhost at the
// service's port, as the original calls itself.
func selfHTTPHost(cfg *config.Config, tls bool) string {
	if cfg.InternalHTTPHost != "" {
		return cfg.InternalHTTPHost
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort("localhost", strconv.Itoa(cfg.Port))
}

// startDevInbound starts the inbound SMTP server of `govkit dev` on
// host:port, or on a free port with a warning to w when that one is taken.
func (a *App) startDevInbound(ctx context.Context, ln net.Listener, host, port, httpHost string, logger *slog.Logger, w io.Writer) (string, func(context.Context) error, error) {
	if ln != nil {
		// `govkit dev` opened it, and announced a taken port itself.
		return a.startInbound(ctx, InboundOptions{Listener: ln, HTTPHost: httpHost, Logger: logger})
	}
	o := InboundOptions{Addr: net.JoinHostPort(host, port), HTTPHost: httpHost, Logger: logger}
	addr, stop, err := a.startInbound(ctx, o)
	if err == nil {
		return addr, stop, nil
	}
	o.Addr = net.JoinHostPort(host, "0")
	addr, stop, ferr := a.startInbound(ctx, o)
	if ferr != nil {
		return "", nil, ferr
	}
	fmt.Fprintf(w, "notify: warning: inbound SMTP port %s is not available (%v); using %s instead (choose one with govkit dev --inbound-smtp-port)\n", port, err, addr)
	return addr, stop, nil
}

// DevInboundDomain is email.inboundSmtpServer.domain in `govkit dev`, so
// that push mail in the mail catcher carries the un-… List-Unsubscribe
// address and the bn-… envelope sender, and mail to them can be tried
// against the inbound SMTP server.
const DevInboundDomain = "localhost"
