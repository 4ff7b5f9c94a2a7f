package httpapi_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// signedCSRF is the shape of a CSRF token: nonce, access MAC, refresh MAC.
var signedCSRF = regexp.MustCompile(`^[0-9a-f]{32}\.[0-9a-f]{32}\.[0-9a-f]{32}$`)

// legacyCSRF is a token of the format before tokens were signed.
const legacyCSRF = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// session is one browser login's cookies, to be sent by hand so that a
// test can mix them as an attacker would.
type session struct{ access, refresh, csrf string }

func (h *harness) session(c *http.Client) session {
	return session{
		access:  h.cookie(c, "/", "access_token"),
		refresh: h.cookie(c, "/api/auth/refresh", "refresh_token"),
		csrf:    h.cookie(c, "/", "csrf_token"),
	}
}

func csrfHeader(tok string) http.Header { return http.Header{"X-Csrf-Token": {tok}} }

// flip changes the hex digit at i of a token.
func flip(tok string, i int) string {
	d := byte('0')
	if tok[i] == '0' {
		d = '1'
	}
	return tok[:i] + string(d) + tok[i+1:]
}

// flipLast changes the last digit of a token: its refresh MAC.
func flipLast(tok string) string { return flip(tok, len(tok)-1) }

// flipAccessMAC changes a digit of a token's access MAC.
func flipAccessMAC(tok string) string { return flip(tok, 33) }

