package httpapi

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/govkit/govkit/internal/cliflags"
)

// Main is `govkit notify serve`: flags --dir (the deployment directory,
// default "."; config files in its src/) and --data-dir (default ./data).
// env is the process environment, read once by the caller. It returns the
// exit code: 0 after a clean shutdown, 2 for bad usage or a service that
// cannot start (all config problems listed at once), 1 when serving fails.
func Main(ctx context.Context, args []string, env map[string]string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("govkit notify serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o RunOptions
	fs.StringVar(&o.Dir, "dir", ".", "deployment directory: config files in DIR/src, TLS material in DIR/server/certs")
	fs.StringVar(&o.ConfigDir, "config-dir", "", "config directory (default DIR/src)")
	fs.StringVar(&o.DataDir, "data-dir", "./data", "directory for the embedded document store (used when the datasource has no uri)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: govkit notify serve [--dir DIR] [--data-dir DIR]")
		fmt.Fprintln(stderr, "\nServes the notification service (NotifyBC 6 API) of a deployment directory.")
		fmt.Fprintln(stderr, "Environment: NODE_ENV (config.<NODE_ENV>.* files), NOTIFYBC_NODE_ROLE (unset, primary or secondary).")
		fs.PrintDefaults()
	}
	if code, ok := cliflags.Parse(fs, args); !ok {
		return code
	}
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
