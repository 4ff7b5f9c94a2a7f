package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/govkit/govkit/docplatform/dev"
	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/docplatform/platform"
	"github.com/govkit/govkit/notify/httpapi"
)

func init() {
	subcommands["docplatform"]["serve"] = command{summary: "serve the document platform, configured by environment variables", run: runDocplatformServe}
	subcommands["docplatform"]["check-config"] = command{summary: "read serve's variables, connect to each part they name, say what works", run: runDocplatformCheckConfig}
}

func runDocplatformCheckConfig(ctx context.Context, args []string, io stdio) int {
	return platform.CheckConfig(ctx, args, os.Getenv, io.out, io.err)
}

func runDocplatformServe(ctx context.Context, args []string, io stdio) int {
	return platform.Serve(ctx, args, os.Getenv, io.out, io.err)
}

// startDocplatformDev starts the document platform for `govkit dev`: the
// development OpenID provider and the platform on SQLite in the data dir.
func startDocplatformDev(ctx context.Context, o devOptions, w io.Writer) (devRunning, error) {
	var others []devidp.Client
	if ln := o.listeners["notify-port"]; ln != nil {
		// The notification console signs in from its page: a public
		// client (no secret, PKCE), access tokens carrying the email
		// notify names its users by.
		others = append(others, devidp.Client{ID: httpapi.DevConsoleClientID, RedirectURIs: httpapi.DevConsoleRedirectURIs(ln.Addr().String()),
			PostLogoutRedirectURIs: httpapi.DevConsoleRedirectURIs(ln.Addr().String()), ProfileInAccessToken: true})
	}
	s, err := dev.Start(ctx, dev.Options{
		DataDir: o.dataDir, Host: o.host, Getenv: os.Getenv, Demo: !o.noDemo, TokenLifetime: o.tokenLifetime,
		PlatformListener: o.listeners["platform-port"], ProviderListener: o.listeners["provider-port"],
		Logger: o.logger("platform"), ProviderLogger: o.logger("provider"),
		OtherClients: others,
	}, w)
	if err != nil {
		return devRunning{}, err
	}
	if len(others) > 0 && o.shared != nil {
		c := &httpapi.DevOIDC{
			DiscoveryURL: s.Provider.Issuer() + "/.well-known/openid-configuration",
			Issuer:       s.Provider.Issuer(),
			ClientID:     httpapi.DevConsoleClientID,
		}
		for _, u := range s.Users {
			if u.SystemAdmin && u.Email != "" {
				c.Admins = append(c.Admins, u.Email)
			}
		}
		o.shared.consoleOIDC = c
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
