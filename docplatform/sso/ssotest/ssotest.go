// Package ssotest runs a small OpenID provider over real HTTP for tests of
// the platform's OIDC client: discovery, a key set whose fetches are
// counted, an authorization endpoint that approves at once as a chosen user,
// a token endpoint (authorization code with PKCE and client secret,
// refresh with rotation), end_session and revocation. Its signing key can
// mint any token a test needs, including the forgeries a verifier must
// refuse. The development provider (devidp) is the full one; this one
// exists so that token rules can be tested token by token.
package ssotest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// User is who the authorization endpoint logs in.
type User struct {
	Subject, Email, Name, PreferredUsername string
}

// Provider is a running test provider.
type Provider struct {
	Server       *httptest.Server
	Issuer       string
	ClientID     string
	ClientSecret string
	Key          *rsa.PrivateKey
	KeyID        string

	// AccessTTL is the lifetime of issued access tokens (default 5 min).
	AccessTTL time.Duration
	// RotateRefresh makes every refresh return a new refresh token.
	RotateRefresh bool

	// ExtraKeys are published in the key set beside the signing key, the
	// way real providers mix in encryption and EC keys.
	ExtraKeys []json.RawMessage
	// IDTokenAudience replaces the ID token's aud (default: the client id)
	// and IDTokenAZP its azp ("-" removes it).
	IDTokenAudience []string
	IDTokenAZP      string
	// ExtraAccessClaims are added to issued access tokens (a Keycloak
	// token listing many roles, say).
	ExtraAccessClaims map[string]any
	// NoRefreshToken leaves the refresh token out of token responses.
	NoRefreshToken bool
	// NoIDTokenOnRefresh leaves the ID token out of refresh responses, as
	// providers may (OpenID Connect Core §12.2).
	NoIDTokenOnRefresh bool
	// IDTokenAtHash puts at_hash (the access token's hash) in ID tokens.
	IDTokenAtHash bool
	// ExtraIDClaims are added to issued ID tokens.
	ExtraIDClaims map[string]any
	// EditIDToken, when set, rewrites the JSON payload of issued ID tokens
	// before they are signed (to name a claim twice, say, which a Go map
	// cannot).
	EditIDToken func(payload []byte) []byte

	JWKSFetches atomic.Int64
	Revoked     chan string // refresh tokens revoked, buffered
	mu          sync.Mutex
	user        User
	codes       map[string]codeGrant
	refresh     map[string]User
	nextIDNonce string
	opts        Options
}

type codeGrant struct {
	user               User
	challenge, nonce   string
	redirect, clientID string
}

// Options change the discovery document and the authorization response.
type Options struct {
	NoRevocation bool
	// NoEndSession leaves end_session_endpoint out of discovery.
	NoEndSession bool
	// ResponseIss adds iss (RFC 9207) and session_state to the redirect
	// back to the client, as Keycloak does; WrongIss sends a foreign iss.
	ResponseIss, WrongIss bool
	// AdvertiseIss sets authorization_response_iss_parameter_supported in
	// discovery (Keycloak does) whether or not iss is then sent.
	AdvertiseIss bool
}

// New starts a provider with issuer {server}/realms/test.
func New(t testing.TB, opts ...Options) *Provider {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{
		ClientID: "platform", ClientSecret: "s3cret", Key: key, KeyID: "k1",
		AccessTTL: 5 * time.Minute, Revoked: make(chan string, 16),
		user:  User{Subject: "user-1", Email: "ada@example.org", Name: "Ada Lovelace", PreferredUsername: "ada"},
		codes: map[string]codeGrant{}, refresh: map[string]User{},
	}
	for _, o := range opts {
		p.opts = o
	}
	mux := http.NewServeMux()
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Server.Close)
	p.Issuer = p.Server.URL + "/realms/test"
	base := "/realms/test"
	mux.HandleFunc("GET "+base+"/.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET "+base+"/protocol/openid-connect/certs", p.jwks)
	mux.HandleFunc("GET "+base+"/protocol/openid-connect/auth", p.authorize)
	mux.HandleFunc("POST "+base+"/protocol/openid-connect/token", p.token)
	mux.HandleFunc("POST "+base+"/protocol/openid-connect/revoke", p.revoke)
	return p
}

