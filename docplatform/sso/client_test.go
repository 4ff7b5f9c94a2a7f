package sso_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

// authorize follows the login URL to the provider and returns the code and
// state it redirects back with.
func authorize(t *testing.T, loginURL string) (code, state string) {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(loginURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %s", resp.Status)
	}
	loc, _ := url.Parse(resp.Header.Get("Location"))
	return loc.Query().Get("code"), loc.Query().Get("state")
}

func TestAuthCodeURL(t *testing.T) {
	p := ssotest.New(t)
	c := newClient(t, p, nil)
	verifier := sso.NewVerifier()
	raw, err := c.AuthCodeURL(context.Background(), "st", "no", verifier)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	q := u.Query()
	sum := sha256.Sum256([]byte(verifier))
	want := map[string]string{
		"response_type": "code", "client_id": p.ClientID, "redirect_uri": "http://127.0.0.1/api/auth/callback",
		"scope": "openid profile email", "state": "st", "nonce": "no",
		"code_challenge": base64.RawURLEncoding.EncodeToString(sum[:]), "code_challenge_method": "S256",
	}
	for k, v := range want {
		if q.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, q.Get(k), v)
		}
	}
	if u.Scheme+"://"+u.Host+u.Path != p.Issuer+"/protocol/openid-connect/auth" {
		t.Errorf("endpoint %s", u.Path)
	}
}

func TestExchange(t *testing.T) {
	ctx := context.Background()
	t.Run("code with the right verifier and nonce yields tokens and the profile", func(t *testing.T) {
		p := ssotest.New(t)
		c := newClient(t, p, nil)
		v := sso.NewVerifier()
		login, _ := c.AuthCodeURL(ctx, "s", "n1", v)
		code, _ := authorize(t, login)
		tok, prof, err := c.Exchange(ctx, code, v, "n1")
		if err != nil {
			t.Fatal(err)
		}
		if prof.Subject != "user-1" || prof.Email != "ada@example.org" || prof.Name != "Ada Lovelace" || prof.PreferredUsername != "ada" {
			t.Errorf("profile %+v", prof)
		}
		if tok.AccessToken == "" || tok.RefreshToken == "" || tok.IDToken == "" || tok.ExpiresIn.Seconds() != 300 {
			t.Errorf("tokens %+v", tok)
		}
		if _, err := c.VerifyAccessToken(ctx, tok.AccessToken); err != nil {
			t.Errorf("issued access token refused: %v", err)
		}
		if _, err := c.VerifyAccessToken(ctx, tok.IDToken); err == nil {
			t.Error("ID token accepted as access token")
		}
	})
	t.Run("ID token nonce differing from the login's is refused", func(t *testing.T) {
		p := ssotest.New(t)
		c := newClient(t, p, nil)
		v := sso.NewVerifier()
		login, _ := c.AuthCodeURL(ctx, "s", "n1", v)
		code, _ := authorize(t, login)
		p.NextIDTokenNonce("other")
		if _, _, err := c.Exchange(ctx, code, v, "n1"); err == nil {
			t.Fatal("accepted")
		}
	})
	t.Run("wrong PKCE verifier is refused by the provider", func(t *testing.T) {
		p := ssotest.New(t)
		c := newClient(t, p, nil)
		login, _ := c.AuthCodeURL(ctx, "s", "n1", sso.NewVerifier())
		code, _ := authorize(t, login)
		_, _, err := c.Exchange(ctx, code, sso.NewVerifier(), "n1")
		if !errors.Is(err, sso.ErrRefused) {
			t.Fatalf("error %v, want ErrRefused", err)
		}
	})
	t.Run("wrong client secret is refused", func(t *testing.T) {
		p := ssotest.New(t)
		c, _ := sso.New(sso.Config{Issuer: p.Issuer, ClientID: p.ClientID, ClientSecret: "wrong", RedirectURL: "http://127.0.0.1/api/auth/callback"})
		v := sso.NewVerifier()
		login, _ := c.AuthCodeURL(ctx, "s", "n", v)
		code, _ := authorize(t, login)
		if _, _, err := c.Exchange(ctx, code, v, "n"); err == nil {
			t.Fatal("accepted")
		}
	})
}

func TestRefresh(t *testing.T) {
	ctx := context.Background()
	for _, rotate := range []bool{false, true} {
		name := map[bool]string{false: "without rotation the refresh token is not reissued", true: "with rotation the new refresh token is returned"}[rotate]
		t.Run(name, func(t *testing.T) {
			p := ssotest.New(t)
			p.RotateRefresh = rotate
			c := newClient(t, p, nil)
			v := sso.NewVerifier()
			login, _ := c.AuthCodeURL(ctx, "s", "n", v)
			code, _ := authorize(t, login)
			first, _, err := c.Exchange(ctx, code, v, "n")
			if err != nil {
				t.Fatal(err)
			}
			next, err := c.Refresh(ctx, first.RefreshToken)
			if err != nil {
				t.Fatal(err)
			}
			if next.AccessToken == "" || next.IDToken == "" {
				t.Errorf("refresh result %+v", next)
			}
			if rotate != (next.RefreshToken != "") {
				t.Errorf("refresh token %q (rotate=%v)", next.RefreshToken, rotate)
			}
		})
	}
	t.Run("unknown refresh token is a refusal", func(t *testing.T) {
		p := ssotest.New(t)
		c := newClient(t, p, nil)
		if _, err := c.Refresh(ctx, "nope"); !errors.Is(err, sso.ErrRefused) {
			t.Fatalf("error %v, want ErrRefused", err)
		}
	})
}

func TestEndSessionAndRevocation(t *testing.T) {
	ctx := context.Background()
	p := ssotest.New(t)
	c := newClient(t, p, nil)
	raw, err := c.EndSessionURL(ctx, "the-id-token", "http://front/")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(raw)
	if q := u.Query(); q.Get("client_id") != p.ClientID || q.Get("id_token_hint") != "the-id-token" || q.Get("post_logout_redirect_uri") != "http://front/" {
		t.Errorf("end session URL %s", raw)
	}
	raw, _ = c.EndSessionURL(ctx, "", "http://front/")
	if u, _ := url.Parse(raw); u.Query().Has("id_token_hint") {
		t.Errorf("hint without id token: %s", raw)
	}
	if !c.CanRevoke(ctx) {
		t.Fatal("revocation endpoint not seen")
	}
	if err := c.RevokeToken(ctx, "rt-1", "refresh_token"); err != nil {
		t.Fatal(err)
	}
	if got := <-p.Revoked; got != "rt-1" {
		t.Errorf("revoked %q", got)
	}

	noRev := ssotest.New(t, ssotest.Options{NoRevocation: true})
	c2 := newClient(t, noRev, nil)
	if c2.CanRevoke(ctx) {
		t.Error("revocation claimed without endpoint")
	}
	if err := c2.RevokeToken(ctx, "x", "access_token"); err != nil {
		t.Errorf("revoke without endpoint: %v", err)
	}
}

func TestDiscoveryFailureIsReported(t *testing.T) {
	c, err := sso.New(sso.Config{Issuer: "http://127.0.0.1:1/realms/x", ClientID: "a", ClientSecret: "b", RedirectURL: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Discover(context.Background()); err == nil || c.Ready() {
		t.Fatal("discovery of a dead provider succeeded")
	}
}
