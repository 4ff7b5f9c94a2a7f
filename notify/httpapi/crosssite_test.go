package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// What a browser adds to the requests a page makes. A page on another
// site cannot choose these: the browser writes them.
var (
	// a form, image or no-cors fetch from a page on another site
	crossSite = []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Origin", "http://evil.example"}
	// the same from a page on another port of this host
	sameSite = []string{"Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "cors", "Origin", "http://127.0.0.1:1"}
	// an <img> elsewhere: no Origin on a GET
	crossSiteImage = []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", "image"}
	// a browser without Sec-Fetch-* (Safari before 16.4) posting a form
	oldBrowserForm = []string{"Origin", "http://evil.example"}
	// the console's own fetches: same-origin (a GET carries no Origin)
	consoleGET = []string{"Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors", "Sec-Fetch-Dest", "empty"}
	// the person typed the address, or followed a bookmark
	typed = []string{"Sec-Fetch-Site", "none", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "document"}
	// any request of a page over plain HTTP under a name other than
	// localhost: browsers send Sec-Fetch-* only to HTTPS and loopback
	// addresses, and a GET carries no Origin
	plainHTTPPage = []string{"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Accept-Language", "en-CA,en;q=0.9"}
)

// consolePOST is a same-origin POST from the console at e's address.
func consolePOST(e *apitest.Env) []string {
	return append(append([]string{}, consoleGET...), "Origin", e.URL)
}

// withHost sends the request with another Host header (a DNS-rebinding
// page: same-origin to the browser, under the attacker's name).
func withHost(h string, headers ...string) []string { return append([]string{"Host", h}, headers...) }

// TestAdminAddressIsNotAmbientForOtherSites reproduces finding 1 of the
// second hostile review over real HTTP: a page that a person on an admin
// address opens must not act with the address's super-admin rights —
// not by a text/plain form POST that signs up an administrator, not by
// an <img> that unsubscribes someone from everything, not by a
// DNS-rebinding page that reads every subscription. Programs (no browser
// marks) and the console itself (same-origin, the service's own name)
// keep the address's rights.
func TestAdminAddressIsNotAmbientForOtherSites(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"allowedHosts": []any{"notify.example.org"}}}})
	signUp := `{"email":"mallory@evil.example","password":"Evil-Admin!1234"}`
	admins := func() int { return len(list(t, e, "/api/administrators")) }

	t.Run("attacks", func(t *testing.T) {
		cases := []struct {
			name    string
			headers []string
			body    string
		}{
			{"a cross-site text/plain POST does not sign up an administrator", append(crossSite, "Content-Type", "text/plain"), signUp},
			{"a cross-site JSON-typed POST (no-cors cannot send one, a CORS one is not answered) does not either", append(crossSite, "Content-Type", "application/json"), signUp},
			{"a same-site page (another port of this host) does not either", append(sameSite, "Content-Type", "application/json"), signUp},
			{"an old browser's form with a foreign Origin does not either", append(oldBrowserForm, "Content-Type", "application/json"), signUp},
			{"a DNS-rebinding page (same-origin, foreign Host) does not either", withHost("rebind.evil.example", append(consoleGET, "Origin", "http://rebind.evil.example", "Content-Type", "application/json")...), signUp},
			{"a null Origin (a sandboxed frame) does not either", []string{"Origin", "null", "Content-Type", "application/json"}, signUp},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				e.Do(t, "POST", "/api/administrators", c.body, c.headers...).Expect(t, http.StatusForbidden)
			})
		}
		if n := admins(); n != 0 {
			t.Fatalf("%d administrators were created", n)
		}

		t.Run("an <img> on another site does not unsubscribe anyone from every service", func(t *testing.T) {
			id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "news", "channel": "email", "userChannelId": "victim@example.com", "state": "confirmed", "unsubscriptionCode": "13579"})["id"].(string)
			seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "roads", "channel": "email", "userChannelId": "victim@example.com", "state": "confirmed"})
			e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe?additionalServices=_all", nil, crossSiteImage...).Expect(t, http.StatusForbidden)
			for _, s := range list(t, e, "/api/subscriptions") {
				if s["state"] != "confirmed" {
					t.Fatalf("subscription %v was unsubscribed", s)
				}
			}
		})
		t.Run("an <img> on another site does not unsubscribe anyone over plain HTTP either", func(t *testing.T) {
			id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "weather", "channel": "email", "userChannelId": "victim2@example.com", "state": "confirmed", "unsubscriptionCode": "97531"})["id"].(string)
			e.Do(t, "GET", "/api/subscriptions/"+id+"/unsubscribe?additionalServices=_all", nil, withHost("notify.example.org", plainHTTPPage...)...).Expect(t, http.StatusForbidden)
			if got := subState(t, e, id); got != "confirmed" {
				t.Fatalf("state %s", got)
			}
		})
		t.Run("a DNS-rebinding page does not read the subscriptions", func(t *testing.T) {
			e.Do(t, "GET", "/api/subscriptions", nil, withHost("rebind.evil.example:3000", consoleGET...)...).Expect(t, http.StatusForbidden)
			e.Do(t, "GET", "/api/subscriptions", nil, withHost("rebind.evil.example:3000", plainHTTPPage...)...).Expect(t, http.StatusForbidden)
			e.Do(t, "GET", "/api/administrators/whoami", nil, withHost("rebind.evil.example", consoleGET...)...).Expect(t, http.StatusOK)
			if m := e.Do(t, "GET", "/api/administrators/whoami", nil, withHost("rebind.evil.example", consoleGET...)...).Map(t); m["role"] != "Anonymous" {
				t.Fatalf("a rebinding page is %v", m)
			}
		})
		t.Run("a cross-site request gets no SiteMinder identity either", func(t *testing.T) {
			m := e.Do(t, "GET", "/api/administrators/whoami", nil, append(apitest.SMUser("bob"), crossSite...)...).Expect(t, http.StatusOK).Map(t)
			if m["role"] != "Anonymous" {
				t.Fatalf("a cross-site request with SiteMinder headers is %v", m)
			}
		})
	})

	t.Run("controls", func(t *testing.T) {
		role := func(headers ...string) string {
			t.Helper()
			return e.Do(t, "GET", "/api/administrators/whoami", nil, headers...).Expect(t, http.StatusOK).Map(t)["role"].(string)
		}
		cases := []struct {
			name    string
			headers []string
			want    string
		}{
			{"curl from an admin address is super admin", nil, "SuperAdmin"},
			{"PowerShell (a Mozilla User-Agent, no Accept-Language) is super admin", []string{"User-Agent", "Mozilla/5.0 (Windows NT; Windows NT 10.0; en-US) WindowsPowerShell/5.1.19041.1"}, "SuperAdmin"},
			{"another service calling through a cluster name is super admin (no browser marks: any Host)", withHost("notify.notify-ns.svc.cluster.local:3000"), "SuperAdmin"},
			{"the console's same-origin fetch is super admin", consoleGET, "SuperAdmin"},
			{"the console's same-origin POST is super admin", consolePOST(e), "SuperAdmin"},
			{"an address typed in the browser is super admin", typed, "SuperAdmin"},
			{"localhost is the service's own name", withHost("localhost:3000", consoleGET...), "SuperAdmin"},
			{"an allowedHosts name is the service's own", withHost("notify.example.org", append(consoleGET, "Origin", "https://notify.example.org")...), "SuperAdmin"},
			{"a SiteMinder user's same-origin request keeps its identity", append(apitest.SMUser("bob"), consoleGET...), "AuthenticatedUser"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if got := role(c.headers...); got != c.want {
					t.Fatalf("role %s, want %s", got, c.want)
				}
			})
		}
		t.Run("the console signs up an administrator", func(t *testing.T) {
			e.Do(t, "POST", "/api/administrators", `{"email":"ops@example.org","password":"0ps-Admin!1234"}`, append(consolePOST(e), "Content-Type", "application/json")...).Expect(t, http.StatusOK)
		})
		t.Run("curl signs up an administrator with JSON and a charset", func(t *testing.T) {
			e.Do(t, "POST", "/api/administrators", `{"email":"ops2@example.org","password":"0ps-Admin!1234"}`, "Content-Type", "application/json; charset=UTF-8").Expect(t, http.StatusOK)
		})
	})
}