// SetUser chooses who the next logins are.
func (p *Provider) SetUser(u User) { p.mu.Lock(); p.user = u; p.mu.Unlock() }

// NextIDTokenNonce makes the next code exchange answer with this nonce in
// the ID token instead of the one the login sent.
func (p *Provider) NextIDTokenNonce(n string) { p.mu.Lock(); p.nextIDNonce = n; p.mu.Unlock() }

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	e := p.Issuer + "/protocol/openid-connect"
	doc := map[string]any{
		"issuer": p.Issuer, "authorization_endpoint": e + "/auth", "token_endpoint": e + "/token",
		"jwks_uri":                              e + "/certs",
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
	}
	if !p.opts.NoRevocation {
		doc["revocation_endpoint"] = e + "/revoke"
	}
	if !p.opts.NoEndSession {
		doc["end_session_endpoint"] = e + "/logout"
	}
	if p.opts.AdvertiseIss {
		doc["authorization_response_iss_parameter_supported"] = true
	}
	writeJSON(w, doc)
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	p.JWKSFetches.Add(1)
	sig, _ := json.Marshal(jose.JSONWebKey{Key: &p.Key.PublicKey, KeyID: p.KeyID, Algorithm: "RS256", Use: "sig"})
	keys := append(append([]json.RawMessage{}, p.ExtraKeys...), sig)
	writeJSON(w, map[string]any{"keys": keys})
}

func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("response_type") != "code" || q.Get("client_id") != p.ClientID || q.Get("code_challenge_method") != "S256" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	p.mu.Lock()
	p.codes[code] = codeGrant{user: p.user, challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirect: q.Get("redirect_uri"), clientID: q.Get("client_id")}
	p.mu.Unlock()
	rq := redirect.Query()
	rq.Set("code", code)
	rq.Set("state", q.Get("state"))
	if p.opts.ResponseIss || p.opts.WrongIss {
		rq.Set("session_state", rand.Text())
		iss := p.Issuer
		if p.opts.WrongIss {
			iss = "https://evil.example/realms/test"
		}
		rq.Set("iss", iss)
	}
	redirect.RawQuery = rq.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (p *Provider) clientOK(r *http.Request) bool {
	id, secret, ok := r.BasicAuth()
	if ok {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	return id == p.ClientID && secret == p.ClientSecret
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code})
}

func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || !p.clientOK(r) {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		p.mu.Lock()
		g, ok := p.codes[r.PostForm.Get("code")]
		delete(p.codes, r.PostForm.Get("code"))
		nonce := g.nonce
		if p.nextIDNonce != "" {
			nonce, p.nextIDNonce = p.nextIDNonce, ""
		}
		p.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || r.PostForm.Get("redirect_uri") != g.redirect {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		p.issue(w, g.user, nonce, "", false)
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		p.mu.Lock()
		u, ok := p.refresh[rt]
		if ok && p.RotateRefresh {
			delete(p.refresh, rt)
		}
		p.mu.Unlock()
		if !ok {
			oauthError(w, http.StatusBadRequest, "invalid_grant")
			return
		}
		keep := rt
		if p.RotateRefresh {
			keep = ""
		}
		p.issue(w, u, "", keep, p.NoIDTokenOnRefresh)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
	}
}

