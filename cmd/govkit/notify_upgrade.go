package main

import (
	"context"
	"os"

	"github.com/govkit/govkit/notify/upgrade"
)

func init() {
	subcommands["notify"]["upgrade"] = command{summary: "move a deployment's config (and data) from major version N to N+1", run: runNotifyUpgrade}
}

// runNotifyUpgrade reads the environment here, once, and leaves the rest to
// the upgrade package.
func runNotifyUpgrade(ctx context.Context, args []string, io stdio) int {
	return upgrade.Main(ctx, args, io.out, io.err, os.LookupEnv)
}
