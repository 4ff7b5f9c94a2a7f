package devidp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// How long the steps of a login may take.
const (
	loginTimeout = 10 * time.Minute // from authorize to a submitted form
	codeLifetime = time.Minute      // from the redirect with code to its exchange
)

var errNotFound = errors.New("not found or expired")

// storage is op.Storage over maps behind one mutex: a development provider
// sees a handful of requests a minute.
type storage struct {
	cfg      Config
	keys     *keyring
	loginURL string

	mu            sync.Mutex
	clients       map[string]*client
	users         map[string]*User // by subject
	authRequests  map[string]*authRequest
	codes         map[string]string // code → auth request id
	accessTokens  map[string]*accessToken
	refreshTokens map[string]*refreshToken // by token value
}

func newStorage(cfg Config, keys *keyring) *storage {
	s := &storage{
		cfg:           cfg,
		keys:          keys,
		clients:       map[string]*client{},
		users:         map[string]*User{},
		authRequests:  map[string]*authRequest{},
		codes:         map[string]string{},
		accessTokens:  map[string]*accessToken{},
		refreshTokens: map[string]*refreshToken{},
	}
	for _, c := range cfg.Clients {
		s.clients[c.ID] = &client{Client: c, loginURL: func(id string) string { return s.loginURL + "?authRequestID=" + id }, idTokenLifetime: cfg.AccessTokenLifetime}
	}
	for i := range cfg.Users {
		u := cfg.Users[i]
		s.users[u.Subject] = &u
	}
	return s
}

func randomID() string { return rand.Text() + rand.Text() }

// userByLogin checks a username (any case) and password; both comparisons
// run for every user so timing tells nothing.
func (s *storage) userByLogin(username, password string) (*User, bool) {
	var found *User
	for _, u := range s.cfg.Users {
		nameOK := subtle.ConstantTimeCompare([]byte(strings.ToLower(u.Username)), []byte(strings.ToLower(username)))
		passOK := subtle.ConstantTimeCompare([]byte(u.Password), []byte(password))
		if nameOK&passOK == 1 {
			found = s.users[u.Subject]
		}
	}
	return found, found != nil
}

// authRequest is one authorization in progress (op.AuthRequest).
type authRequest struct {
	id            string
	created       time.Time
	clientID      string
	redirectURI   string
	scopes        []string // as granted, plus offline_access (see package doc)
	state         string
	nonce         string
	responseType  oidc.ResponseType
	responseMode  oidc.ResponseMode
	codeChallenge *oidc.CodeChallenge

	subject  string
	authTime time.Time
	done     bool
	code     string
	codeAt   time.Time
}

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string                 { return []string{a.clientID} }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.codeChallenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return a.responseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

// copy hands op a snapshot, so later changes under the lock do not race
// with op reading it.
func (a *authRequest) copy() *authRequest { c := *a; return &c }

// accessToken is what the provider remembers of an issued access token,
// for userinfo, introspection and revocation.
type accessToken struct {
	id       string
	clientID string
	subject  string
	scopes   []string
	family   string // the login it descends from
	expires  time.Time
}

// refreshToken is an opaque, single-use refresh token (op.RefreshTokenRequest).
type refreshToken struct {
	token    string
	clientID string
	subject  string
	scopes   []string
	authTime time.Time
	amr      []string
	family   string
	expires  time.Time
}

func (r *refreshToken) GetAMR() []string                 { return r.amr }
func (r *refreshToken) GetAudience() []string            { return []string{r.clientID} }
func (r *refreshToken) GetAuthTime() time.Time           { return r.authTime }
func (r *refreshToken) GetClientID() string              { return r.clientID }
func (r *refreshToken) GetScopes() []string              { return r.scopes }
func (r *refreshToken) GetSubject() string               { return r.subject }
func (r *refreshToken) SetCurrentScopes(scopes []string) { r.scopes = scopes }

// prune drops what has expired; callers hold s.mu.
func (s *storage) prune(now time.Time) {
	for id, a := range s.authRequests {
		if now.Sub(a.created) > loginTimeout+codeLifetime {
			delete(s.authRequests, id)
			delete(s.codes, a.code)
		}
	}
	for id, t := range s.accessTokens {
		if now.After(t.expires) {
			delete(s.accessTokens, id)
		}
	}
	for v, t := range s.refreshTokens {
		if now.After(t.expires) {
			delete(s.refreshTokens, v)
		}
	}
}

