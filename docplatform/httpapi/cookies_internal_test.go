package httpapi

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// checkNamedCookie compares namedCookie with net/http's CookiesNamed on
// the same Cookie header lines.
func checkNamedCookie(t *testing.T, lines []string) {
	t.Helper()
	r := &http.Request{Header: http.Header{"Cookie": lines}}
	want := r.CookiesNamed(cookieAccess)
	got, n := namedCookie(r.Header, cookieAccess)
	if n != len(want) || (n > 0 && got != want[0].Value) || (n == 0 && got != "") {
		var first string
		if len(want) > 0 {
			first = want[0].Value
		}
		t.Fatalf("lines %q: namedCookie %q ×%d, CookiesNamed %q ×%d", lines, got, n, first, len(want))
	}
}

// namedCookie reads the access cookie exactly as net/http does: the same
// cookies found, the same value, on hand-picked and on random headers.
func TestNamedCookieAgreesWithNetHTTP(t *testing.T) {
	for _, lines := range [][]string{
		nil,
		{""},
		{"access_token=abc"},
		{"  access_token = abc ; csrf_token=x"},
		{"access_token=\"abc\""},
		{"access_token=\""},
		{"access_token=\"\""},
		{"access_token=a\\b"},
		{"access_token=a\"b"},
		{"access_token=a b,c"},
		{"access_token=caf\xc3\xa9"},
		{"access_token=\x7f"},
		{"access_token"},
		{"access_token="},
		{"access_token=a;access_token=b"},
		{"access_token=a", "access_token=b"},
		{"access_token=bad\\", "access_token=good"},
		{"x=1; Access_token=a"},
		{"access_token\t=\tabc\t"},
		{"access_token=a=b=c"},
		{";;; access_token=a ;;"},
		{"access_token=a; " + strings.Repeat("x=1;", 2999)},
		{"access_token=a; " + strings.Repeat("x=1;", 2998)},
		{"access_token=a; " + strings.Repeat(";", 3000)},
	} {
		checkNamedCookie(t, lines)
	}
	// Random headers from the pieces that matter: names near the access
	// cookie's, separators, spaces, quotes and bytes net/http refuses.
	pieces := []string{"access_token", "access_token=", "access_tokens", "access", "=", ";", "; ", " ", "\t", "\"", "\\", "a", "b1", ",", "\x00", "\x7f", "\xff", "csrf_token=x"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		lines := make([]string, 1+rng.IntN(2))
		for i := range lines {
			var b strings.Builder
			for range rng.IntN(12) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			lines[i] = b.String()
		}
		checkNamedCookie(t, lines)
	}
}

func FuzzNamedCookie(f *testing.F) {
	f.Add("access_token=abc; csrf_token=x", "")
	f.Add("access_token=\"a b\"", "access_token=c")
	f.Add(" access_token = a\\b ;access_token=d", "x")
	f.Fuzz(func(t *testing.T, a, b string) {
		checkNamedCookie(t, []string{a})
		checkNamedCookie(t, []string{a, b})
	})
}
