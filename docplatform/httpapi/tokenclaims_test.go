package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform"
)

// send makes one request over real HTTP with exactly the Cookie header and
// header fields given (field names as written, not canonicalised).
func (h *harness) send(method, path, cookie string, header http.Header) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url(path), nil)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	if cookie != "" {
		req.Header["Cookie"] = []string{cookie}
	}
	resp, err := noRedirect(nil).Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// appendMember adds a member at the end of a JSON object, where
// encoding/json's last-one-wins would let it override an earlier one.
func appendMember(object []byte, member string) []byte {
	return []byte(strings.TrimSuffix(string(object), "}") + "," + member + "}")
}

// Tokens the provider signed are read by their exact claim names: a claim
// "Sub" (a provider that lets users add attributes to their tokens signs
// whatever they chose) does not make the request act as another user, and
// a claim named twice is refused.
func TestTokenClaimsAreReadByExactNames(t *testing.T) {
	w := newWorld(t)
	header := []byte(`{"alg":"RS256","kid":"` + w.idp.KeyID + `","typ":"JWT"}`)
	bobClaims, _ := json.Marshal(w.idp.AccessClaims(bob.Subject))
	whoAmI := func(token string) (int, string) {
		resp := w.send("GET", "/test/authenticated", "", http.Header{"Authorization": {"Bearer " + token}})
		if resp.StatusCode != 200 {
			return resp.StatusCode, ""
		}
		var id docplatform.Identity
		readJSON(t, resp, &id)
		return 200, id.UserID
	}
	cases := []struct {
		name    string
		payload []byte
		status  int
		user    string
	}{
		{"Sub after sub does not make bob ada", appendMember(bobClaims, `"Sub":"`+ada.Subject+`"`), 200, bob.Subject},
		{"SUB after sub does not make bob ada", appendMember(bobClaims, `"SUB":"`+ada.Subject+`"`), 200, bob.Subject},
		{"sub twice is 401", appendMember(bobClaims, `"sub":"`+ada.Subject+`"`), 401, ""},
		{"sub twice through a JSON escape is 401", appendMember(bobClaims, `"s\u0075b":"`+ada.Subject+`"`), 401, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, user := whoAmI(w.idp.MintRaw(header, tc.payload))
			if status != tc.status || user != tc.user {
				t.Fatalf("status %d as %q, want %d as %q", status, user, tc.status, tc.user)
			}
		})
	}
	t.Run("a header naming alg twice is 401", func(t *testing.T) {
		if status, _ := whoAmI(w.idp.MintRaw([]byte(`{"alg":"RS256","alg":"RS256","kid":"`+w.idp.KeyID+`"}`), bobClaims)); status != 401 {
			t.Fatalf("status %d", status)
		}
	})
}

// The ID token at the callback decides whose profile is saved: a claim
// spelt in other case does not replace it, and a claim named twice fails
// the login.
func TestIDTokenClaimsAreReadByExactNamesAtLogin(t *testing.T) {
	t.Run("Email after email does not replace the saved profile", func(t *testing.T) {
		h := newHarness(t)
		h.idp.EditIDToken = func(b []byte) []byte {
			return appendMember(appendMember(b, `"Email":"boss@example.org"`), `"Sub":"user-boss"`)
		}
		c := h.login(ada)
		var me struct{ Sub, Email string }
		readJSON(t, h.do(c, request{method: "GET", path: "/api/auth/me"}), &me)
		if me.Sub != ada.Subject || me.Email != ada.Email {
			t.Fatalf("me %+v", me)
		}
		if _, err := h.store.User(t.Context(), "user-boss"); err == nil {
			t.Fatal("a user was saved under the Sub claim")
		}
	})
	t.Run("sub twice fails the login", func(t *testing.T) {
		h := newHarness(t)
		h.idp.EditIDToken = func(b []byte) []byte { return appendMember(b, `"sub":"user-boss"`) }
		h.idp.SetUser(ada)
		c := noRedirect(newJar(t))
		steps := h.stepLogin(c)
		if steps.callback.StatusCode != http.StatusFound || steps.callback.Header.Get("Location") != h.front.URL+"/?auth_error=callback_failed" {
			t.Fatalf("callback: %s to %q", steps.callback.Status, steps.callback.Header.Get("Location"))
		}
	})
}