// TestJSONRoutesTakeOnlyJSON: a body a browser may send to any site
// without asking (text/plain, a form) is refused with 415 on the routes
// that read JSON; routes others post forms to keep taking them.
func TestJSONRoutesTakeOnlyJSON(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	sub := `{"serviceName":"news","channel":"email","userChannelId":"a@example.com","state":"confirmed"}`
	for _, ct := range []string{"text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonx", "application/merge-patch+json"} {
		t.Run("a "+strconvQuote(ct)+" body is 415", func(t *testing.T) {
			r := e.Do(t, "POST", "/api/subscriptions", sub, "Content-Type", ct).Expect(t, http.StatusUnsupportedMediaType)
			if m := r.Map(t); !strings.Contains(m["message"].(string), "application/json") {
				t.Fatalf("message %v", m)
			}
		})
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"} {
		t.Run("a "+strconvQuote(ct)+" body is read", func(t *testing.T) {
			e.Do(t, "POST", "/api/subscriptions", sub, "Content-Type", ct).Expect(t, http.StatusOK)
		})
	}
	t.Run("a request without a body needs no type", func(t *testing.T) {
		e.Do(t, "POST", "/api/subscriptions", nil, apitest.Anonymous...).Expect(t, http.StatusBadRequest) // {}: serviceName is required
	})
	t.Run("the RFC 8058 one-click POST is a form, and unsubscribes", func(t *testing.T) {
		id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "news", "channel": "email", "userChannelId": "b@example.com", "state": "confirmed", "unsubscriptionCode": "24680"})["id"].(string)
		e.Do(t, "POST", "/api/subscriptions/"+id+"/unsubscribe?unsubscriptionCode=24680", "List-Unsubscribe=One-Click",
			append(apitest.Anonymous, "Content-Type", "application/x-www-form-urlencoded")...).Expect(t, http.StatusOK)
		if got := subState(t, e, id); got != "deleted" {
			t.Fatalf("state %s", got)
		}
	})
	t.Run("the Swift webhook takes a form, as a gateway posts it", func(t *testing.T) {
		id := seed(t, e, "/api/subscriptions", map[string]any{"serviceName": "news", "channel": "sms", "userChannelId": "2505550199", "state": "confirmed"})["id"].(string)
		form := url.Values{"Reference": {id}, "PhoneNumber": {"12505550199"}, "notifyBCSwiftKey": {"12345"}}.Encode()
		e.Do(t, "POST", "/api/subscriptions/swift", form, append(apitest.Anonymous, "Content-Type", "application/x-www-form-urlencoded")...).Expect(t, http.StatusOK)
		if got := subState(t, e, id); got != "deleted" {
			t.Fatalf("state %s", got)
		}
		e.Do(t, "POST", "/api/subscriptions/swift", "notifyBCSwiftKey=12345", append(apitest.Anonymous, "Content-Type", "text/plain")...).Expect(t, http.StatusUnsupportedMediaType)
	})
}

func subState(t *testing.T, e *apitest.Env, id string) string {
	t.Helper()
	s, _ := sub(t, e, id)["state"].(string)
	return s
}

func strconvQuote(s string) string { return `"` + s + `"` }