// The CSRF token is signed for the login it was issued to. A planted
// cookie with the same value in the header (a sibling subdomain can write
// cookies for the platform's host) passed the plain double-submit check;
// it must not pass now, nor a token taken from another session.
func TestCSRFTokenIsBoundToTheSession(t *testing.T) {
	w := newWorld(t)
	ada1, bob := w.session(w.admin), w.session(w.member)
	ada2 := w.session(w.login(ada)) // the same user, another login
	if !signedCSRF.MatchString(ada1.csrf) {
		t.Fatalf("csrf_token %q is not signed", ada1.csrf)
	}
	parts := strings.Split(ada1.csrf, ".")
	write := func(access, csrfCookie string, header http.Header) *http.Response {
		return w.send("POST", "/test/authenticated", "access_token="+access+"; csrf_token="+csrfCookie, header)
	}
	cases := []struct {
		name   string
		access string
		cookie string // the Cookie header after access_token
		header http.Header
		status int
	}{
		{"the session's own token passes", ada1.access, "csrf_token=" + ada1.csrf, csrfHeader(ada1.csrf), 200},
		{"an attacker-chosen plain token in cookie and header is refused", ada1.access, "csrf_token=" + legacyCSRF, csrfHeader(legacyCSRF), 403},
		{"an attacker-chosen token of the signed shape is refused", ada1.access, "csrf_token=" + strings.Repeat("a", 32) + "." + strings.Repeat("b", 32) + "." + strings.Repeat("c", 32), csrfHeader(strings.Repeat("a", 32) + "." + strings.Repeat("b", 32) + "." + strings.Repeat("c", 32)), 403},
		{"another user's token in cookie and header is refused", ada1.access, "csrf_token=" + bob.csrf, csrfHeader(bob.csrf), 403},
		{"the same user's token from another login is refused", ada1.access, "csrf_token=" + ada2.csrf, csrfHeader(ada2.csrf), 403},
		{"a token with one digit of its access MAC changed is refused", ada1.access, "csrf_token=" + flipAccessMAC(ada1.csrf), csrfHeader(flipAccessMAC(ada1.csrf)), 403},
		{"a token with one digit of its nonce changed is refused", ada1.access, "csrf_token=" + flip(ada1.csrf, 0), csrfHeader(flip(ada1.csrf, 0)), 403},
		{"the access MAC taken for the refresh MAC is refused", ada1.access, "csrf_token=" + parts[0] + "." + parts[2] + "." + parts[1], csrfHeader(parts[0] + "." + parts[2] + "." + parts[1]), 403},
		{"the header alone, without the cookie, is refused", ada1.access, "", csrfHeader(ada1.csrf), 403},
		{"two csrf_token cookies are refused, the right one first", ada1.access, "csrf_token=" + ada1.csrf + "; csrf_token=" + legacyCSRF, csrfHeader(ada1.csrf), 403},
		{"two csrf_token cookies are refused, the right one second", ada1.access, "csrf_token=" + legacyCSRF + "; csrf_token=" + ada1.csrf, csrfHeader(ada1.csrf), 403},
		{"two equal csrf_token cookies are refused", ada1.access, "csrf_token=" + ada1.csrf + "; csrf_token=" + ada1.csrf, csrfHeader(ada1.csrf), 403},
		{"the header name in lower case is the same header", ada1.access, "csrf_token=" + ada1.csrf, http.Header{"x-csrf-token": {ada1.csrf}}, 200},
		{"the header name in upper case is the same header", ada1.access, "csrf_token=" + ada1.csrf, http.Header{"X-CSRF-TOKEN": {ada1.csrf}}, 200},
		{"X_CSRF_Token (underscores) is another header", ada1.access, "csrf_token=" + ada1.csrf, http.Header{"X_CSRF_Token": {ada1.csrf}}, 403},
		{"the token twice in one header line is refused", ada1.access, "csrf_token=" + ada1.csrf, csrfHeader(ada1.csrf + ", " + ada1.csrf), 403},
		{"the token in two header lines is refused", ada1.access, "csrf_token=" + ada1.csrf, http.Header{"X-Csrf-Token": {ada1.csrf, ada1.csrf}}, 403},
		{"the token in two header lines of different case is refused", ada1.access, "csrf_token=" + ada1.csrf, http.Header{"X-Csrf-Token": {ada1.csrf}, "x-csrf-token": {ada1.csrf}}, 403},
		{"a 4 KiB token is refused", ada1.access, "csrf_token=" + strings.Repeat("a", 4096), csrfHeader(strings.Repeat("a", 4096)), 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cookie := "access_token=" + tc.access
			if tc.cookie != "" {
				cookie += "; " + tc.cookie
			}
			resp := w.send("POST", "/test/authenticated", cookie, tc.header)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %s, want %d", resp.Status, tc.status)
			}
		})
	}
	t.Run("Bearer and API-key writes stay exempt", func(t *testing.T) {
		if resp := w.send("POST", "/test/authenticated", "", http.Header{"Authorization": {"Bearer " + ada1.access}}); resp.StatusCode != 200 {
			t.Errorf("Bearer: %s", resp.Status)
		}
		if resp := w.send("POST", "/test/any", "", http.Header{"X-Api-Key": {w.key}}); resp.StatusCode != 200 {
			t.Errorf("API key: %s", resp.Status)
		}
	})
	t.Run("the refresh refuses a token of another session", func(t *testing.T) {
		for name, tok := range map[string]string{"planted": legacyCSRF, "another user's": bob.csrf, "another login's": ada2.csrf} {
			if resp := w.send("POST", "/api/auth/refresh", "refresh_token="+ada1.refresh+"; csrf_token="+tok, csrfHeader(tok)); resp.StatusCode != 403 {
				t.Errorf("%s token: %s", name, resp.Status)
			}
		}
	})
	t.Run("a header differing from the cookie is refused", func(t *testing.T) {
		if resp := write(ada1.access, ada1.csrf, csrfHeader(ada2.csrf)); resp.StatusCode != 403 {
			t.Errorf("%s", resp.Status)
		}
	})
}