// --- op.AuthStorage ---

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	if req.CodeChallenge == "" || req.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE is required: send code_challenge with code_challenge_method=S256")
	}
	if req.ResponseType != oidc.ResponseTypeCode {
		return nil, oidc.ErrInvalidRequest().WithDescription("only response_type=code is supported")
	}
	if slices.Contains(req.Prompt, oidc.PromptNone) {
		return nil, oidc.ErrLoginRequired().WithDescription("this provider keeps no session")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[req.ClientID]
	if !ok {
		return nil, oidc.ErrInvalidClient()
	}
	scopes := slices.Clone(req.Scopes)
	if slices.Contains(c.GrantTypes(), oidc.GrantTypeRefreshToken) && !slices.Contains(scopes, oidc.ScopeOfflineAccess) {
		scopes = append(scopes, oidc.ScopeOfflineAccess)
	}
	now := time.Now()
	s.prune(now)
	a := &authRequest{
		id:           randomID(),
		created:      now,
		clientID:     req.ClientID,
		redirectURI:  req.RedirectURI,
		scopes:       scopes,
		state:        req.State,
		nonce:        req.Nonce,
		responseType: req.ResponseType,
		responseMode: req.ResponseMode,
		codeChallenge: &oidc.CodeChallenge{
			Challenge: req.CodeChallenge,
			Method:    req.CodeChallengeMethod,
		},
	}
	s.authRequests[a.id] = a
	return a.copy(), nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[id]
	if !ok || time.Since(a.created) > loginTimeout+codeLifetime {
		return nil, errNotFound
	}
	return a.copy(), nil
}

// pendingLogin returns an auth request still waiting for the login form.
func (s *storage) pendingLogin(id string) (*authRequest, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[id]
	if !ok || a.done || time.Since(a.created) > loginTimeout {
		return nil, false
	}
	return a.copy(), true
}

// completeLogin marks the auth request as signed in by subject.
func (s *storage) completeLogin(id, subject string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[id]
	if !ok || a.done || time.Since(a.created) > loginTimeout {
		return false
	}
	a.subject, a.authTime, a.done = subject, time.Now(), true
	return true
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.codes[code]
	if !ok {
		return nil, errNotFound
	}
	a, ok := s.authRequests[id]
	if !ok || !a.done || time.Since(a.codeAt) > codeLifetime {
		return nil, errNotFound
	}
	return a.copy(), nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.authRequests[id]
	if !ok {
		return errNotFound
	}
	if a.code != "" {
		delete(s.codes, a.code)
	}
	a.code, a.codeAt = code, time.Now()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest runs after a successful code exchange, which makes the
// code single-use.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.authRequests[id]; ok {
		delete(s.codes, a.code)
		delete(s.authRequests, id)
	}
	return nil
}

// tokenBasis is what every token request op hands us has in common.
type tokenBasis interface {
	GetSubject() string
	GetScopes() []string
	GetClientID() string
}