func (p *Provider) issue(w http.ResponseWriter, u User, nonce, keepRefresh string, noIDToken bool) {
	now := time.Now()
	atClaims := map[string]any{
		"iss": p.Issuer, "sub": u.Subject, "aud": []string{"account", p.ClientID}, "azp": p.ClientID,
		"typ": "Bearer", "iat": now.Unix(), "exp": now.Add(p.AccessTTL).Unix(), "jti": rand.Text(),
	}
	for k, v := range p.ExtraAccessClaims {
		atClaims[k] = v
	}
	at := p.Mint(nil, atClaims)
	idClaims := map[string]any{
		"iss": p.Issuer, "sub": u.Subject, "aud": p.ClientID, "azp": p.ClientID, "typ": "ID",
		"iat": now.Unix(), "exp": now.Add(p.AccessTTL).Unix(),
		"email": u.Email, "name": u.Name, "preferred_username": u.PreferredUsername,
	}
	if nonce != "" {
		idClaims["nonce"] = nonce
	}
	if len(p.IDTokenAudience) > 0 {
		idClaims["aud"] = p.IDTokenAudience
	}
	if p.IDTokenAtHash {
		sum := sha256.Sum256([]byte(at))
		idClaims["at_hash"] = base64.RawURLEncoding.EncodeToString(sum[:16])
	}
	for k, v := range p.ExtraIDClaims {
		idClaims[k] = v
	}
	if p.IDTokenAZP == "-" {
		delete(idClaims, "azp")
	} else if p.IDTokenAZP != "" {
		idClaims["azp"] = p.IDTokenAZP
	}
	rt := keepRefresh
	if rt == "" {
		rt = rand.Text()
		p.mu.Lock()
		p.refresh[rt] = u
		p.mu.Unlock()
	}
	resp := map[string]any{
		"access_token": at, "token_type": "Bearer", "expires_in": int(p.AccessTTL / time.Second),
		"refresh_token": rt, "id_token": p.mintID(idClaims),
	}
	if p.NoRefreshToken {
		delete(resp, "refresh_token")
	}
	if noIDToken {
		delete(resp, "id_token")
	}
	writeJSON(w, resp)
}

func (p *Provider) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || !p.clientOK(r) {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	tok := r.PostForm.Get("token")
	p.mu.Lock()
	delete(p.refresh, tok)
	p.mu.Unlock()
	select {
	case p.Revoked <- tok:
	default:
	}
	w.WriteHeader(http.StatusOK)
}

func (p *Provider) mintID(claims map[string]any) string {
	if p.EditIDToken == nil {
		return p.Mint(nil, claims)
	}
	payload, _ := json.Marshal(claims)
	return p.MintRaw([]byte(`{"alg":"RS256","kid":"`+p.KeyID+`","typ":"JWT"}`), p.EditIDToken(payload))
}

// AccessClaims returns the claims of a valid access token for sub, for a
// test to alter before minting.
func (p *Provider) AccessClaims(sub string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": p.Issuer, "sub": sub, "aud": "account", "azp": p.ClientID, "typ": "Bearer",
		"iat": now.Unix(), "exp": now.Add(p.AccessTTL).Unix(),
	}
}

// Mint signs claims with the provider's key (RS256, kid = KeyID, header typ
// JWT) after applying header overrides: "kid" and "typ" replace the
// defaults, a nil value removes the header.
func (p *Provider) Mint(header map[string]any, claims map[string]any) string {
	return MintWith(p.Key, p.KeyID, header, claims)
}

// MintWith signs claims with any RSA key.
func MintWith(key *rsa.PrivateKey, kid string, header map[string]any, claims map[string]any) string {
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if v, ok := header["typ"]; ok {
		opts = &jose.SignerOptions{}
		if v != nil {
			opts.WithType(jose.ContentType(v.(string)))
		}
	}
	if v, ok := header["kid"]; ok {
		if v == nil {
			kid = ""
		} else {
			kid = v.(string)
		}
	}
	jk := jose.JSONWebKey{Key: key, KeyID: kid}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jk}, opts)
	if err != nil {
		panic(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		panic(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		panic(err)
	}
	return s
}

// MintRaw signs a header and payload given as raw JSON (RS256 with the
// provider's key, whatever the header says), for tokens a Go map cannot
// express: a claim or header member named twice, in two spellings.
func (p *Provider) MintRaw(header, payload []byte) string {
	signing := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload)
	digest := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(nil, p.Key, crypto.SHA256, digest[:])
	if err != nil {
		panic(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
