package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/govkit/govkit/notify/httpapi"
)

// devOptions are the settings every part started by `govkit dev` shares.
type devOptions struct {
	dataDir string // everything the embedded defaults keep on disk
	host    string // interface to listen on; loopback by default
	// tokenLifetime is the development OpenID provider's access-token
	// lifetime (the document platform's sessions refresh at 75 % of it).
	tokenLifetime time.Duration
	// inboundSMTPPort is the port tried first for the notification
	// service's inbound SMTP server.
	inboundSMTPPort string
}

// A devPart is one service that `govkit dev` runs. start returns once the
// part is serving, after printing its URLs and demo logins to w; the returned
// stop shuts it down gracefully within the context's deadline.
type devPart struct {
	name  string
	start func(ctx context.Context, opts devOptions, w io.Writer) (stop func(context.Context) error, err error)
}

// errPartNotBuilt is returned by a part whose code is not in this build yet,
// so that dev can say plainly what it did not start.
var errPartNotBuilt = errors.New("not part of this build yet")

func devParts() []devPart {
	return []devPart{
		{"document platform", startDocplatformDev},
		{"notification service", startNotifyDev},
	}
}

func runDev(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("govkit dev", flag.ContinueOnError)
	fs.SetOutput(io.err)
	var o devOptions
	fs.StringVar(&o.dataDir, "data-dir", "./data", "directory for everything the embedded defaults keep on disk")
	fs.StringVar(&o.host, "host", "127.0.0.1", "interface to listen on")
	fs.DurationVar(&o.tokenLifetime, "token-lifetime", 5*time.Minute, "access-token lifetime of the development OpenID provider (a Go duration: 30s, 80s, 5m)")
	fs.StringVar(&o.inboundSMTPPort, "inbound-smtp-port", httpapi.DevInboundSMTPPort, "port of the notification service's inbound SMTP server (list-unsubscribe and bounce mail); a busy port falls back to a free one")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "Usage: govkit dev [--data-dir DIR] [--host ADDR] [--token-lifetime DURATION] [--inbound-smtp-port PORT]")
		fmt.Fprintln(io.err, "\nRuns every part of govkit on embedded defaults until interrupted (Ctrl-C).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	if o.tokenLifetime < time.Second {
		fmt.Fprintln(io.err, "govkit dev: --token-lifetime must be at least 1s")
		return 2
	}
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		fmt.Fprintf(io.err, "govkit dev: %v\n", err)
		return 2
	}

	var stops []func(context.Context) error
	started := 0
	for _, p := range devParts() {
		stop, err := p.start(ctx, o, io.out)
		switch {
		case errors.Is(err, errPartNotBuilt):
			fmt.Fprintf(io.out, "%s: not started (%v)\n", p.name, err)
		case err != nil:
			fmt.Fprintf(io.err, "govkit dev: %s: %v\n", p.name, err)
			shutdown(stops)
			return 1
		default:
			fmt.Fprintf(io.out, "%s: started\n", p.name)
			started++
			stops = append(stops, stop)
		}
	}
	fmt.Fprintf(io.out, "govkit dev: %d part(s) running; the event CLI is `govkit event`. Press Ctrl-C to stop.\n", started)
	<-ctx.Done()
	fmt.Fprintln(io.out, "govkit dev: stopping")
	shutdown(stops)
	return 0
}

// shutdown stops the parts in reverse order of starting, giving them a
// bounded time to finish in-flight work.
func shutdown(stops []func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i := len(stops) - 1; i >= 0; i-- {
		_ = stops[i](ctx)
	}
}
