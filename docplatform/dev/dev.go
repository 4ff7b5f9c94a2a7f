// Package dev runs the document platform for `govkit dev`: the development
// OpenID provider (devidp) and the platform on SQLite under the data
// directory, wired to each other, with the demo admin made system admin
// and, on a fresh data directory, a demo world (demo.go).
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
	"github.com/govkit/govkit/internal/ratelimit"
)

// Default ports: the original platform's 3002, and 8081 for the provider.
// When one is taken, a free port is used instead and printed.
const (
	PlatformPort = "3002"
	ProviderPort = "8081"
	clientID     = "govkit-docplatform"
)

// Rate limits of the development platform, per IP and minute: a person
// clicking through the UI and the API docs, or a script, should not meet
// the production budgets (100, 10 and 5) in the first minutes. THROTTLE_*
// variables set in the environment still win.
var devLimits = map[string]string{
	"THROTTLE_GLOBAL_LIMIT":       "10000",
	"THROTTLE_AUTH_LIMIT":         "1000",
	"THROTTLE_AUTH_REFRESH_LIMIT": "1000",
}

// Options configure the development platform.
type Options struct {
	DataDir string // everything kept on disk: database, cookie secret, provider key and logins, documents
	Host    string // interface to listen on; 127.0.0.1 by default
	// PlatformListener and ProviderListener, when set, are where the
	// platform and the provider serve (`govkit dev` opens them, so that a
	// taken port is reported with the flag that moves it). Otherwise
	// PlatformPort and ProviderPort are listened on (default the
	// constants above, "0" picks a free port; a taken port falls back to
	// a free one).
	PlatformListener, ProviderListener net.Listener
	PlatformPort, ProviderPort         string
	// Logger receives the platform's log, one line per request included;
	// ProviderLogger the provider's (nil: Logger). Nil Logger: warnings to
	// stderr.
	Logger, ProviderLogger *slog.Logger
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
	// Demo seeds the demo world (see Demo) on the first start of a fresh
	// data directory (`govkit dev` without --no-demo).
	Demo bool
	// OtherClients are registered at the development provider beside the
	// platform's own client (the notification service's console).
	OtherClients []devidp.Client
}

// Stack is the running development platform.
type Stack struct {
	Platform *platform.Platform
	Provider *devidp.Server
	Users    []devidp.User
	// Demo is what this start seeded; nil when the data directory had
	// been used before, or without Options.Demo.
	Demo *Demo
}

// Start starts the provider and the platform, seeds the demo world on a
// fresh data directory, prints their URLs, the demo logins and the demo
// API key to w, and returns the running stack.
//
// The stack lives until Stop, not until ctx ends: `govkit dev` stops its
// parts in order after an interrupt, and a part must not vanish under it.
func Start(ctx context.Context, o Options, w io.Writer) (_ *Stack, err error) {
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
	if o.ProviderLogger == nil {
		o.ProviderLogger = o.Logger
	}
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	closeOnError := func(c io.Closer) { cleanup = append(cleanup, func() { c.Close() }) }
	if o.PlatformListener != nil {
		closeOnError(o.PlatformListener)
	}
	if o.ProviderListener != nil {
		closeOnError(o.ProviderListener)
	}

	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		return nil, err
	}
	secret, err := cookieSecret(filepath.Join(o.DataDir, "docplatform-cookie-secret"))
	if err != nil {
		return nil, err
	}
	pln := o.PlatformListener
	if pln == nil {
		if pln, err = listen(o.Host, o.PlatformPort); err != nil {
			return nil, err
		}
		closeOnError(pln)
	}
	platformURL := "http://" + pln.Addr().String()
	users := devidp.DemoUsers()
	iln := o.ProviderListener
	if iln == nil {
		if iln, err = listen(o.Host, o.ProviderPort); err != nil {
			return nil, err
		}
	}
	idp, err := devidp.Serve(ctx, iln, providerConfig(o, platformURL, secret))
	if err != nil {
		return nil, err
	}
	closeOnError(idp)

	env := map[string]string{
		"SSO_AUTH_SERVER_URL": idp.URL, "SSO_REALM": idp.Realm,
		"SSO_CLIENT_ID": clientID, "SSO_CLIENT_SECRET": clientSecret(secret),
		"SSO_REDIRECT_URI": platformURL + "/api/auth/callback",
		"FRONTEND_URL":     platformURL, "NODE_ENV": "development",
		"COOKIE_SECRET": secret,
		"DATABASE_URL":  filepath.Join(o.DataDir, "docplatform.db"),
		// a free port beside the platform's; printed below
		"METRICS_LISTEN": net.JoinHostPort(o.Host, "0"),
	}
	if o.DatabaseURL != "" {
		env["DATABASE_URL"] = o.DatabaseURL
	}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if o.Getenv != nil && (strings.HasPrefix(k, "THROTTLE_") || strings.HasPrefix(k, "API_KEY_")) {
			if v := o.Getenv(k); v != "" {
				return v
			}
		}
		return devLimits[k]
	}
	cfg, err := config.Load(getenv, o.DataDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DocumentStorage, 0o700); err != nil {
		return nil, err
	}
	p, err := platform.Start(ctx, cfg, "", pln, o.Logger)
	if err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { p.Shutdown(ctx) })
	// The demo admin is a system admin of the platform from the start.
	for _, u := range users {
		if !u.SystemAdmin {
			continue
		}
		if _, err := p.Store.User(ctx, u.Subject); errors.Is(err, docplatform.ErrNotFound) {
			_, err = p.Store.UpsertUser(ctx, docplatform.User{ID: u.Subject, Email: u.Email, Name: u.Name, PreferredUsername: u.Username})
			if err != nil {
				return nil, err
			}
		}
		if err := p.Store.SetSystemAdmin(ctx, u.Subject, true); err != nil {
			return nil, err
		}
	}
	var demo *Demo
	demoNote := "not seeded (--no-demo)"
	if o.Demo {
		if demo, demoNote, err = seedDemo(ctx, p, o.DataDir, users); err != nil {
			return nil, fmt.Errorf("seeding the demo world: %w", err)
		}
	}

	// What each demo login can do here now (after the demo, or whatever
	// was changed since).
	roles := map[string]string{}
	for _, u := range users {
		grs, err := p.Store.UserGroups(ctx, u.Subject)
		if err != nil {
			return nil, err
		}
		var rs []string
		for _, gr := range grs {
			rs = append(rs, fmt.Sprintf("%s of %q", gr.Role, gr.Group.Name))
		}
		roles[u.Username] = strings.Join(rs, ", ")
	}

	printStart(w, startInfo{platformURL: platformURL, metricsURL: p.MetricsURL, idp: idp, users: users, roles: roles, demo: demo, demoNote: demoNote, cfg: cfg, getenv: o.Getenv, tokenLifetime: o.TokenLifetime})
	return &Stack{Platform: p, Provider: idp, Users: users, Demo: demo}, nil
}

