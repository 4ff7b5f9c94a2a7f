package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"hash"
	"net/http"
	"strings"
	"unsafe"
)

// csrfCheck is check 5: a state-changing request that a cookie
// authenticated must echo the csrf_token cookie in X-CSRF-Token, and the
// token must be one this platform signed for the access token that
// authenticated it (see csrfToken). The decision rests on the credential
// that authenticated, so a stray Authorization or X-API-Key header cannot
// switch the check off for a request the cookie authenticated.
func (s *Server) csrfCheck(rt *Route) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if rt.Access.Level == LevelPublic {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			default:
				next.ServeHTTP(w, r)
				return
			}
			st := state(r)
			if st.cred != credCookie {
				next.ServeHTTP(w, r)
				return
			}
			if tok, ok := echoedCSRF(r); ok && s.csrfBound(tok, csrfForAccess, st.accessCookie) {
				next.ServeHTTP(w, r)
				return
			}
			s.deny(w, r, "", "CSRF token validation failed")
		})
	}
}

// The CSRF token is OWASP's "signed double-submit cookie": a random nonce
// and MACs over it under a key derived from COOKIE_SECRET, each binding the
// nonce to one of the login's HttpOnly credentials:
//
//	hex(nonce) "." hex(MAC("access", access token, nonce)) "." hex(MAC("refresh", refresh token, nonce))
//
// A plain random token can be planted: whoever can write a cookie for the
// platform's host (a sibling subdomain, a network attacker on plain HTTP)
// sets csrf_token to a value of their choosing and sends it in the header
// too. A signed token cannot be made without COOKIE_SECRET, and one taken
// from another session (the attacker's own login) does not verify, because
// it is bound to that session's tokens, which a script can never read.
//
// Two bindings, because no single credential reaches both places a token
// is checked: the access_token cookie (Path /) comes with every API write
// but may have expired by the time the client refreshes, and the
// refresh_token cookie (Path /api/auth/refresh) comes only to the refresh.
// Both change only when the platform sets cookies (the callback and the
// refresh), and it issues a new csrf_token in the same response, so the
// browser switches them together; a write sent with the token read just
// before another tab's refresh fails as a stale plain token always did.
// Nothing is stored: every replica that shares COOKIE_SECRET checks every
// token, which is what binds a login across replicas.
const (
	csrfNonceBytes = 16
	csrfMACBytes   = 16 // a truncated HMAC-SHA-256: 128 bits to forge blind
	csrfTokenLen   = 2*csrfNonceBytes + 2*(1+2*csrfMACBytes)
	// legacyCSRFLen is the length of the tokens before they were signed
	// (32 random bytes, hex); see refreshCSRF.
	legacyCSRFLen = 64
)

// csrfBinding names the credential a MAC binds the nonce to.
type csrfBinding string

const (
	csrfForAccess  csrfBinding = "access"
	csrfForRefresh csrfBinding = "refresh"
)

// csrfToken makes a token bound to the login's access and refresh tokens.
func (s *Server) csrfToken(access, refresh string) string {
	nonce := make([]byte, csrfNonceBytes)
	rand.Read(nonce)
	return hex.EncodeToString(nonce) + "." +
		hex.EncodeToString(s.csrfMAC(csrfForAccess, access, nonce)) + "." +
		hex.EncodeToString(s.csrfMAC(csrfForRefresh, refresh, nonce))
}

// csrfMAC is the MAC binding nonce to credential for b, in a slice of its
// own.
func (s *Server) csrfMAC(b csrfBinding, credential string, nonce []byte) []byte {
	c := s.csrfHasher()
	mac := bytes.Clone(c.mac(b, credential, nonce))
	s.csrfHashers.Put(c)
	return mac
}

// csrfHasherState computes CSRF MACs. Every cookie-authenticated write
// checks one, so it is kept in a pool (Server.csrfHashers) with the
// buffers its inputs and sum need: a keyed HMAC costs five allocations
// to set up, and a buffer handed to the hash's Write or Sum escapes.
type csrfHasherState struct {
	hmac  hash.Hash // keyed with Server.csrfKey
	cred  [sha256.Size]byte
	nonce [csrfNonceBytes]byte
	sum   [sha256.Size]byte
}

func (k *secretKeys) csrfHasher() *csrfHasherState {
	if c, _ := k.csrfHashers.Get().(*csrfHasherState); c != nil {
		return c
	}
	return &csrfHasherState{hmac: hmac.New(sha256.New, k.csrfKey)}
}

