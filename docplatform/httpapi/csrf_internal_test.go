package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

// referenceCSRFBound is csrfBound as it was written before its pooled
// hasher and in-place parsing: the plain reading of the token format,
// kept to check the faster one against.
func referenceCSRFBound(key []byte, tok string, b csrfBinding, credential string) bool {
	if len(tok) != csrfTokenLen || credential == "" {
		return false
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	macPart := parts[1]
	if b == csrfForRefresh {
		macPart = parts[2]
	}
	nonce, err1 := hex.DecodeString(parts[0])
	mac, err2 := hex.DecodeString(macPart)
	if err1 != nil || err2 != nil || len(nonce) != csrfNonceBytes || len(mac) != csrfMACBytes {
		return false
	}
	m := hmac.New(sha256.New, key)
	cred := sha256.Sum256([]byte(credential))
	m.Write([]byte(b))
	m.Write([]byte{0})
	m.Write(cred[:])
	m.Write(nonce)
	return hmac.Equal(mac, m.Sum(nil)[:csrfMACBytes])
}

// csrfBound accepts and refuses exactly the tokens the plain reading
// does: tokens issued for the session and altered ones (a byte changed
// to a dot, a non-hex or an upper-case digit, parts moved, the other
// session's credential, the other binding).
func TestCSRFBoundAgreesWithThePlainReading(t *testing.T) {
	s := &Server{secretKeys: &secretKeys{csrfKey: []byte("0123456789abcdef0123456789abcdef")}}
	const access, refresh = "access-token-of-the-session", "refresh-token-of-the-session"
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "0123456789abcdefABCDEF.g-"
	accepted := 0
	for range 20 {
		tok := s.csrfToken(access, refresh)
		cands := []string{tok, tok[:len(tok)-1], tok + "0", strings.Replace(tok, ".", "", 1) + "0",
			tok[33:66] + "." + tok[:32] + tok[65:], strings.ToUpper(tok)}
		for i := range tok {
			for _, c := range []byte{'.', 'g', 'A', tok[i] ^ 1} {
				cands = append(cands, tok[:i]+string(c)+tok[i+1:])
			}
		}
		for range 200 {
			b := []byte(tok)
			for range 1 + rng.IntN(3) {
				b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
			}
			cands = append(cands, string(b))
		}
		for _, c := range cands {
			for _, bc := range []struct {
				b    csrfBinding
				cred string
			}{{csrfForAccess, access}, {csrfForRefresh, refresh}, {csrfForAccess, refresh}, {csrfForRefresh, "other"}, {csrfForAccess, ""}} {
				got, want := s.csrfBound(c, bc.b, bc.cred), referenceCSRFBound(s.csrfKey, c, bc.b, bc.cred)
				if got != want {
					t.Fatalf("token %q, %s, credential %q: %v, the plain reading says %v", c, bc.b, bc.cred, got, want)
				}
				if got {
					accepted++
				}
			}
		}
	}
	if accepted < 40 { // each issued token under both of its bindings
		t.Fatalf("only %d tokens accepted", accepted)
	}
}
