package httpapi_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/httpapi"
	"github.com/govkit/govkit/notify/httpapi/apitest"
)

func whoami(t *testing.T, e *apitest.Env, headers ...string) map[string]any {
	t.Helper()
	return e.Do(t, "GET", "/api/administrators/whoami", nil, headers...).Expect(t, http.StatusOK).Map(t)
}

func TestAccessAddressRules(t *testing.T) {
	cases := []struct {
		name     string
		cfg      map[string]any
		headers  []string
		role     string
		strategy string
		id       string
	}{
		{"a request from an admin address is SuperAdmin", nil, nil, "SuperAdmin", "ip", "127.0.0.1"},
		{"admin addresses may be CIDR ranges", map[string]any{"adminIps": []any{"127.0.0.0/8"}}, nil, "SuperAdmin", "ip", "127.0.0.1"},
		{"an address outside adminIps is Anonymous", map[string]any{"adminIps": []any{"10.0.0.0/8"}}, nil, "Anonymous", "ip", "127.0.0.1"},
		{"is_anonymous declines the admin address rule", nil, []string{"is_anonymous", "true"}, "Anonymous", "ip", "127.0.0.1"},
		{"a SiteMinder header from a trusted proxy is an AuthenticatedUser", nil, []string{"SM_UNIVERSALID", "bob"}, "AuthenticatedUser", "siteMinder", "bob"},
		{"SM_UNIVERSALID wins over sm_user", nil, []string{"SM_UNIVERSALID", "bob", "sm_user", "carol"}, "AuthenticatedUser", "siteMinder", "bob"},
		{"smgov_userdisplayname is read last", nil, []string{"smgov_userdisplayname", "Dave"}, "AuthenticatedUser", "siteMinder", "Dave"},
		// The documented downgrade: a SiteMinder header on an admin-address
		// request never makes it SuperAdmin, even from an untrusted proxy.
		{"a SiteMinder header from an untrusted address downgrades an admin address to Anonymous",
			map[string]any{"siteMinderReverseProxyIps": []any{"10.9.9.9"}}, []string{"sm_user", "mallory"}, "Anonymous", "ip", "127.0.0.1"},
		{"the client behind a trusted proxy is the X-Forwarded-For address",
			map[string]any{"trustedReverseProxyIps": []any{"127.0.0.1"}}, []string{"X-Forwarded-For", "10.1.2.3"}, "Anonymous", "ip", "10.1.2.3"},
		{"X-Forwarded-For is ignored without trusted proxies", nil, []string{"X-Forwarded-For", "10.1.2.3"}, "SuperAdmin", "ip", "127.0.0.1"},
		{"SiteMinder trust follows the resolved client address",
			map[string]any{"trustedReverseProxyIps": []any{"127.0.0.1"}, "siteMinderReverseProxyIps": []any{"10.1.2.3"}},
			[]string{"X-Forwarded-For", "10.1.2.3", "sm_user", "eve"}, "AuthenticatedUser", "siteMinder", "eve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := apitest.Options{}
			if c.cfg != nil {
				o.Config = []map[string]any{c.cfg}
			}
			e := apitest.Start(t, o)
			m := whoami(t, e, c.headers...)
			if m["role"] != c.role || m["authnStrategy"] != c.strategy || m["securityId"] != c.id {
				t.Fatalf("got %v", m)
			}
		})
	}
}