var zeroByte = []byte{0}

// mac is HMAC(b, 0, SHA-256(credential), nonce) cut to csrfMACBytes: the
// binding of nonce to credential for b. The slice is c's own, valid until
// c is used again.
func (c *csrfHasherState) mac(b csrfBinding, credential string, nonce []byte) []byte {
	c.cred = sha256.Sum256(readOnlyBytes(credential))
	c.hmac.Reset() // its keyed initial state
	c.hmac.Write(readOnlyBytes(string(b)))
	c.hmac.Write(zeroByte)
	c.hmac.Write(c.cred[:])
	c.hmac.Write(nonce)
	return c.hmac.Sum(c.sum[:0])[:csrfMACBytes]
}

// readOnlyBytes is s's bytes without a copy, for functions that only read
// their argument (a hash's Write): nothing may write to them.
func readOnlyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// csrfBound reports whether tok is a token this platform signed for the
// given credential (constant time in the MAC comparison), under
// COOKIE_SECRET or, while it is being rotated, COOKIE_SECRET_PREVIOUS.
func (s *Server) csrfBound(tok string, b csrfBinding, credential string) bool {
	return s.secretKeys.csrfBound(tok, b, credential) || (s.prev != nil && s.prev.csrfBound(tok, b, credential))
}

func (k *secretKeys) csrfBound(tok string, b csrfBinding, credential string) bool {
	if len(tok) != csrfTokenLen || credential == "" {
		return false
	}
	// Three parts: two dots and no third.
	noncePart, rest, ok1 := strings.Cut(tok, ".")
	accessPart, refreshPart, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(refreshPart, ".") {
		return false
	}
	macPart := accessPart
	if b == csrfForRefresh {
		macPart = refreshPart
	}
	if len(noncePart) != 2*csrfNonceBytes || len(macPart) != 2*csrfMACBytes {
		return false
	}
	c := k.csrfHasher()
	defer k.csrfHashers.Put(c)
	var mac [csrfMACBytes]byte
	if _, err := hex.Decode(c.nonce[:], readOnlyBytes(noncePart)); err != nil {
		return false
	}
	if _, err := hex.Decode(mac[:], readOnlyBytes(macPart)); err != nil {
		return false
	}
	return hmac.Equal(mac[:], c.mac(b, credential, c.nonce[:]))
}

// echoedCSRF returns the token of a request that carries exactly one
// X-CSRF-Token header and exactly one csrf_token cookie, equal and not
// empty (compared in constant time). Several cookies of one name are
// refused rather than resolved: net/http's r.Cookie returns the first, and
// browsers put first the cookie with the longest path, which is the one a
// sibling subdomain can plant beside ours.
func echoedCSRF(r *http.Request) (string, bool) {
	hdr := r.Header[hdrCSRF]
	c, ok := onlyCookie(r, cookieCSRF)
	if len(hdr) != 1 || !ok || c == "" {
		return "", false
	}
	if subtle.ConstantTimeCompare([]byte(hdr[0]), []byte(c)) != 1 {
		return "", false
	}
	return c, true
}

// onlyCookie returns the value of the request's one cookie called name;
// ok is false when there is none or more than one.
func onlyCookie(r *http.Request, name string) (string, bool) {
	// namedCookie reads the cookies as CookiesNamed does, without its
	// slice and Cookie.
	v, n := namedCookie(r.Header, name)
	if n != 1 {
		return "", false
	}
	return v, true
}

// refreshCSRF is the refresh endpoint's CSRF rule: the echoed token must
// be bound to the refresh token the request carries. One exception eases
// the upgrade from plain tokens: a browser still holding a token of the
// old, unsigned format (64 hex digits), echoed as before, may exchange it
// here for a signed one — only when the browser itself marks the request
// as coming from the platform's own origin (Sec-Fetch-Site: same-origin,
// which no script can set and which a sibling subdomain's request does not
// get). Every other route refuses the old format, and the client's next
// refresh (its timer, or a refresh-and-retry on a CSRF 403) brings it a
// signed token.
func (s *Server) refreshCSRF(r *http.Request, refreshToken string) bool {
	tok, ok := echoedCSRF(r)
	if !ok {
		return false
	}
	if s.csrfBound(tok, csrfForRefresh, refreshToken) {
		return true
	}
	if len(tok) == legacyCSRFLen && r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		_, err := hex.DecodeString(tok)
		if err == nil {
			state(r).addNote("unsigned CSRF token from before the upgrade exchanged")
			return true
		}
	}
	return false
}
