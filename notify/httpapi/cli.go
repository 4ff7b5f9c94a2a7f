package httpapi

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/govkit/govkit/internal/cliflags"
	"github.com/govkit/govkit/internal/preflight"
	"github.com/govkit/govkit/notify/config"
)

// Main is `govkit notify serve`: flags --dir (the deployment directory,
// default "."; config files in its src/) and --data-dir (default ./data).
// env is the process environment, read once by the caller. It returns the
// exit code: 0 after a clean shutdown, 2 for bad usage or a service that
// cannot start (all config problems listed at once), 1 when serving fails.
func Main(ctx context.Context, args []string, env map[string]string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("govkit notify serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var loc deploymentFlags
	loc.register(fs)
	metricsListen := fs.String("metrics-listen", "", "serve the Prometheus metrics at /metrics on this host:port, a listener of their own open to any scraper (the API's /metrics stays for super admins)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: govkit notify serve [--dir DIR] [--config-dir DIR] [--data-dir DIR] [--metrics-listen ADDR]")
		fmt.Fprintln(w, "\nServes the notification service (NotifyBC 6 API) of a deployment directory.")
		fmt.Fprintln(w, "Environment: NODE_ENV (config.<NODE_ENV>.* files), NOTIFYBC_NODE_ROLE (unset, primary or secondary).\n\nFlags:")
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args, stdout); !ok {
		return code
	}
	o := RunOptions{Dir: loc.dir, ConfigDir: loc.configDir, DataDir: loc.dataDir, MetricsListen: *metricsListen}
	o.Env = env
	o.Log = stderr
	started := false
	o.Ready = func(addr string) {
		started = true
		fmt.Fprintf(stdout, "notify: serving %s%s\n", addr, "/api")
	}
	if err := Run(ctx, o); err != nil {
		fmt.Fprintf(stderr, "govkit notify serve: %v\n", err)
		if started {
			return 1
		}
		return 2
	}
	return 0
}

// CheckMain is `govkit notify check-config`: it reads the configuration
// serve would (the same flags and environment), refuses what serve would
// refuse, then connects to each external part — the store (reading the
// administrators), the queue's Redis (PING), the SMTP server (connect,
// TLS, sign in; no mail is sent), the inbound SMTP address (free to
// listen on, or already answered by an SMTP server) and the OpenID
// provider — and prints one line per part. Exit 0 when everything works,
// 1 when something does not, 2 on bad usage.
func CheckMain(ctx context.Context, args []string, env map[string]string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("govkit notify check-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var loc deploymentFlags
	loc.register(fs)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: govkit notify check-config [--dir DIR] [--config-dir DIR] [--data-dir DIR]")
		fmt.Fprintln(w, "\nReads the configuration `govkit notify serve` would, with the same flags and environment,")
		fmt.Fprintln(w, "connects to every external part it names and prints what works; exit 0 only when all do.\n\nFlags:")
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args, stdout); !ok {
		return code
	}
	conf := preflight.Result{Part: preflight.Part{Name: "config", Kind: "files"}}
	fail := func(err error) int {
		conf.Err = err
		preflight.Print(stdout, []preflight.Result{conf})
		return 1
	}
	role, err := config.ParseNodeRole(env["NOTIFYBC_NODE_ROLE"])
	if err != nil {
		return fail(err)
	}
	cfg, err := loc.load(env, nil)
	if err != nil {
		return fail(err)
	}
	if _, err := TLSConfig(cfg.TLS); err != nil {
		return fail(err)
	}
	conf.Part.Addr = strings.Join(cfg.Files, ", ")
	if conf.Part.Addr == "" {
		conf.Part.Addr = "none: the built-in defaults"
	}
	roleName := string(role)
	if roleName == "" {
		roleName = "single node"
	}
	conf.Note = fmt.Sprintf("NODE_ENV=%q, %s", env["NODE_ENV"], roleName)
	for _, w := range cfg.Warnings {
		conf.Warnings = append(conf.Warnings, w.String())
	}
	security, err := CheckAuthority(cfg, env["NODE_ENV"])
	if err != nil {
		return fail(err)
	}
	conf.Warnings = append(conf.Warnings, security...)
	ok := preflight.Print(stdout, append([]preflight.Result{conf}, preflight.Run(ctx, Parts(cfg, loc.dataDir))...))
	if !ok {
		return 1
	}
	return 0
}
