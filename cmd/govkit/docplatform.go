package main

import (
	"context"
	"io"
	"os"

	"github.com/govkit/govkit/docplatform/dev"
	"github.com/govkit/govkit/docplatform/platform"
)

func init() {
	subcommands["docplatform"]["serve"] = command{"serve the document platform, configured by environment variables", runDocplatformServe}
}

func runDocplatformServe(ctx context.Context, args []string, io stdio) int {
	return platform.Serve(ctx, args, os.Getenv, io.out, io.err)
}

// startDocplatformDev starts the document platform for `govkit dev`: the
// development OpenID provider and the platform on SQLite in the data dir.
func startDocplatformDev(ctx context.Context, o devOptions, w io.Writer) (func(context.Context) error, error) {
	s, err := dev.Start(ctx, dev.Options{DataDir: o.dataDir, Host: o.host, Getenv: os.Getenv, TokenLifetime: o.tokenLifetime}, w)
	if err != nil {
		return nil, err
	}
	return s.Stop, nil
}
