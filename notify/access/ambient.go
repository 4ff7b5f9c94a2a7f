package access

import (
	"net/http"
	"net/url"
	"strings"
)

// Ambient reports whether r may be given ambient authority: what a
// request gets for where it comes from rather than for a credential it
// chose to present — the admin-address rule, SiteMinder headers and a
// TLS client certificate (a browser sends the certificate it holds, and
// its SiteMinder session cookie, with any request a page makes).
//
// A request that carries none of a browser's marks is a program's — curl,
// another service calling through a cluster name, NotifyBC's own clients
// — and keeps the original's rules whatever its Host. The marks: a
// Sec-Fetch-* header, an Origin header, or a browser's User-Agent
// ("Mozilla/…") together with Accept-Language, which every browser sends
// with every request and programs do not (curl, Go, Node, axios, Python,
// PowerShell send no Accept-Language). The last is needed because
// browsers send Sec-Fetch-* only to HTTPS and loopback addresses: over
// plain HTTP under any other name — where DNS rebinding always happens —
// a page's GET carries neither Sec-Fetch-* nor Origin.
//
// A browser's request gets ambient authority only when it is same-origin
// and addressed to one of the service's own names:
//
//   - Sec-Fetch-Site, when sent, is same-origin or none (typed, bookmarked);
//   - Origin, when sent, is the service's own: the request's Host, or
//     httpHost's origin;
//   - at least one of the two is sent, so that there is something to go
//     by; and
//   - the Host is one of Hosts (a DNS-rebinding page reaches the service
//     under the attacker's name, and its requests are same-origin to it).
//
// Anything else — a form or image on another site, a page's fetch in
// no-cors mode, a rebinding page — is served as the anonymous request it
// then is, and the console offers a sign-in. That includes the console
// itself over plain HTTP under a name other than localhost (its GETs
// carry no proof of where they come from, exactly like another site's
// image) and in browsers older than Chrome 76, Firefox 90 and Safari 16.4
// (no Sec-Fetch-*): there, administrators sign in.
func (id *Identifier) Ambient(r *http.Request) bool {
	site, browser := "", false
	for k, v := range r.Header {
		if strings.HasPrefix(k, "Sec-Fetch-") {
			browser = true
			if k == "Sec-Fetch-Site" && len(v) > 0 {
				site = v[0]
			}
		}
	}
	origin, hasOrigin := r.Header["Origin"]
	if !browser && !hasOrigin {
		_, lang := r.Header["Accept-Language"]
		if !lang || !strings.HasPrefix(r.Header.Get("User-Agent"), "Mozilla/") {
			return true
		}
	}
	switch site {
	case "same-origin", "none":
	case "":
		if !hasOrigin {
			return false
		}
	default:
		return false
	}
	if hasOrigin && (len(origin) != 1 || !id.ownOrigin(origin[0], r.Host)) {
		return false
	}
	return id.hosts.Own(r.Host)
}

// ownOrigin reports whether origin (an Origin header) is the origin the
// request was addressed to, or httpHost's.
func (id *Identifier) ownOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.User != nil {
		return false // "null", garbage
	}
	o := serializeOrigin(u.Scheme, u.Host)
	return o == serializeOrigin(u.Scheme, host) || (id.hosts.httpOrigin != "" && o == id.hosts.httpOrigin)
}

// Hosts returns the service's own names.
func (id *Identifier) Hosts() *Hosts { return id.hosts }
