// Package devidp is the development OpenID provider that `govkit dev` runs
// in-process, so the document platform can be tried and tested without a
// Keycloak. It is built on github.com/zitadel/oidc/v3 pkg/op with a small
// in-memory storage of its own.
//
// It exists for development and tests only. Nothing in it is persistent
// except, optionally, the signing key (Config.KeyFile) and the live
// refresh and access tokens (Config.StateFile, so that logins survive a
// restart of `govkit dev`); passwords are plain text in memory; the demo
// users below are public knowledge. `govkit docplatform serve`
// never starts it and must never import this package — production talks to
// a real provider through SSO_AUTH_SERVER_URL.
//
// # Keycloak's shape
//
// The issuer is {base}/realms/{realm}, so the platform's SSO_AUTH_SERVER_URL
// = {base} and SSO_REALM = {realm} work unchanged, and the endpoints sit
// where Keycloak puts them:
//
//	{issuer}/.well-known/openid-configuration     discovery
//	{issuer}/protocol/openid-connect/certs        JWKS (RS256, kid set)
//	{issuer}/protocol/openid-connect/auth         authorization (code + PKCE S256 only)
//	{issuer}/protocol/openid-connect/token        token: authorization_code, refresh_token
//	{issuer}/protocol/openid-connect/userinfo     userinfo
//	{issuer}/protocol/openid-connect/logout       end_session
//	{issuer}/protocol/openid-connect/revoke       revocation
//	{issuer}/protocol/openid-connect/token/introspect  introspection
//	{issuer}/login                                the login form
//
// Tokens look like Keycloak's: the access token is an RS256 JWT (header typ
// "JWT") with iss, sub, aud (the client id), azp (the client id), exp, iat,
// typ "Bearer" and scope, and no nonce or at_hash; the ID token carries
// nonce, at_hash, azp, typ "ID" and the profile and email claims. Like
// Keycloak, a client allowed the refresh_token grant gets a refresh token
// from every code exchange without asking for offline_access (which then
// shows in the token response's scope). Refresh tokens are opaque and
// rotate: each is good for one refresh, and a used one is refused with
// invalid_grant. A refresh also returns a new ID token, without nonce (the
// refresh request has none).
//
// # The login form
//
// The authorization endpoint redirects to {issuer}/login?authRequestID=…,
// an HTML form without script (it works under a strict CSP) that lists the
// users. It posts to {issuer}/login with the fields authRequestID (hidden),
// username (any case), password and one of the buttons login=1 or
// cancel=1. Success answers 303 to the provider's callback, which redirects
// to the client's redirect_uri with code and state; Cancel redirects there
// with error=access_denied and the state; a wrong username or password
// shows the form again with "Invalid username or password."; an unknown or
// expired request (10 minutes) answers 400. Codes live one minute and work
// once.
//
// # Sessions
//
// The provider keeps no single-sign-on session: every authorization shows
// the login form, and prompt=none answers login_required. end_session
// validates post_logout_redirect_uri against the client's registered URIs,
// accepts an id_token_hint (also an expired one, as Keycloak does) and
// revokes every token that user holds for that client.
//
// # Demo users (development only)
//
//	username  password   name           email                  intended role
//	admin     Admin-123  Ada Admin      admin@govkit.test      system admin
//	alice     Alice-123  Alice Member   alice@govkit.test      ordinary user
//	bob       Bob-123    Bob Member     bob@govkit.test        ordinary user
//
// The provider knows nothing of the platform's roles: User.SystemAdmin only
// tells `govkit dev` whom to make system admin in the platform's store.
//
// # Logging
//
// Our own log lines (cfg.Logger) name users and clients, never a password,
// code or token; each request is one line at info (method, path without
// its query, status, duration). The zitadel library logs through slog's default logger;
// its refusals name the error and, for authorization errors, the client's
// state parameter (which is in the URL anyway), never a token or code.
package devidp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/rs/cors"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Client is a registered OAuth client. A client with a Secret is
// confidential (client_secret_basic or client_secret_post); without one it
// is public and must use PKCE, which every client must anyway.
type Client struct {
	ID                     string
	Secret                 string
	RedirectURIs           []string
	PostLogoutRedirectURIs []string
	// ProfileInAccessToken puts the user's profile and email claims
	// (preferred_username, name, email, email_verified, as the scopes
	// allow) in the access tokens of this client, as Keycloak's default
	// access tokens carry them: an API that takes the token as a bearer
	// (the notification service's console) names its users by them.
	ProfileInAccessToken bool
}

