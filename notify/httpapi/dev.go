package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/mailcatcher"
)

// Ports `govkit dev` tries first for the notification service (the
// original's default) and its mail catcher; busy ports fall back to free
// ones.
const (
	DevPort     = "3000"
	DevSMTPPort = "1025"
)

// DevOutboundAllow is outboundRequests.allow of `govkit dev`: loopback, so
// that feeds and callbacks served on the developer's machine can be tried
// (production refuses loopback unless an operator allows it).
var DevOutboundAllow = []any{"127.0.0.0/8", "::1", "localhost"}

// DevRSABits is the size of the RSA key pair govkit dev makes at the first
// start of a data directory: smaller than production's 4096 bits so that the
// first start is quick.
const DevRSABits = 2048

// DevOptions configure StartDev.
type DevOptions struct {
	DataDir string
	Host    string
	// Listener and SMTPListener, when set, are where the service and the
	// mail catcher listen (`govkit dev` opens them, so that a taken port
	// is reported with the flag that moves it). Otherwise DevPort and
	// DevSMTPPort on Host, or free ports when those are taken.
	Listener, SMTPListener net.Listener
	// Logger receives the service's log, one line per request and per
	// SMS included; MailLogger the mail catcher's (nil: Logger). Nil
	// Logger: Log.
	Logger, MailLogger *slog.Logger
	Log                io.Writer // service log when Logger is nil; nil discards it
	// RSABits is the size of the key pair made at the first start
	// (0: DevRSABits).
	RSABits int
	// Cron adjusts the scheduled jobs, which govkit dev runs (tests pass
	// a manual clock).
	Cron CronOptions
	// InboundSMTPListener, when set, is where the inbound SMTP server
	// listens; otherwise InboundSMTPPort ("": DevInboundSMTPPort) on Host,
	// or a free port when that one is taken.
	InboundSMTPListener net.Listener
	InboundSMTPPort     string
	// Demo seeds a demo service on the first start of a fresh data
	// directory (see DevDemo; `govkit dev` without --no-demo).
	Demo bool
	// OIDC, when set, lets the console sign in with an OpenID provider
	// (govkit dev's development provider).
	OIDC *DevOIDC
}

// DevOIDC is the OpenID provider the development service trusts: config
// key oidc with discoveryUrl and clientId, jwtVerifyOptions requiring the
// provider's issuer and the console's client as audience, and an isAdmin
// rule making the tokens whose email is one of Admins Admin. Everyone else
// the provider signs in is an AuthenticatedUser named by email.
type DevOIDC struct {
	DiscoveryURL string
	Issuer       string
	ClientID     string
	Admins       []string // emails, compared without case
}

// DevConsoleClientID is the console's public client at govkit dev's
// OpenID provider.
const DevConsoleClientID = "notify-console"

// DevConsoleCallbackPath is where the console receives the provider's
// answer (a redirect URI of its client, with the console's origin).
const DevConsoleCallbackPath = "/oidc-callback"

// DevConsoleRedirectURIs are the redirect URIs of the console's client for
// a service listening on addr (host:port): the console's page and its
// callback, at 127.0.0.1 and at localhost, which browsers treat as
// different origins.
func DevConsoleRedirectURIs(addr string) []string {
	_, port, _ := net.SplitHostPort(addr)
	var out []string
	for _, h := range []string{"127.0.0.1", "localhost"} {
		origin := "http://" + net.JoinHostPort(h, port)
		out = append(out, origin+"/", origin+DevConsoleCallbackPath)
	}
	return out
}

// config is the oidc config tree.
func (o *DevOIDC) config() map[string]any {
	admins := map[string]bool{}
	for _, a := range o.Admins {
		admins[strings.ToLower(a)] = true
	}
	isAdmin := config.Func(func(_ context.Context, args ...any) (any, error) {
		claims, _ := args[0].(map[string]any)
		email, _ := claims["email"].(string)
		verified, _ := claims["email_verified"].(bool)
		return verified && admins[strings.ToLower(email)], nil
	})
	return map[string]any{
		"discoveryUrl":     o.DiscoveryURL,
		"clientId":         o.ClientID,
		"isAdmin":          isAdmin,
		"jwtVerifyOptions": map[string]any{"issuer": o.Issuer, "audience": o.ClientID},
	}
}

