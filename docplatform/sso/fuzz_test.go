package sso_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

// No input that the provider did not sign verifies, and none panics.
func FuzzVerifyAccessToken(f *testing.F) {
	p := ssotest.New(f)
	c := newClient(f, p, &clock{t: time.Now()})
	valid := p.Mint(nil, p.AccessClaims("u"))
	f.Add(valid)
	f.Add(valid[:len(valid)-2] + "AA")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, tok string) {
		if tok == valid {
			return
		}
		if _, err := c.VerifyAccessToken(context.Background(), tok); err == nil && !sameJWS(tok, valid) {
			t.Fatalf("forged token verified: %q", tok)
		}
	})
}

// sameJWS reports whether two compact serializations carry the same bytes
// (base64 may spell the same bytes in more than one way).
func sameJWS(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	if len(pa) != 3 || len(pb) != 3 {
		return false
	}
	for i := range pa {
		x, err1 := base64.RawURLEncoding.DecodeString(pa[i])
		y, err2 := base64.RawURLEncoding.DecodeString(pb[i])
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}
