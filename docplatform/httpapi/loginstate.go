package httpapi

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
)

// pendingLogin is one login between /login and /callback.
type pendingLogin struct {
	State    string `json:"s"`
	Verifier string `json:"v"`
	Nonce    string `json:"n"`
	Expires  int64  `json:"e"` // unix seconds; the cookie's Max-Age is only advice to the browser
}

// maxPendingLogins bounds the cookie: a third tab still works, a tenth
// pushes out the oldest.
const maxPendingLogins = 3

// sealLogins encrypts and authenticates the pending logins (AES-256-GCM
// under a key derived from COOKIE_SECRET, the cookie name as associated
// data), so the browser can neither read the PKCE verifier nor plant a
// login of its own.
func (s *Server) sealLogins(ps []pendingLogin) string {
	plain, _ := json.Marshal(ps)
	nonce := make([]byte, s.loginAEAD.NonceSize(), s.loginAEAD.NonceSize()+len(plain)+s.loginAEAD.Overhead())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(s.loginAEAD.Seal(nonce, nonce, plain, []byte(cookieLogin)))
}

// openLogins returns the unexpired pending logins of the request's
// login-state cookie; a missing, tampered or foreign cookie holds none.
func (s *Server) openLogins(r *http.Request) []pendingLogin {
	c, err := r.Cookie(cookieLogin)
	if err != nil {
		return nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	ns := s.loginAEAD.NonceSize()
	if err != nil || len(raw) < ns {
		return nil
	}
	plain, err := s.loginAEAD.Open(nil, raw[:ns], raw[ns:], []byte(cookieLogin))
	if err != nil && s.prev != nil {
		// sealed before COOKIE_SECRET was rotated
		plain, err = s.prev.loginAEAD.Open(nil, raw[:ns], raw[ns:], []byte(cookieLogin))
	}
	if err != nil {
		return nil
	}
	var ps []pendingLogin
	if json.Unmarshal(plain, &ps) != nil {
		return nil
	}
	now := s.o.Now().Unix()
	live := ps[:0]
	for _, p := range ps {
		if p.Expires > now {
			live = append(live, p)
		}
	}
	return live
}

// takeLogin removes and returns the pending login with the given state.
func takeLogin(ps []pendingLogin, state string) (pendingLogin, []pendingLogin, bool) {
	if state == "" {
		return pendingLogin{}, ps, false
	}
	for i, p := range ps {
		if subtle.ConstantTimeCompare([]byte(p.State), []byte(state)) == 1 {
			rest := append(append([]pendingLogin(nil), ps[:i]...), ps[i+1:]...)
			return p, rest, true
		}
	}
	return pendingLogin{}, ps, false
}

// writeLogins stores the pending logins in both copies of the cookie, or
// clears both when none is left.
func (s *Server) writeLogins(w http.ResponseWriter, ps []pendingLogin) {
	if len(ps) == 0 {
		s.clearCookie(w, cookieLogin, pathLoginCallback, true, http.SameSiteLaxMode)
		s.clearCookie(w, cookieLogin, pathLoginStart, true, http.SameSiteLaxMode)
		return
	}
	v := s.sealLogins(ps)
	// Max-Age follows the newest login; older ones carry their own expiry.
	s.setCookie(w, cookieLogin, v, pathLoginCallback, loginLifetime, true, http.SameSiteLaxMode)
	s.setCookie(w, cookieLogin, v, pathLoginStart, loginLifetime, true, http.SameSiteLaxMode)
}

func (s *Server) newLogin() pendingLogin {
	return pendingLogin{
		State:    randomString(32),
		Nonce:    randomString(32),
		Verifier: randomString(32),
		Expires:  s.o.Now().Add(loginLifetime).Unix(),
	}
}

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
