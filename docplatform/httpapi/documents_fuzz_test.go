package httpapi_test

import (
	"mime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/govkit/govkit/docplatform/httpapi"
)

// Whatever a client sends as a file name, the stored name is one path
// element of valid UTF-8 without control characters, at most 255 bytes,
// never empty or hidden; and the download header made from it parses back
// to exactly that name.
func FuzzFileName(f *testing.F) {
	for _, s := range []string{"scan.pdf", "../../etc/passwd", `C:\x\y.doc`, "a\x00b", "Résumé.pdf", "\u202eexe.pdf", "..", "", "\xff\xfe", `a"b\c;d=e.txt`, "x%20y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		name := httpapi.SanitizeFileName(in)
		switch {
		case name == "", len(name) > 255, !utf8.ValidString(name), strings.ContainsAny(name, `/\`), strings.HasPrefix(name, "."):
			t.Fatalf("%q → %q", in, name)
		}
		for _, r := range name {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("%q → %q keeps %U", in, name, r)
			}
		}
		if httpapi.SanitizeFileName(name) != name {
			t.Fatalf("not idempotent: %q → %q → %q", in, name, httpapi.SanitizeFileName(name))
		}
		disp, params, err := mime.ParseMediaType(httpapi.ContentDisposition(name))
		if err != nil || disp != "attachment" || params["filename"] != name {
			t.Fatalf("%q: header %q parses to %q %v (%v)", name, httpapi.ContentDisposition(name), disp, params, err)
		}
	})
}
