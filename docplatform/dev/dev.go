// Package dev runs the document platform for `govkit dev`: the development
// OpenID provider (devidp) and the platform on SQLite under the data
// directory, wired to each other, with the demo admin made system admin.
//
// It is a package of its own so that `govkit docplatform serve`
// (docplatform/platform) never links the development provider's code
// paths into its own wiring.
package dev

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/config"
	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/docplatform/platform"
)

// Default ports: the original platform's 3002, and 8081 for the provider.
// When one is taken, a free port is used instead and printed.
const (
	PlatformPort = "3002"
	ProviderPort = "8081"
	clientID     = "govkit-docplatform"
)

// Options configure the development platform.
type Options struct {
	DataDir string // everything kept on disk: database, cookie secret, provider key, documents
	Host    string // interface to listen on; 127.0.0.1 by default
	// PlatformPort and ProviderPort default to PlatformPort and ProviderPort
	// above ("0" picks a free port). A taken port falls back to a free one.
	PlatformPort, ProviderPort string
	Logger                     *slog.Logger
	// DatabaseURL overrides the SQLite file under DataDir (tests run the
	// same stack on PostgreSQL).
	DatabaseURL string
	// Getenv, when set, lets THROTTLE_* and API_KEY_* variables tune the
	// dev platform as they tune `serve` (the SSO and storage settings are
	// always the dev ones).
	Getenv func(string) string
	// TokenLifetime is how long the development provider's access tokens
	// live (`govkit dev --token-lifetime`); zero means the provider's
	// default of 5 minutes. The platform's /api/auth/me and refresh
	// answers (expires_in) and the access cookie follow it, so the web
	// UI's refresh rules can be watched with a short one.
	TokenLifetime time.Duration
}

// Stack is the running development platform.
type Stack struct {
	Platform *platform.Platform
	Provider *devidp.Server
	Users    []devidp.User
}

