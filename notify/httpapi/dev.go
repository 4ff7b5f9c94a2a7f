package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/mailcatcher"
	"github.com/govkit/govkit/notify/sms"
)

// Ports `govkit dev` tries first for the notification service (the
// original's default) and its mail catcher; busy ports fall back to free
// ones.
const (
	DevPort     = "3000"
	DevSMTPPort = "1025"
)

// DevRSABits is the size of the RSA key pair govkit dev makes at the first
// start of a data directory: smaller than production's 4096 bits so that the
// first start is quick.
const DevRSABits = 2048

// DevOptions configure StartDev.
type DevOptions struct {
	DataDir string
	Host    string
	Log     io.Writer // service log; nil discards it
	// RSABits is the size of the key pair made at the first start
	// (0: DevRSABits).
	RSABits int
	// Cron adjusts the scheduled jobs, which govkit dev runs (tests pass
	// a manual clock).
	Cron CronOptions
	// InboundSMTPPort is the port tried first for the inbound SMTP server
	// ("": DevInboundSMTPPort).
	InboundSMTPPort string
}

// Dev is the notification service of `govkit dev`.
type Dev struct {
	URL     string // the service, e.g. http://127.0.0.1:3000
	MailURL string // the page listing caught mail
	SMTP    string // the mail catcher's SMTP address
	// InboundSMTP is the inbound SMTP server's address (list-unsubscribe
	// mail and bounces to un-…/bn-… at DevInboundDomain).
	InboundSMTP string
	stop        func(context.Context) error
}

// Stop shuts the service down.
func (d *Dev) Stop(ctx context.Context) error { return d.stop(ctx) }

// StartDev starts the notification service on embedded defaults: the
// built-in configuration (every request from the loopback address is super
// admin), the embedded document store in DataDir, all mail to an
// in-process mail catcher whose page is served at /mail/ beside the API,
// and SMS written to the log. It prints the URLs to w.
func StartDev(ctx context.Context, o DevOptions, w io.Writer) (*Dev, error) {
	// Starting is bounded and must finish even when the caller is already
	// shutting down, so that Stop has something consistent to stop.
	ctx = context.WithoutCancel(ctx)
	if o.RSABits == 0 {
		o.RSABits = DevRSABits
	}
	logOut := o.Log
	if logOut == nil {
		logOut = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(logOut, nil))
	catcher := mailcatcher.New(mailcatcher.Options{Logger: logger})
	smtpAddr, stopMail, err := catcher.Start(context.WithoutCancel(ctx), net.JoinHostPort(o.Host, DevSMTPPort))
	if err != nil {
		smtpAddr, stopMail, err = catcher.Start(context.WithoutCancel(ctx), net.JoinHostPort(o.Host, "0"))
		if err != nil {
			return nil, fmt.Errorf("mail catcher: %w", err)
		}
	}
	host, port, _ := net.SplitHostPort(smtpAddr)
	p, _ := strconv.Atoi(port)
	cfg, err := config.New(map[string]any{"host": o.Host, "email": map[string]any{"inboundSmtpServer": map[string]any{"domain": DevInboundDomain}}})
	if err != nil {
		_ = stopMail(ctx)
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
			SMS:  sms.LogSender{Logger: logger},
		},
	})
	if err != nil {
		_ = stopMail(ctx)
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, DevPort))
	if err != nil {
		ln, err = net.Listen("tcp", net.JoinHostPort(o.Host, "0"))
	}
	if err != nil {
		_ = app.Close(ctx)
		_ = stopMail(ctx)
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mail/", http.StripPrefix("/mail", catcher.Handler()))
	mux.Handle("/", app.Server)
	d := &Dev{URL: "http://" + ln.Addr().String(), SMTP: smtpAddr}
	d.MailURL = d.URL + "/mail/"
	if o.InboundSMTPPort == "" {
		o.InboundSMTPPort = DevInboundSMTPPort
	}
	var stopInbound func(context.Context) error
	if d.InboundSMTP, stopInbound, err = app.startDevInbound(ctx, o.Host, o.InboundSMTPPort, d.URL, logger, w); err != nil {
		_ = ln.Close()
		_ = app.Close(ctx)
		_ = stopMail(ctx)
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
	root := strings.TrimRight(cfg.RestAPIRoot, "/")
	fmt.Fprintf(w, "notify: API          %s%s (requests from %s are super admin)\n", d.URL, root, strings.Join(cfg.AdminIPs, ", "))
	fmt.Fprintf(w, "notify: API explorer %s%s/explorer\n", d.URL, root)
	fmt.Fprintf(w, "notify: caught mail  %s (SMTP %s)\n", d.MailURL, smtpAddr)
	fmt.Fprintf(w, "notify: inbound SMTP %s (list-unsubscribe and bounce mail to un-…/bn-… addresses @%s)\n", d.InboundSMTP, DevInboundDomain)
	fmt.Fprintf(w, "notify: data         %s\n", o.DataDir)
	fmt.Fprintf(w, "notify: cron         on (purgeData, dispatchLiveNotifications, checkRssConfigUpdates, deleteBounces, reDispatchBroadcastPushNotifications)\n")
	return d, nil
}