type startInfo struct {
	platformURL string
	metricsURL  string
	idp         *devidp.Server
	users       []devidp.User
	roles       map[string]string // by username: "ADMIN of "Group"", …
	demo        *Demo
	demoNote    string // why nothing was seeded
	cfg         config.Config
	getenv      func(string) string
	// tokenLifetime is --token-lifetime (0: the provider's default).
	tokenLifetime time.Duration
}

// printStart writes the platform's part of what `govkit dev` prints.
func printStart(w io.Writer, s startInfo) {
	u := s.platformURL
	fmt.Fprintf(w, "document platform     %s/ (web UI)\n", u)
	fmt.Fprintf(w, "  API docs            %s/api/docs (requests there are sent with your session)\n", u)
	fmt.Fprintf(w, "  sign in             %s/api/auth/login\n", u)
	fmt.Fprintf(w, "  health              %s/api/health\n", u)
	fmt.Fprintf(w, "  metrics             %s (Prometheus, on a listener of its own)\n", s.metricsURL)
	fmt.Fprintf(w, "development OpenID provider %s (issuer %s; logins survive a restart)\n", s.idp.URL, s.idp.Issuer())
	if s.tokenLifetime > 0 {
		fmt.Fprintf(w, "  access tokens live  %v (--token-lifetime); the web UI refreshes at 75 %% of that\n", s.tokenLifetime)
	}
	fmt.Fprintln(w, "  demo logins (development only):")
	for _, du := range s.users {
		role := "user in no group"
		switch {
		case du.SystemAdmin:
			role = "system admin"
		case s.roles[du.Username] != "":
			role = s.roles[du.Username]
		}
		fmt.Fprintf(w, "    %-6s %-10s %s <%s>, %s\n", du.Username, du.Password, du.Name, du.Email, role)
	}
	switch {
	case s.demo != nil:
		withOCR := 0
		for _, d := range s.demo.Documents {
			if d.HasOCR {
				withOCR++
			}
		}
		fmt.Fprintf(w, "  demo data           group %q (id %s): %d documents (%d with OCR results), workflow %q\n",
			s.demo.Group.Name, s.demo.Group.ID, len(s.demo.Documents), withOCR, s.demo.Workflow.Name)
		fmt.Fprintf(w, "  demo API key        %s\n", s.demo.APIKey)
		fmt.Fprintf(w, "                      shown this once; a group ADMIN replaces it with POST /api/api-key/regenerate {\"groupId\":\"%s\"}\n", s.demo.Group.ID)
	default:
		fmt.Fprintf(w, "  demo data           %s\n", s.demoNote)
		fmt.Fprintln(w, "  API keys            a group ADMIN makes one with POST /api/api-key, or replaces it with POST /api/api-key/regenerate")
	}
	c := s.cfg
	relaxed := []string{}
	for k := range devLimits {
		if s.getenv == nil || s.getenv(k) == "" {
			relaxed = append(relaxed, k)
		}
	}
	note := "set by THROTTLE_* variables"
	if len(relaxed) > 0 {
		note = "relaxed for development; THROTTLE_* variables override; `govkit docplatform serve` defaults to 100, 10 and 5"
	}
	fmt.Fprintf(w, "  rate limits         per IP: %s, auth routes %s each, refresh %s (%s)\n",
		rate(c.GlobalLimit), rate(c.AuthLimit), rate(c.RefreshLimit), note)
}

func rate(r ratelimit.Rule) string {
	if r.Window == time.Minute {
		return fmt.Sprintf("%d per minute", r.Limit)
	}
	return fmt.Sprintf("%d per %s", r.Limit, r.Window)
}

// Stop shuts the platform down gracefully, then the provider.
func (s *Stack) Stop(ctx context.Context) error {
	err := s.Platform.Shutdown(ctx)
	return errors.Join(err, s.Provider.Close())
}

func providerConfig(o Options, platformURL, secret string) devidp.Config {
	return devidp.Config{
		Clients: append([]devidp.Client{{
			ID: clientID, Secret: clientSecret(secret),
			RedirectURIs:           []string{platformURL + "/api/auth/callback"},
			PostLogoutRedirectURIs: []string{platformURL, platformURL + "/"},
		}}, o.OtherClients...),
		KeyFile:             filepath.Join(o.DataDir, "devidp-signing-key.pem"),
		StateFile:           filepath.Join(o.DataDir, "devidp-logins.json"),
		Logger:              o.ProviderLogger,
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