// The legitimate flow keeps working, with a provider that rotates refresh
// tokens and one that does not: each refresh brings a token signed for the
// new access token (and refresh token), and the old one stops working.
func TestCSRFAcrossLoginWriteRefreshWrite(t *testing.T) {
	for _, rotate := range []bool{true, false} {
		name := map[bool]string{true: "rotating refresh tokens", false: "refresh token kept"}[rotate]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.idp.RotateRefresh = rotate
			c := h.login(ada)
			write := func(c *http.Client, csrf string) int {
				return h.do(c, request{method: "POST", path: "/test/authenticated", header: map[string]string{"X-CSRF-Token": csrf}}).StatusCode
			}
			if st := write(c, h.cookie(c, "/", "csrf_token")); st != 200 {
				t.Fatalf("write after login: %d", st)
			}
			old := h.session(c)
			for i := 1; i <= 2; i++ {
				resp := h.do(c, request{method: "POST", path: "/api/auth/refresh", header: map[string]string{"X-CSRF-Token": h.cookie(c, "/", "csrf_token")}})
				if resp.StatusCode != 200 {
					t.Fatalf("refresh %d: %s", i, resp.Status)
				}
				if tok := h.cookie(c, "/", "csrf_token"); !signedCSRF.MatchString(tok) {
					t.Fatalf("refresh %d: csrf_token %q", i, tok)
				}
				if st := write(c, h.cookie(c, "/", "csrf_token")); st != 200 {
					t.Fatalf("write after refresh %d: %d", i, st)
				}
			}
			now := h.session(c)
			if now.csrf == old.csrf || now.access == old.access {
				t.Fatal("refresh renewed neither the CSRF token nor the access token")
			}
			t.Run("the token from before the refresh no longer passes with the new access token", func(t *testing.T) {
				if resp := h.send("POST", "/test/authenticated", "access_token="+now.access+"; csrf_token="+old.csrf, csrfHeader(old.csrf)); resp.StatusCode != 403 {
					t.Fatalf("%s", resp.Status)
				}
			})
			t.Run("the refresh is checked against the refresh cookie alone once the access cookie has expired", func(t *testing.T) {
				if resp := h.send("POST", "/api/auth/refresh", "refresh_token="+now.refresh+"; csrf_token="+flipLast(now.csrf), csrfHeader(flipLast(now.csrf))); resp.StatusCode != 403 {
					t.Fatalf("tampered token: %s", resp.Status)
				}
				if resp := h.send("POST", "/api/auth/refresh", "refresh_token="+now.refresh+"; csrf_token="+now.csrf, csrfHeader(now.csrf)); resp.StatusCode != 200 {
					t.Fatalf("%s", resp.Status)
				}
			})
		})
	}
}

// A browser that still holds a token from before the upgrade (unsigned,
// 64 hex digits) cannot write with it; its next refresh from the
// platform's own origin exchanges it for a signed one, and writes work
// again. From anywhere else the old token is refused at the refresh too.
func TestCSRFTokenFromBeforeTheUpgrade(t *testing.T) {
	h := newHarness(t)
	s := h.session(h.login(ada))
	cookie := "access_token=" + s.access + "; csrf_token=" + legacyCSRF
	if resp := h.send("POST", "/test/authenticated", cookie, csrfHeader(legacyCSRF)); resp.StatusCode != 403 {
		t.Fatalf("write with the old token: %s", resp.Status)
	}
	refresh := func(fetchSite string) *http.Response {
		hdr := csrfHeader(legacyCSRF)
		if fetchSite != "" {
			hdr["Sec-Fetch-Site"] = []string{fetchSite}
		}
		return h.send("POST", "/api/auth/refresh", "refresh_token="+s.refresh+"; csrf_token="+legacyCSRF, hdr)
	}
	for _, site := range []string{"", "same-site", "cross-site", "none"} {
		if resp := refresh(site); resp.StatusCode != 403 {
			t.Errorf("refresh with the old token, Sec-Fetch-Site %q: %s", site, resp.Status)
		}
	}
	if resp := h.send("POST", "/api/auth/refresh", "refresh_token="+s.refresh+"; csrf_token="+legacyCSRF, http.Header{"X-Csrf-Token": {strings.ToUpper(legacyCSRF[:63]) + "0"}, "Sec-Fetch-Site": {"same-origin"}}); resp.StatusCode != 403 {
		t.Errorf("old-format header differing from the cookie: %s", resp.Status)
	}
	resp := refresh("same-origin")
	if resp.StatusCode != 200 {
		t.Fatalf("refresh from the platform's origin: %s", resp.Status)
	}
	set := setCookies(resp)
	access, csrf := set["access_token"][0].Value, set["csrf_token"][0].Value
	if !signedCSRF.MatchString(csrf) {
		t.Fatalf("new csrf_token %q is not signed", csrf)
	}
	if resp := h.send("POST", "/test/authenticated", "access_token="+access+"; csrf_token="+csrf, csrfHeader(csrf)); resp.StatusCode != 200 {
		t.Fatalf("write with the exchanged token: %s", resp.Status)
	}
}