// Start starts the provider and the platform, prints their URLs and the
// demo logins to w, and returns the running stack.
//
// The stack lives until Stop, not until ctx ends: `govkit dev` stops its
// parts in order after an interrupt, and a part must not vanish under it.
func Start(ctx context.Context, o Options, w io.Writer) (*Stack, error) {
	ctx = context.WithoutCancel(ctx)
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.PlatformPort == "" {
		o.PlatformPort = PlatformPort
	}
	if o.ProviderPort == "" {
		o.ProviderPort = ProviderPort
	}
	if o.TokenLifetime < 0 {
		return nil, fmt.Errorf("token lifetime %v: must be positive", o.TokenLifetime)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, err
	}
	secret, err := cookieSecret(filepath.Join(o.DataDir, "docplatform-cookie-secret"))
	if err != nil {
		return nil, err
	}
	pln, err := listen(o.Host, o.PlatformPort)
	if err != nil {
		return nil, err
	}
	platformURL := "http://" + pln.Addr().String()
	users := devidp.DemoUsers()
	idp, err := devidp.Start(ctx, net.JoinHostPort(o.Host, o.ProviderPort), providerConfig(o, platformURL, secret))
	if err != nil {
		// The usual port is taken: any free one will do.
		idp, err = devidp.Start(ctx, net.JoinHostPort(o.Host, "0"), providerConfig(o, platformURL, secret))
	}
	if err != nil {
		pln.Close()
		return nil, err
	}

	env := map[string]string{
		"SSO_AUTH_SERVER_URL": idp.URL, "SSO_REALM": idp.Realm,
		"SSO_CLIENT_ID": clientID, "SSO_CLIENT_SECRET": clientSecret(secret),
		"SSO_REDIRECT_URI": platformURL + "/api/auth/callback",
		"FRONTEND_URL":     platformURL, "NODE_ENV": "development",
		"COOKIE_SECRET": secret,
		"DATABASE_URL":  filepath.Join(o.DataDir, "docplatform.db"),
	}
	if o.DatabaseURL != "" {
		env["DATABASE_URL"] = o.DatabaseURL
	}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if o.Getenv != nil && (strings.HasPrefix(k, "THROTTLE_") || strings.HasPrefix(k, "API_KEY_")) {
			return o.Getenv(k)
		}
		return ""
	}
	cfg, err := config.Load(getenv, o.DataDir)
	if err != nil {
		idp.Close()
		pln.Close()
		return nil, err
	}
	if err := os.MkdirAll(cfg.DocumentStorage, 0o700); err != nil {
		idp.Close()
		pln.Close()
		return nil, err
	}
	p, err := platform.Start(ctx, cfg, "", pln, o.Logger)
	if err != nil {
		idp.Close()
		pln.Close()
		return nil, err
	}
	// The demo admin is a system admin of the platform from the start.
	for _, u := range users {
		if !u.SystemAdmin {
			continue
		}
		if _, err := p.Store.User(ctx, u.Subject); errors.Is(err, docplatform.ErrNotFound) {
			_, err = p.Store.UpsertUser(ctx, docplatform.User{ID: u.Subject, Email: u.Email, Name: u.Name, PreferredUsername: u.Username})
			if err != nil {
				p.Shutdown(ctx)
				idp.Close()
				return nil, err
			}
		}
		if err := p.Store.SetSystemAdmin(ctx, u.Subject, true); err != nil {
			p.Shutdown(ctx)
			idp.Close()
			return nil, err
		}
	}

	fmt.Fprintf(w, "document platform: %s (API under /api, health %s/api/health, sign in at %s/api/auth/login)\n", platformURL, platformURL, platformURL)
	fmt.Fprintf(w, "development OpenID provider: %s (issuer %s)\n", idp.URL, idp.Issuer())
	if o.TokenLifetime > 0 {
		fmt.Fprintf(w, "access tokens live %v (--token-lifetime); the web UI refreshes at 75 %% of that\n", o.TokenLifetime)
	}
	fmt.Fprintln(w, "demo logins (development only):")
	for _, u := range users {
		role := "user"
		if u.SystemAdmin {
			role = "system admin"
		}
		fmt.Fprintf(w, "  %-8s %-12s %s <%s>, %s\n", u.Username, u.Password, u.Name, u.Email, role)
	}
	return &Stack{Platform: p, Provider: idp, Users: users}, nil
}

// Stop shuts the platform down gracefully, then the provider.
func (s *Stack) Stop(ctx context.Context) error {
	err := s.Platform.Shutdown(ctx)
	return errors.Join(err, s.Provider.Close())
}

func providerConfig(o Options, platformURL, secret string) devidp.Config {
	return devidp.Config{
		Clients: []devidp.Client{{
			ID: clientID, Secret: clientSecret(secret),
			RedirectURIs:           []string{platformURL + "/api/auth/callback"},
			PostLogoutRedirectURIs: []string{platformURL, platformURL + "/"},
		}},
		KeyFile:             filepath.Join(o.DataDir, "devidp-signing-key.pem"),
		Logger:              o.Logger,
		AccessTokenLifetime: o.TokenLifetime,
	}
}

// clientSecret is the platform's secret at the dev provider, derived from
// the cookie secret so that both sides agree across restarts without
// another file.
func clientSecret(cookieSecret string) string {
	return hex.EncodeToString(config.DeriveKey(cookieSecret, "dev provider client secret"))
}

func listen(host, port string) (net.Listener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		ln, err = net.Listen("tcp", net.JoinHostPort(host, "0"))
	}
	return ln, err
}

// cookieSecret returns the secret kept in path, creating it on first use,
// so that cookies and API keys survive a restart of `govkit dev`.
func cookieSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(b))
		if len(s) >= config.MinCookieSecret {
			return s, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	s := hex.EncodeToString(raw)
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return "", err
	}
	return s, nil
}