func TestAccessTokens(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	admin := seed(t, e, "/api/administrators", map[string]any{"email": "foo@invalid.local", "password": "Abcdefg1!x"})
	id := admin["id"].(string)
	tok := e.Do(t, "POST", "/api/administrators/"+id+"/access-tokens", map[string]any{}).Expect(t, 200).Map(t)["id"].(string)

	t.Run("a token in the Authorization header is Admin with the administrator's id", func(t *testing.T) {
		m := whoami(t, e, apitest.Token(tok)...)
		if m["role"] != "Admin" || m["authnStrategy"] != "accessToken" || m["securityId"] != id {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("a token in the access_token query parameter works too", func(t *testing.T) {
		m := e.Do(t, "GET", "/api/administrators/whoami?access_token="+tok, nil, apitest.Anonymous...).Expect(t, 200).Map(t)
		if m["role"] != "Admin" {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("an unknown token is Anonymous", func(t *testing.T) {
		if m := whoami(t, e, apitest.Token("nope")...); m["role"] != "Anonymous" {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("an expired token is Anonymous", func(t *testing.T) {
		oid, _ := notify.ParseID(id)
		ttl := int64(60)
		old := &notify.AccessToken{ID: "expiredexpiredexpiredexpiredexpiredexpiredexpiredexpiredexpired0", TTL: &ttl, UserID: oid, Created: time.Now().Add(-time.Hour)}
		if err := e.Store.AccessTokens().Insert(context.Background(), old); err != nil {
			t.Fatal(err)
		}
		if m := whoami(t, e, apitest.Token(old.ID)...); m["role"] != "Anonymous" {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("a token caller from an admin address keeps its Admin role", func(t *testing.T) {
		r := e.Do(t, "GET", "/api/administrators/whoami", nil, "Authorization", tok)
		if m := r.Map(t); m["role"] != "Admin" {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("a token holder may not manage configurations", func(t *testing.T) {
		e.Do(t, "GET", "/api/configurations", nil, apitest.Token(tok)...).Expect(t, http.StatusForbidden)
	})
	t.Run("a token holder manages all subscriptions", func(t *testing.T) {
		e.Do(t, "GET", "/api/subscriptions", nil, apitest.Token(tok)...).Expect(t, http.StatusOK)
	})
}

// oidcProvider is a loopback OpenID provider: discovery document and JWKS
// (with the certificate as x5c, as Keycloak publishes it).
type oidcProvider struct {
	key *rsa.PrivateKey
	url string
}

func newOIDCProvider(t *testing.T) *oidcProvider {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "idp"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &oidcProvider{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": p.url, "jwks_uri": p.url + "/certs"})
	})
	mux.HandleFunc("/certs", func(w http.ResponseWriter, r *http.Request) {
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig", Certificates: []*x509.Certificate{cert}}}}
		_ = json.NewEncoder(w).Encode(set)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *oidcProvider) token(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAccessOIDC(t *testing.T) {
	p := newOIDCProvider(t)
	isAdmin := config.Func(func(_ context.Context, args ...any) (any, error) {
		c, _ := args[0].(map[string]any)
		return c["role"] == "admin", nil
	})
	isAuthorized := config.Func(func(_ context.Context, args ...any) (any, error) {
		c, _ := args[0].(map[string]any)
		return c["email_verified"] == true, nil
	})
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"oidc": map[string]any{
		"discoveryUrl": p.url + "/.well-known/openid-configuration", "isAdmin": isAdmin, "isAuthorizedUser": isAuthorized,
		"jwtVerifyOptions": map[string]any{"audience": "notify"},
	}, "outboundRequests": map[string]any{"allow": []any{"127.0.0.1"}}}}}) // the provider is on loopback
	exp := time.Now().Add(time.Hour).Unix()
	cases := []struct {
		name   string
		key    *rsa.PrivateKey
		claims map[string]any
		role   string
		id     string
	}{
		{"a verified user is an AuthenticatedUser named by email", p.key, map[string]any{"email": "foo@invalid.local", "email_verified": true, "aud": "notify", "exp": exp}, "AuthenticatedUser", "foo@invalid.local"},
		{"preferred_username names a user without email", p.key, map[string]any{"preferred_username": "foo", "email_verified": true, "aud": "notify", "exp": exp}, "AuthenticatedUser", "foo"},
		{"isAdmin makes an Admin", p.key, map[string]any{"email": "a@invalid.local", "role": "admin", "aud": "notify", "exp": exp}, "Admin", "a@invalid.local"},
		{"a user isAuthorizedUser refuses is Anonymous", p.key, map[string]any{"email": "x@invalid.local", "aud": "notify", "exp": exp}, "Anonymous", "127.0.0.1"},
		{"an expired token is Anonymous", p.key, map[string]any{"email": "foo@invalid.local", "email_verified": true, "aud": "notify", "exp": time.Now().Add(-time.Hour).Unix()}, "Anonymous", "127.0.0.1"},
		{"a token for another audience is Anonymous", p.key, map[string]any{"email": "foo@invalid.local", "email_verified": true, "aud": "other", "exp": exp}, "Anonymous", "127.0.0.1"},
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	cases = append(cases, struct {
		name   string
		key    *rsa.PrivateKey
		claims map[string]any
		role   string
		id     string
	}{"a token signed by another key is Anonymous", other, map[string]any{"email": "foo@invalid.local", "email_verified": true, "aud": "notify", "exp": exp}, "Anonymous", "127.0.0.1"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := whoami(t, e, apitest.Bearer(p.token(t, c.key, c.claims))...)
			if m["role"] != c.role || m["securityId"] != c.id {
				t.Fatalf("got %v", m)
			}
			if c.role != "Anonymous" && m["authnStrategy"] != "oidc" {
				t.Fatalf("strategy %v", m["authnStrategy"])
			}
		})
	}
	t.Run("an OIDC user sees only its own subscriptions", func(t *testing.T) {
		seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "email", "userId": "foo@invalid.local", "userChannelId": "foo@invalid.local", "state": "confirmed"})
		seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "s", "channel": "email", "userId": "bar", "userChannelId": "bar@invalid.local", "state": "confirmed"})
		tok := p.token(t, p.key, map[string]any{"email": "foo@invalid.local", "email_verified": true, "aud": "notify", "exp": exp})
		if subs := list(t, e, "/api/subscriptions", apitest.Bearer(tok)...); len(subs) != 1 {
			t.Fatalf("got %d", len(subs))
		}
	})
}

func TestAccessClientCertificate(t *testing.T) {
	caKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	caCert, _ := x509.ParseCertificate(caDER)
	issue := func(cn string, server bool, parent *x509.Certificate, parentKey *rsa.PrivateKey) (certPEM, keyPEM []byte) {
		k, _ := rsa.GenerateKey(rand.Reader, 2048)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		if server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		} else {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		}
		if parent == nil {
			parent, parentKey = tmpl, k
		}
		der, _ := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	}
	srvCert, srvKey := issue("localhost", true, caCert, caKey)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	tlsCfg, err := httpapi.TLSConfig(config.TLS{Enabled: true, ClientCertificateEnabled: true, Key: srvKey, Cert: srvCert, CA: caPEM})
	if err != nil {
		t.Fatal(err)
	}
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"adminIps": []any{}}}})
	srv := httptest.NewUnstartedServer(e.App.Server)
	srv.TLS = tlsCfg
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	client := func(certPEM, keyPEM []byte) *http.Client {
		t.Helper()
		c := &tls.Config{RootCAs: roots}
		if certPEM != nil {
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			c.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Transport: &http.Transport{TLSClientConfig: c}}
	}
	get := func(t *testing.T, c *http.Client) map[string]any {
		t.Helper()
		resp, err := c.Get(srv.URL + "/api/administrators/whoami")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	t.Run("a client certificate signed by the CA is SuperAdmin named by its CN", func(t *testing.T) {
		c, k := issue("robot", false, caCert, caKey)
		if m := get(t, client(c, k)); m["role"] != "SuperAdmin" || m["securityId"] != "robot" || m["authnStrategy"] != "clientCertificate" {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("a self-signed client certificate is ignored", func(t *testing.T) {
		c, k := issue("intruder", false, nil, nil)
		if m := get(t, client(c, k)); m["role"] != "Anonymous" {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("no client certificate is Anonymous", func(t *testing.T) {
		if m := get(t, client(nil, nil)); m["role"] != "Anonymous" {
			t.Fatalf("got %v", m)
		}
	})
}