// User is an account that can sign in.
type User struct {
	Subject  string // the token's sub; stable, so the platform's records survive restarts
	Username string
	Password string
	Email    string
	Name     string
	// SystemAdmin marks the user `govkit dev` makes system admin in the
	// platform's store. The provider itself ignores it.
	SystemAdmin bool
}

// DemoUsers returns the development accounts listed in the package doc.
func DemoUsers() []User {
	return []User{
		{Subject: "8b6d2f7e-0c1a-4c55-9a43-1f2e3d4c5b6a", Username: "admin", Password: "Admin-123", Email: "admin@govkit.test", Name: "Ada Admin", SystemAdmin: true},
		{Subject: "2c9e4a1b-7d3f-4e8a-b5c6-0a1b2c3d4e5f", Username: "alice", Password: "Alice-123", Email: "alice@govkit.test", Name: "Alice Member"},
		{Subject: "5f1a3c7e-9b2d-4f60-8e1c-6d7a8b9c0d1e", Username: "bob", Password: "Bob-123", Email: "bob@govkit.test", Name: "Bob Member"},
	}
}

// Config describes a provider.
type Config struct {
	// BaseURL is the provider's public base URL, e.g. http://localhost:8081
	// (Keycloak's SSO_AUTH_SERVER_URL). Empty: http:// and the listener's
	// address.
	BaseURL string
	// Realm names the realm in the issuer path; empty: "govkit".
	Realm   string
	Clients []Client
	// Users who can sign in; empty: DemoUsers().
	Users []User
	// AccessTokenLifetime is also the ID token's; zero: 5 minutes
	// (Keycloak's default).
	AccessTokenLifetime time.Duration
	// RefreshTokenLifetime counts from the token's issue, so each rotation
	// starts it again; zero: 10 hours (Keycloak's maximum session length).
	RefreshTokenLifetime time.Duration
	// KeyFile, when set, keeps the RSA signing key in this PEM file so
	// tokens issued before a restart still verify. Created if missing.
	KeyFile string
	// StateFile, when set, keeps the live refresh tokens and access
	// tokens in this JSON file (owner-only), so that logins survive a
	// restart: a refresh after it works. Created if missing.
	StateFile string
	// Logger receives our log lines; nil: slog.Default().
	Logger *slog.Logger
}

// DefaultRealm is the realm used when Config.Realm is empty.
const DefaultRealm = "govkit"

// Endpoint paths below the issuer, as Keycloak names them.
const (
	pathAuth      = "/protocol/openid-connect/auth"
	pathToken     = "/protocol/openid-connect/token"
	pathUserinfo  = "/protocol/openid-connect/userinfo"
	pathLogout    = "/protocol/openid-connect/logout"
	pathRevoke    = "/protocol/openid-connect/revoke"
	pathCerts     = "/protocol/openid-connect/certs"
	pathIntro     = "/protocol/openid-connect/token/introspect"
	pathLogin     = "/login"
	pathCSS       = "/login.css"
	pathLoggedOut = "/logged-out"
)

// Server is a running provider.
type Server struct {
	// URL is the base URL (Keycloak's SSO_AUTH_SERVER_URL), no trailing slash.
	URL    string
	Realm  string
	issuer string
	store  *storage
	srv    *http.Server
	done   chan struct{}
	log    *slog.Logger
}

// Start listens on addr ("127.0.0.1:0" picks a free port), so the issuer
// is known before the provider is built, and serves until Close or until
// ctx is cancelled.
func Start(ctx context.Context, addr string, cfg Config) (*Server, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("devidp: listen: %w", err)
	}
	return Serve(ctx, ln, cfg)
}

// Serve is Start on a listener the caller opened; the provider closes it.
func Serve(ctx context.Context, ln net.Listener, cfg Config) (*Server, error) {
	if err := validate(&cfg); err != nil {
		ln.Close()
		return nil, err
	}
	base := strings.TrimSuffix(cfg.BaseURL, "/")
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	s, handler, err := build(base, cfg)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s.srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("devidp: serve", "error", err)
		}
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	s.log.Info("devidp: development OpenID provider started", "issuer", s.issuer)
	return s, nil
}