func (s *storage) newAccessToken(req tokenBasis, family string, now time.Time) *accessToken {
	t := &accessToken{
		id:       randomID(),
		clientID: req.GetClientID(),
		subject:  req.GetSubject(),
		scopes:   slices.Clone(req.GetScopes()),
		family:   family,
		expires:  now.Add(s.cfg.AccessTokenLifetime),
	}
	s.accessTokens[t.id] = t
	return t
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	basis, ok := req.(tokenBasis)
	if !ok {
		return "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.newAccessToken(basis, randomID(), time.Now())
	s.saveState()
	return t.id, t.expires, nil
}

// CreateAccessAndRefreshTokens issues tokens for a code exchange
// (currentRefreshToken empty) or a refresh. A refresh consumes the
// presented token under the lock, so of two concurrent refreshes with one
// token exactly one succeeds.
func (s *storage) CreateAccessAndRefreshTokens(_ context.Context, req op.TokenRequest, currentRefreshToken string) (string, string, time.Time, error) {
	basis, ok := req.(tokenBasis)
	if !ok {
		return "", "", time.Time{}, oidc.ErrUnsupportedGrantType()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.prune(now)
	next := &refreshToken{
		token:    randomID(),
		clientID: basis.GetClientID(),
		subject:  basis.GetSubject(),
		scopes:   slices.Clone(basis.GetScopes()),
		amr:      []string{"pwd"},
		authTime: now,
		family:   randomID(),
		expires:  now.Add(s.cfg.RefreshTokenLifetime),
	}
	if a, ok := req.(*authRequest); ok {
		next.authTime = a.authTime
	}
	if currentRefreshToken != "" {
		cur, ok := s.refreshTokens[currentRefreshToken]
		if !ok || now.After(cur.expires) || cur.clientID != basis.GetClientID() {
			return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("refresh token is invalid or already used")
		}
		delete(s.refreshTokens, currentRefreshToken)
		next.authTime, next.amr, next.family = cur.authTime, cur.amr, cur.family
	}
	s.refreshTokens[next.token] = next
	t := s.newAccessToken(basis, next.family, now)
	s.saveState()
	return t.id, next.token, t.expires, nil
}

func (s *storage) TokenRequestByRefreshToken(_ context.Context, token string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refreshTokens[token]
	if !ok || time.Now().After(r.expires) {
		return nil, errNotFound
	}
	c := *r
	c.scopes = slices.Clone(r.scopes)
	return &c, nil
}

// TerminateSession ends a user's login at a client (end_session): every
// refresh and access token they hold there stops working.
func (s *storage) TerminateSession(_ context.Context, userID, clientID string) error {
	if userID == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for v, r := range s.refreshTokens {
		if r.subject == userID && r.clientID == clientID {
			delete(s.refreshTokens, v)
		}
	}
	for id, t := range s.accessTokens {
		if t.subject == userID && t.clientID == clientID {
			delete(s.accessTokens, id)
		}
	}
	s.saveState()
	return nil
}

// RevokeToken revokes a refresh token — and with it its whole login, as
// Keycloak does — or one access token (by its jti). Unknown tokens are
// fine (RFC 7009); another client's token is refused.
func (s *storage) RevokeToken(_ context.Context, tokenOrID, userID, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.refreshTokens[tokenOrID]; ok {
		if r.clientID != clientID {
			return oidc.ErrInvalidClient().WithDescription("token was issued to another client")
		}
		s.dropFamily(r.family)
		s.saveState()
		return nil
	}
	if t, ok := s.accessTokens[tokenOrID]; ok {
		if t.clientID != clientID {
			return oidc.ErrInvalidClient().WithDescription("token was issued to another client")
		}
		delete(s.accessTokens, tokenOrID)
		s.saveState()
	}
	return nil
}

func (s *storage) dropFamily(family string) {
	for v, r := range s.refreshTokens {
		if r.family == family {
			delete(s.refreshTokens, v)
		}
	}
	for id, t := range s.accessTokens {
		if t.family == family {
			delete(s.accessTokens, id)
		}
	}
}

func (s *storage) GetRefreshTokenInfo(_ context.Context, clientID, token string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refreshTokens[token]
	if !ok || r.clientID != clientID {
		return "", "", op.ErrInvalidRefreshToken
	}
	return r.subject, token, nil
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return s.keys.current(), nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	var keys []op.Key
	for _, k := range s.keys.all() {
		keys = append(keys, publicKey{k})
	}
	return keys, nil
}

// --- op.OPStorage ---

func (s *storage) GetClientByClientID(_ context.Context, clientID string) (op.Client, error) {
	c, ok := s.clients[clientID] // never written after start
	if !ok {
		return nil, errNotFound
	}
	return c, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, clientID, secret string) error {
	c, ok := s.clients[clientID]
	if !ok || c.Secret == "" || subtle.ConstantTimeCompare([]byte(c.Secret), []byte(secret)) != 1 {
		return oidc.ErrInvalidClient().WithDescription("client authentication failed")
	}
	return nil
}

// SetUserinfoFromScopes is deprecated in op; SetUserinfoFromRequest does
// the work for ID tokens.
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills the ID token: sub, the claims the scopes
// ask for, and Keycloak's typ "ID".
func (s *storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.fillUserinfo(info, req.GetSubject(), scopes); err != nil {
		return err
	}
	info.AppendClaims("typ", "ID")
	return nil
}

func (s *storage) fillUserinfo(info *oidc.UserInfo, subject string, scopes []string) error {
	u, ok := s.users[subject] // never written after start
	if !ok {
		return errNotFound
	}
	info.Subject = u.Subject
	for _, sc := range scopes {
		switch sc {
		case oidc.ScopeProfile:
			info.Name = u.Name
			info.PreferredUsername = u.Username
		case oidc.ScopeEmail:
			if u.Email != "" {
				info.Email = u.Email
				info.EmailVerified = true
			}
		}
	}
	return nil
}

// SetUserinfoFromToken answers the userinfo endpoint for a live access token.
func (s *storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, subject, _ string) error {
	s.mu.Lock()
	t, ok := s.accessTokens[tokenID]
	s.mu.Unlock()
	if !ok || t.subject != subject || time.Now().After(t.expires) {
		return errors.New("access token is not active")
	}
	return s.fillUserinfo(info, subject, t.scopes)
}

func (s *storage) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	s.mu.Lock()
	t, ok := s.accessTokens[tokenID]
	s.mu.Unlock()
	if !ok || t.subject != subject || t.clientID != clientID || time.Now().After(t.expires) {
		resp.Active = false
		return nil
	}
	info := new(oidc.UserInfo)
	if err := s.fillUserinfo(info, subject, t.scopes); err != nil {
		return err
	}
	resp.SetUserInfo(info)
	resp.Active = true
	resp.Scope = withoutOffline(t.scopes)
	resp.ClientID = t.clientID
	resp.TokenType = oidc.BearerToken
	resp.Expiration = oidc.FromTime(t.expires)
	resp.Audience = []string{t.clientID}
	return nil
}

// GetPrivateClaimsFromRequest adds Keycloak's access-token claims.
func (s *storage) GetPrivateClaimsFromRequest(_ context.Context, req op.TokenRequest, _ []string) (map[string]any, error) {
	clientID := ""
	if b, ok := req.(tokenBasis); ok {
		clientID = b.GetClientID()
	}
	return s.accessClaims(clientID, req.GetSubject(), req.GetScopes()), nil
}

func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, subject, clientID string, scopes []string) (map[string]any, error) {
	return s.accessClaims(clientID, subject, scopes), nil
}

