package main

import (
	"context"
	"fmt"
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
func startDocplatformDev(ctx context.Context, o devOptions, w io.Writer) (devRunning, error) {
	s, err := dev.Start(ctx, dev.Options{
		DataDir: o.dataDir, Host: o.host, Getenv: os.Getenv, Demo: !o.noDemo, TokenLifetime: o.tokenLifetime,
		PlatformListener: o.listeners["platform-port"], ProviderListener: o.listeners["provider-port"],
		Logger: o.logger("platform"), ProviderLogger: o.logger("provider"),
	}, w)
	if err != nil {
		return devRunning{}, err
	}
	u := s.Platform.URL
	try := []string{
		fmt.Sprintf("Open the web UI %s/ and sign in as alice (password Alice-123).\nThen open the API explorer %s/api/docs: its forms send requests with that session\n(GET /api/documents lists the demo documents; GET /api/auth/me shows your groups).", u, u),
	}
	if s.Demo != nil {
		try = append(try, fmt.Sprintf("As a machine, with the demo API key:\ncurl -H 'X-API-Key: %s' %s/api/documents", s.Demo.APIKey, u))
	}
	return devRunning{stop: s.Stop, tryFirst: try}, nil
}
