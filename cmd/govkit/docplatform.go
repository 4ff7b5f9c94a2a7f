package main

import (
	"context"
	"io"
	"os"

	"github.com/govkit/govkit/docplatform/platform"
)

func init() {
	subcommands["docplatform"]["serve"] = command{"serve the document platform, configured by environment variables", runDocplatformServe}
}

func runDocplatformServe(ctx context.Context, args []string, io stdio) int {
	return platform.Serve(ctx, args, os.Getenv, io.out, io.err)
}

// startDocplatformDev starts the document platform for `govkit dev`.
func startDocplatformDev(ctx context.Context, o devOptions, w io.Writer) (func(context.Context) error, error) {
	return nil, errPartNotBuilt
}