func validate(cfg *Config) error {
	var problems []string
	if cfg.Realm == "" {
		cfg.Realm = DefaultRealm
	}
	if strings.ContainsAny(cfg.Realm, "/?#% ") {
		problems = append(problems, "Realm must be one path segment")
	}
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			problems = append(problems, "BaseURL must be an absolute http(s) URL without query")
		}
	}
	if len(cfg.Users) == 0 {
		cfg.Users = DemoUsers()
	}
	if cfg.AccessTokenLifetime == 0 {
		cfg.AccessTokenLifetime = 5 * time.Minute
	}
	if cfg.RefreshTokenLifetime == 0 {
		cfg.RefreshTokenLifetime = 10 * time.Hour
	}
	if cfg.AccessTokenLifetime < 0 || cfg.RefreshTokenLifetime < 0 {
		problems = append(problems, "token lifetimes must not be negative")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	seen := map[string]bool{}
	for i, c := range cfg.Clients {
		if c.ID == "" || seen["c"+c.ID] {
			problems = append(problems, fmt.Sprintf("Clients[%d].ID must be set and unique", i))
		}
		seen["c"+c.ID] = true
		if len(c.RedirectURIs) == 0 {
			problems = append(problems, fmt.Sprintf("Clients[%d].RedirectURIs must not be empty", i))
		}
		for _, u := range append(append([]string(nil), c.RedirectURIs...), c.PostLogoutRedirectURIs...) {
			if p, err := url.Parse(u); err != nil || !p.IsAbs() || p.Fragment != "" {
				problems = append(problems, fmt.Sprintf("Clients[%d]: %q is not an absolute URI without fragment", i, u))
			}
		}
	}
	for i, u := range cfg.Users {
		if u.Subject == "" || u.Username == "" || u.Password == "" {
			problems = append(problems, fmt.Sprintf("Users[%d] needs Subject, Username and Password", i))
		}
		if seen["s"+u.Subject] || seen["u"+strings.ToLower(u.Username)] {
			problems = append(problems, fmt.Sprintf("Users[%d]: subject and username must be unique", i))
		}
		seen["s"+u.Subject], seen["u"+strings.ToLower(u.Username)] = true, true
	}
	if len(problems) > 0 {
		return fmt.Errorf("devidp: invalid config: %s", strings.Join(problems, "; "))
	}
	return nil
}

// build makes the provider for a known base URL and returns the handler
// that serves it.
func build(base string, cfg Config) (*Server, http.Handler, error) {
	issuer := base + "/realms/" + cfg.Realm
	keys, err := loadKeys(cfg.KeyFile)
	if err != nil {
		return nil, nil, err
	}
	st := newStorage(cfg, keys)
	if err := st.loadState(); err != nil {
		return nil, nil, err
	}
	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		return nil, nil, err
	}
	opts := []op.Option{
		op.WithCustomAuthEndpoint(op.NewEndpoint(pathAuth)),
		op.WithCustomTokenEndpoint(op.NewEndpoint(pathToken)),
		op.WithCustomIntrospectionEndpoint(op.NewEndpoint(pathIntro)),
		op.WithCustomUserinfoEndpoint(op.NewEndpoint(pathUserinfo)),
		op.WithCustomRevocationEndpoint(op.NewEndpoint(pathRevoke)),
		op.WithCustomEndSessionEndpoint(op.NewEndpoint(pathLogout)),
		op.WithCustomKeysEndpoint(op.NewEndpoint(pathCerts)),
	}
	if strings.HasPrefix(issuer, "http://") {
		opts = append(opts, op.WithAllowInsecure())
	}
	// Browsers may call the discovery, JWKS, token, userinfo, revocation
	// and logout endpoints (a public client signing in from its page)
	// from the origins of the registered redirect URIs only; the library's
	// default allows every origin.
	// Otherwise the options are the library's defaults.
	origins := clientOrigins(cfg.Clients)
	opts = append(opts, op.WithCORSOptions(&cors.Options{
		AllowCredentials: true,
		AllowedHeaders:   []string{"Origin", "Accept", "Accept-Language", "Authorization", "Content-Type", "X-Requested-With"},
		AllowedMethods:   []string{http.MethodGet, http.MethodHead, http.MethodPost},
		ExposedHeaders:   []string{"Location", "Content-Length"},
		AllowOriginFunc:  func(origin string) bool { return origins[origin] },
	}))
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:                cryptoKey,
		DefaultLogoutRedirectURI: issuer + pathLoggedOut,
		CodeMethodS256:           true,
		AuthMethodPost:           true,
		GrantTypeRefreshToken:    true,
		SupportedScopes:          []string{"openid", "profile", "email", "offline_access"},
	}, st, op.StaticIssuer(issuer), opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("devidp: %w", err)
	}
	s := &Server{URL: base, Realm: cfg.Realm, issuer: issuer, store: st, log: cfg.Logger}
	st.loginURL = issuer + pathLogin
	l := &login{store: st, provider: provider, issuer: issuer, log: cfg.Logger}

	prefix := "/realms/" + cfg.Realm
	mux := http.NewServeMux()
	mux.Handle("GET "+prefix+pathLogin, l.page())
	mux.Handle("POST "+prefix+pathLogin, http.NewCrossOriginProtection().Handler(l.submit()))
	mux.HandleFunc("GET "+prefix+pathCSS, serveCSS)
	mux.HandleFunc("GET "+prefix+pathLoggedOut, l.loggedOut)
	mux.Handle(prefix+"/", http.StripPrefix(prefix, provider))
	return s, logRequests(cfg.Logger, ownHostsOnly(base, mux)), nil
}