func (s *storage) accessClaims(clientID, subject string, scopes []string) map[string]any {
	claims := map[string]any{
		"typ":   "Bearer",
		"azp":   clientID,
		"scope": strings.Join(withoutOffline(scopes), " "),
	}
	// clients and users are never written after start
	if c, ok := s.clients[clientID]; ok && c.ProfileInAccessToken {
		if u, ok := s.users[subject]; ok {
			for _, sc := range scopes {
				switch sc {
				case oidc.ScopeProfile:
					claims["preferred_username"] = u.Username
					claims["name"] = u.Name
				case oidc.ScopeEmail:
					if u.Email != "" {
						claims["email"] = u.Email
						claims["email_verified"] = true
					}
				}
			}
		}
	}
	return claims
}

// withoutOffline hides the offline_access scope the provider adds on its
// own (see the package doc) from what tokens say.
func withoutOffline(scopes []string) []string {
	return slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return s == oidc.ScopeOfflineAccess })
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("private_key_jwt client authentication is not supported")
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("the JWT profile grant is not supported")
}

func (s *storage) Health(context.Context) error { return nil }

// client is a registered client (op.Client).
type client struct {
	Client
	loginURL        func(string) string
	idTokenLifetime time.Duration
}

func (c *client) GetID() string                    { return c.ID }
func (c *client) RedirectURIs() []string           { return c.Client.RedirectURIs }
func (c *client) PostLogoutRedirectURIs() []string { return c.Client.PostLogoutRedirectURIs }
func (c *client) ApplicationType() op.ApplicationType {
	return op.ApplicationTypeWeb
}
func (c *client) AuthMethod() oidc.AuthMethod {
	if c.Secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken}
}
func (c *client) LoginURL(id string) string            { return c.loginURL(id) }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration       { return c.idTokenLifetime }
func (c *client) DevMode() bool                        { return true } // http redirect URIs for public clients too
func (c *client) IsScopeAllowed(string) bool           { return false }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