// Several cookies of one name are refused rather than resolved: net/http's
// r.Cookie returns the first, and browsers send first the one with the
// longest path, which is the one another site under the same domain can
// plant (cookie tossing) to have a victim act in a session of its choosing.
func TestSeveralAuthCookiesOfOneNameAreRefused(t *testing.T) {
	w := newWorld(t)
	ada1, bob := w.session(w.admin), w.session(w.member)
	cases := []struct {
		name, method, path, cookie string
		header                     http.Header
		status                     int
	}{
		{"two access_token cookies on a read", "GET", "/test/authenticated", "access_token=" + bob.access + "; access_token=" + ada1.access, nil, 401},
		{"two access_token cookies on a write with the first one's token", "POST", "/test/authenticated", "access_token=" + bob.access + "; access_token=" + ada1.access + "; csrf_token=" + bob.csrf, csrfHeader(bob.csrf), 401},
		{"the same access_token twice", "GET", "/test/authenticated", "access_token=" + ada1.access + "; access_token=" + ada1.access, nil, 401},
		{"two refresh_token cookies at the refresh", "POST", "/api/auth/refresh", "refresh_token=" + bob.refresh + "; refresh_token=" + ada1.refresh + "; csrf_token=" + bob.csrf, csrfHeader(bob.csrf), 401},
		{"one access_token cookie still works", "GET", "/test/authenticated", "access_token=" + ada1.access, nil, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if resp := w.send(tc.method, tc.path, tc.cookie, tc.header); resp.StatusCode != tc.status {
				t.Fatalf("status %s, want %d", resp.Status, tc.status)
			}
		})
	}
}

// A credential header given twice is refused, not resolved by taking the
// first line: a proxy in front may have read the last.
func TestCredentialHeadersGivenTwiceAreRefused(t *testing.T) {
	w := newWorld(t)
	bearer := "Bearer " + w.adminToken
	cases := []struct {
		name   string
		cookie string
		header http.Header
		status int
	}{
		{"two X-API-Key lines, the valid key first", "", http.Header{"X-Api-Key": {w.key, "gk_other"}}, 401},
		{"two X-API-Key lines, the valid key second", "", http.Header{"X-Api-Key": {"gk_other", w.key}}, 401},
		{"two X-API-Key lines, an empty one first", "", http.Header{"X-Api-Key": {"", w.key}}, 401},
		{"two X-API-Key lines in different case", "", http.Header{"X-Api-Key": {w.key}, "x-api-key": {w.key}}, 401},
		{"one X-API-Key line still works", "", http.Header{"X-Api-Key": {w.key}}, 200},
		{"two Authorization lines", "", http.Header{"Authorization": {bearer, "Bearer x"}}, 401},
		{"the same Authorization twice", "", http.Header{"Authorization": {bearer, bearer}}, 401},
		{"one Authorization line still works", "", http.Header{"Authorization": {bearer}}, 200},
		{"two Authorization lines beside the cookie that authenticates are not used", "access_token=" + w.adminToken, http.Header{"Authorization": {"Bearer x", "Bearer y"}}, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if resp := w.send("GET", "/test/any", tc.cookie, tc.header); resp.StatusCode != tc.status {
				t.Fatalf("status %s, want %d", resp.Status, tc.status)
			}
		})
	}
}

// Header tricks written on the wire, past Go's client: a token folded onto
// a second line (obs-fold), a field name with a space before the colon,
// the header name with a trailing tab. None passes the CSRF check.
func TestCSRFHeaderTricksOnTheWire(t *testing.T) {
	w := newWorld(t)
	s := w.session(w.admin)
	host := strings.TrimPrefix(w.srv.URL, "http://")
	cases := []struct {
		name    string
		csrf    string // the raw header line(s) carrying the token
		allowed []int
	}{
		{"the plain header passes (control)", "X-CSRF-Token: " + s.csrf + "\r\n", []int{200}},
		{"the token folded onto a continuation line", "X-CSRF-Token: junk\r\n " + s.csrf + "\r\n", []int{400, 403}},
		{"a space before the colon", "X-CSRF-Token : " + s.csrf + "\r\n", []int{400, 403}},
		{"a NUL inside the value", "X-CSRF-Token: " + s.csrf + "\x00\r\n", []int{400, 403}},
		{"the token twice, once in lower case", "X-CSRF-Token: " + s.csrf + "\r\nx-csrf-token: " + s.csrf + "\r\n", []int{403}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /test/authenticated HTTP/1.1\r\nHost: %s\r\nCookie: access_token=%s; csrf_token=%s\r\n%sContent-Length: 0\r\nConnection: close\r\n\r\n", host, s.access, s.csrf, tc.csrf)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if !slices.Contains(tc.allowed, resp.StatusCode) {
				t.Fatalf("status %s, want one of %v", resp.Status, tc.allowed)
			}
		})
	}
}
