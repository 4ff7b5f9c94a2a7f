package httpapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
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

func (s *Server) csrfMAC(b csrfBinding, credential string, nonce []byte) []byte {
	m := hmac.New(sha256.New, s.csrfKey)
	cred := sha256.Sum256([]byte(credential))
	m.Write([]byte(b))
	m.Write([]byte{0})
	m.Write(cred[:])
	m.Write(nonce)
	return m.Sum(nil)[:csrfMACBytes]
}

// csrfBound reports whether tok is a token this platform signed for the
// given credential (constant time in the MAC comparison).
func (s *Server) csrfBound(tok string, b csrfBinding, credential string) bool {
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
	return hmac.Equal(mac, s.csrfMAC(b, credential, nonce))
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
	cs := r.CookiesNamed(name)
	if len(cs) != 1 {
		return "", false
	}
	return cs[0].Value, true
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
