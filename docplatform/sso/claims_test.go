package sso_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

// withMember adds a member to the end of a JSON object, where
// encoding/json's last-one-wins would let it override an earlier one.
func withMember(object []byte, member string) []byte {
	return []byte(strings.TrimSuffix(string(object), "}") + "," + member + "}")
}

// Claims and header members are read by their exact names, and a token
// naming one twice is refused, whatever the order: a provider that lets
// users add claims of their own would otherwise sign a token that says one
// subject to every other reader and another to us.
func TestAccessTokenClaimNamesAreExact(t *testing.T) {
	p := ssotest.New(t)
	now := time.Now()
	c := newClient(t, p, &clock{t: now})
	good, _ := json.Marshal(map[string]any{
		"iss": p.Issuer, "sub": "user-1", "aud": "account", "azp": p.ClientID, "typ": "Bearer",
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
	})
	header := []byte(`{"alg":"RS256","kid":"` + p.KeyID + `","typ":"JWT"}`)
	expired := fmt.Sprintf(`{"iss":%q,"sub":"user-1","azp":%q,"exp":%d}`, p.Issuer, p.ClientID, now.Add(-time.Hour).Unix())

	cases := []struct {
		name            string
		header, payload []byte
		wantSub         string // "" for refused
	}{
		{"a valid token passes", header, good, "user-1"},
		{"Sub after sub does not replace the subject", header, withMember(good, `"Sub":"admin"`), "user-1"},
		{"SUB after sub does not replace the subject", header, withMember(good, `"SUB":"admin"`), "user-1"},
		{"Sub alone is no subject: refused", header, []byte(strings.Replace(string(good), `"sub"`, `"Sub"`, 1)), ""},
		{"sub twice is refused", header, withMember(good, `"sub":"admin"`), ""},
		{"sub twice with the same value is refused", header, withMember(good, `"sub":"user-1"`), ""},
		{"sub twice, once spelt with a JSON escape, is refused", header, withMember(good, `"s\u0075b":"admin"`), ""},
		{"exp twice is refused", header, withMember(good, fmt.Sprintf(`"exp":%d`, now.Add(time.Hour).Unix())), ""},
		{"an expired exp is not rescued by a later EXP", header, withMember([]byte(expired), fmt.Sprintf(`"EXP":%d`, now.Add(time.Hour).Unix())), ""},
		{"a foreign iss is not rescued by a later ISS", header, withMember([]byte(strings.Replace(string(good), p.Issuer, "https://evil.example", 1)), fmt.Sprintf(`"ISS":%q`, p.Issuer)), ""},
		{"payload typ ID is not hidden by a later Typ", header, withMember([]byte(strings.Replace(string(good), `"typ":"Bearer"`, `"typ":"ID"`, 1)), `"Typ":"Bearer"`), ""},
		{"header alg none is not rescued by a later Alg", []byte(`{"alg":"none","Alg":"RS256","kid":"` + p.KeyID + `"}`), good, ""},
		{"header alg twice is refused", []byte(`{"alg":"RS256","alg":"RS256","kid":"` + p.KeyID + `"}`), good, ""},
		{"header kid twice is refused", []byte(`{"alg":"RS256","kid":"other","kid":"` + p.KeyID + `"}`), good, ""},
		{"header typ twice is refused", []byte(`{"alg":"RS256","kid":"` + p.KeyID + `","typ":"JWT","typ":"JWT"}`), good, ""},
		{"nested members named twice are not claims: passes", header, withMember(good, `"realm_access":{"roles":["a"],"roles":["b"]}`), "user-1"},
		{"payload that is not one object is refused", header, append(append([]byte{}, good...), []byte(` {}`)...), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.VerifyAccessToken(context.Background(), p.MintRaw(tc.header, tc.payload))
			if tc.wantSub == "" {
				if err == nil {
					t.Fatalf("accepted with subject %q", got.Subject)
				}
				if !errors.Is(err, sso.ErrInvalidToken) {
					t.Fatalf("error %v does not wrap ErrInvalidToken", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got.Subject != tc.wantSub {
				t.Fatalf("subject %q, want %q", got.Subject, tc.wantSub)
			}
		})
	}
}

// The ID token at the callback decides who logs in: its claims are read by
// exact names too (go-oidc alone reads them ignoring case), and a member
// named twice fails the login.
func TestIDTokenClaimNamesAreExact(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		edit      func(payload []byte) []byte
		wantSub   string // "" for refused
		wantEmail string
	}{
		{"Sub after sub does not replace who logs in", func(b []byte) []byte { return withMember(b, `"Sub":"admin"`) }, "user-1", "ada@example.org"},
		{"Email after email does not replace the profile's", func(b []byte) []byte { return withMember(b, `"Email":"boss@example.org"`) }, "user-1", "ada@example.org"},
		{"sub twice fails the login", func(b []byte) []byte { return withMember(b, `"sub":"admin"`) }, "", ""},
		{"nonce twice fails the login", func(b []byte) []byte { return withMember(b, `"nonce":"n1"`) }, "", ""},
		{"a foreign iss is not rescued by a later ISS", func(b []byte) []byte {
			var m map[string]any
			json.Unmarshal(b, &m)
			iss := m["iss"].(string)
			return withMember([]byte(strings.Replace(string(b), iss, "https://evil.example", 1)), fmt.Sprintf(`"ISS":%q`, iss))
		}, "", ""},
		{"an audience without the client is not rescued by a later AUD", func(b []byte) []byte {
			b = []byte(strings.Replace(string(b), `"aud":"platform"`, `"aud":"other"`, 1))
			return withMember([]byte(strings.Replace(string(b), `"azp":"platform"`, `"azp":"other"`, 1)), `"AUD":"platform"`)
		}, "", ""},
		{"a wrong at_hash is not hidden by a later AT_HASH", func(b []byte) []byte {
			return withMember(withMember(b, `"at_hash":"AAAAAAAAAAAAAAAAAAAAAA"`), `"AT_HASH":""`)
		}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ssotest.New(t)
			p.EditIDToken = tc.edit
			c := newClient(t, p, nil)
			code, v := login(t, p, c, "n1")
			_, prof, err := c.Exchange(ctx, code, v, "n1")
			if tc.wantSub == "" {
				if err == nil {
					t.Fatalf("login accepted as %+v", prof)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if prof.Subject != tc.wantSub || prof.Email != tc.wantEmail {
				t.Fatalf("profile %+v", prof)
			}
		})
	}
	t.Run("a correct at_hash passes", func(t *testing.T) {
		p := ssotest.New(t)
		p.IDTokenAtHash = true
		c := newClient(t, p, nil)
		code, v := login(t, p, c, "n1")
		if _, _, err := c.Exchange(ctx, code, v, "n1"); err != nil {
			t.Fatal(err)
		}
	})
}