// Dev is the notification service of `govkit dev`.
type Dev struct {
	URL     string // the service, e.g. http://127.0.0.1:3000
	MailURL string // the page listing caught mail and SMS
	SMTP    string // the mail catcher's SMTP address
	Mail    *mailcatcher.Catcher
	// InboundSMTP is the inbound SMTP server's address (list-unsubscribe
	// mail and bounces to un-…/bn-… at DevInboundDomain).
	InboundSMTP string
	// Demo is what this start seeded; nil when the data directory had
	// been used before, or without DevOptions.Demo.
	Demo *DevDemo
	stop func(context.Context) error
}

// Stop shuts the service down.
func (d *Dev) Stop(ctx context.Context) error { return d.stop(ctx) }

// StartDev starts the notification service on embedded defaults: the
// built-in configuration (every request from the loopback address is super
// admin), the embedded document store in DataDir, all mail and SMS to an
// in-process catcher whose page is served at /mail/ beside the API and
// which keeps what it caught in DataDir/caught-mail. On a fresh data
// directory it seeds a demo service (DevDemo). It prints the URLs to w.
func StartDev(ctx context.Context, o DevOptions, w io.Writer) (_ *Dev, err error) {
	// Starting is bounded and must finish even when the caller is already
	// shutting down, so that Stop has something consistent to stop.
	ctx = context.WithoutCancel(ctx)
	if o.RSABits == 0 {
		o.RSABits = DevRSABits
	}
	logger := o.Logger
	if logger == nil {
		logOut := o.Log
		if logOut == nil {
			logOut = io.Discard
		}
		logger = slog.New(slog.NewTextHandler(logOut, nil))
	}
	mailLogger := o.MailLogger
	if mailLogger == nil {
		mailLogger = logger
	}
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	for _, l := range []net.Listener{o.Listener, o.SMTPListener} {
		if l != nil {
			cleanup = append(cleanup, func() { l.Close() })
		}
	}
	catcherOpts := mailcatcher.Options{Logger: mailLogger}
	catcher := mailcatcher.New(catcherOpts)
	if o.DataDir != "" {
		catcherOpts.Dir = filepath.Join(o.DataDir, "caught-mail")
		if catcher, err = mailcatcher.Open(catcherOpts); err != nil {
			return nil, err
		}
	}
	smtpLn := o.SMTPListener
	if smtpLn == nil {
		if smtpLn, err = devListen(o.Host, DevSMTPPort); err != nil {
			return nil, fmt.Errorf("mail catcher: %w", err)
		}
	}
	smtpAddr, stopMail, err := catcher.Serve(context.WithoutCancel(ctx), smtpLn)
	if err != nil {
		return nil, fmt.Errorf("mail catcher: %w", err)
	}
	cleanup = append(cleanup, func() { _ = stopMail(ctx) })
	host, port, _ := net.SplitHostPort(smtpAddr)
	p, _ := strconv.Atoi(port)
	tree := map[string]any{"host": o.Host, "queue": map[string]any{"connection": nil}, "email": map[string]any{"inboundSmtpServer": map[string]any{"domain": DevInboundDomain}},
		// Development feeds, callbacks and the provider run on this
		// machine: loopback is admitted on purpose. The service's own
		// requests still arrive as an anonymous caller's (is_anonymous).
		"outboundRequests": map[string]any{"allow": DevOutboundAllow}}
	if o.OIDC != nil {
		tree["oidc"] = o.OIDC.config()
	}
	cfg, err := config.New(tree)
	if err != nil {
		return nil, err
	}
	app, err := OpenApp(ctx, AppOptions{
		Config:      cfg,
		DataDir:     o.DataDir,
		Logger:      logger,
		RSABits:     o.RSABits,
		Cron:        true,
		CronOptions: o.Cron,
		ChannelOptions: channel.Options{
			SMTP: &email.SMTPConfig{Host: host, Port: p, IgnoreTLS: true, Name: "localhost"},
			SMS:  catcher.SMSSender(),
		},
	})
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { _ = app.Close(ctx) })
	ln := o.Listener
	if ln == nil {
		if ln, err = devListen(o.Host, DevPort); err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	// The caught mail holds every confirmation code and unsubscribe link:
	// it is for whoever the API makes an administrator, by the same rules.
	mux.Handle("/mail/", app.Server.AdminsOnly(http.StripPrefix("/mail", catcher.Handler())))
	mux.Handle("/", app.Server)
	d := &Dev{URL: "http://" + ln.Addr().String(), SMTP: smtpAddr, Mail: catcher}
	d.MailURL = d.URL + "/mail/"
	if o.InboundSMTPPort == "" {
		o.InboundSMTPPort = DevInboundSMTPPort
	}
	var stopInbound func(context.Context) error
	if d.InboundSMTP, stopInbound, err = app.startDevInbound(ctx, o.InboundSMTPListener, o.Host, o.InboundSMTPPort, d.URL, logger, w); err != nil {
		_ = ln.Close()
		return nil, err
	}
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() {
		done <- Listen(serveCtx, ListenOptions{Listener: ln, Handler: mux, Logger: logger, Name: "notify"})
	}()
	d.stop = func(ctx context.Context) error {
		cancel()
		err := <-done
		if ierr := stopInbound(ctx); err == nil {
			err = ierr
		}
		if cerr := app.Close(ctx); err == nil {
			err = cerr
		}
		if serr := stopMail(ctx); err == nil {
			err = serr
		}
		return err
	}
	cleanup = []func(){func() { _ = d.stop(ctx) }}
	root := strings.TrimRight(cfg.RestAPIRoot, "/")
	demoNote := "not seeded (--no-demo)"
	if o.Demo && o.DataDir != "" {
		if d.Demo, demoNote, err = seedDevDemo(ctx, d.URL+root, o.DataDir); err != nil {
			return nil, fmt.Errorf("seeding the demo service: %w", err)
		}
	}
	fmt.Fprintf(w, "notification service  %s%s (requests from %s are super admin)\n", d.URL, root, strings.Join(cfg.AdminIPs, ", "))
	fmt.Fprintf(w, "  web console         %s/\n", d.URL)
	if o.OIDC != nil {
		fmt.Fprintf(w, "  console sign-in     OIDC at %s (client %s; %s are Admin, other logins AuthenticatedUser)\n",
			strings.TrimSuffix(o.OIDC.DiscoveryURL, "/.well-known/openid-configuration"), o.OIDC.ClientID, strings.Join(o.OIDC.Admins, ", "))
	}
	fmt.Fprintf(w, "  API explorer        %s%s/explorer\n", d.URL, root)
	fmt.Fprintf(w, "  metrics             %s/metrics (Prometheus; super admins only: this machine)\n", d.URL)
	kept := "in memory"
	if catcherOpts.Dir != "" {
		kept = "kept in " + catcherOpts.Dir
	}
	fmt.Fprintf(w, "  caught mail and SMS %s (SMTP %s; %s)\n", d.MailURL, smtpAddr, kept)
	fmt.Fprintf(w, "  inbound SMTP        %s (list-unsubscribe and bounce mail to un-…/bn-… addresses @%s)\n", d.InboundSMTP, DevInboundDomain)
	if d.Demo != nil {
		fmt.Fprintf(w, "  demo service        %q with %d confirmed subscriptions (%s)\n", d.Demo.Service, len(d.Demo.Subscriptions), d.Demo.summary())
	} else {
		fmt.Fprintf(w, "  demo service        %s\n", demoNote)
	}
	fmt.Fprintf(w, "  queue               embedded Redis on %s (broadcasts, throttles)\n", app.Queue.Addr)
	fmt.Fprintf(w, "  data                %s\n", filepath.Join(o.DataDir, "notify-db"))
	fmt.Fprintf(w, "  cron                on (purgeData, dispatchLiveNotifications, checkRssConfigUpdates, deleteBounces, reDispatchBroadcastPushNotifications)\n")
	return d, nil
}

// devListen listens on host:port, or on a free port when that one is taken.
func devListen(host, port string) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	}
	return ln, err
}