// ownHostsOnly answers 421 to a request whose Host is a name other than the
// provider's own (its base URL's host) or a loopback name. A page of
// another site whose name an attacker re-points at 127.0.0.1 (DNS
// rebinding) reaches the provider as its own origin, so the browser's
// same-origin rules let it sign in with the public demo passwords and read
// what comes back; its requests carry the attacker's name as Host, which
// is refused here. IP literals are let through: rebinding needs a name,
// and `govkit dev --host` may serve another interface by its address.
func ownHostsOnly(base string, next http.Handler) http.Handler {
	own := ""
	if u, err := url.Parse(base); err == nil {
		own = strings.ToLower(u.Hostname())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := strings.ToLower(r.Host)
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
		_, ipErr := netip.ParseAddr(host)
		if ipErr == nil || host == own || host == "localhost" || strings.HasSuffix(host, ".localhost") {
			next.ServeHTTP(w, r)
			return
		}
		http.Error(w, "this development OpenID provider answers only to its own host name ("+own+") and loopback names", http.StatusMisdirectedRequest)
	})
}

// clientOrigins are the scheme://host[:port] of the clients' redirect URIs.
func clientOrigins(clients []Client) map[string]bool {
	out := map[string]bool{}
	for _, c := range clients {
		for _, raw := range c.RedirectURIs {
			if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Host != "" {
				out[u.Scheme+"://"+u.Host] = true
			}
		}
	}
	return out
}

// Issuer returns {URL}/realms/{Realm}.
func (s *Server) Issuer() string { return s.issuer }

// Close stops the server at once; in-flight requests are cut.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// KeyID returns the kid of the key that signs new tokens.
func (s *Server) KeyID() string { return s.store.keys.current().id }

// RotateKey makes a new signing key with a new kid and returns the kid.
// The JWKS keeps the previous key, so tokens signed before stay
// verifiable, as after a key rotation in Keycloak. With Config.KeyFile the
// new key replaces the file's.
func (s *Server) RotateKey() (string, error) {
	return s.store.keys.rotate()
}

// Sign signs claims (any JSON object) as a JWT with the current key: RS256,
// header typ "JWT" and kid. Tests use it to mint tokens the flows would not
// issue, such as expired ones or ones with odd claims.
func (s *Server) Sign(claims any) (string, error) {
	return s.store.keys.sign(nil, claims)
}

// SignWithHeader is Sign with header fields set or replaced: "kid" (a
// string; an unknown kid makes a token no JWKS entry verifies), "typ" (nil
// drops it) or any other; "alg" cannot be changed. The signature is always
// the current key's.
func (s *Server) SignWithHeader(header map[string]any, claims any) (string, error) {
	return s.store.keys.sign(header, claims)
}

// AccessTokenClaims returns the claims the provider puts in an access token
// for subject at clientID, valid from now for the configured lifetime, for
// tests to change and pass to Sign.
func (s *Server) AccessTokenClaims(subject, clientID string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss":       s.issuer,
		"sub":       subject,
		"aud":       []string{clientID},
		"azp":       clientID,
		"client_id": clientID,
		"exp":       now.Add(s.store.cfg.AccessTokenLifetime).Unix(),
		"iat":       now.Unix(),
		"nbf":       now.Unix(),
		"jti":       randomID(),
		"typ":       "Bearer",
		"scope":     "openid profile email",
	}
}

// PublicKey returns the current signing key's public half.
func (s *Server) PublicKey() *rsa.PublicKey {
	return &s.store.keys.current().priv.PublicKey
}

// logRequests writes one line per request. The path only: the query of
// an authorization or logout carries state, codes and hints.
func logRequests(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
