package httpapi

import (
	"net/http"
)

// ContentSecurityPolicy is sent with every response: self-hosted scripts,
// styles and images only, no framing, no plugins. A page that needs more
// (the API documentation UI) sets its own before writing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"

// Header names as net/http stores them (canonical form), so reading them
// costs no allocation: Header.Get("X-API-Key") would build "X-Api-Key"
// on every call.
const (
	hdrAPIKey = "X-Api-Key"
	hdrCSRF   = "X-Csrf-Token"
)

// Shared, never-mutated header values: setting them costs no allocation.
var (
	hsts          = []string{"max-age=31536000; includeSubDomains"}
	deny          = []string{"DENY"}
	nosniff       = []string{"nosniff"}
	referrer      = []string{"strict-origin-when-cross-origin"}
	csp           = []string{ContentSecurityPolicy}
	sameOrigin    = []string{"same-origin"}
	noneValue     = []string{"none"}
	trueValue     = []string{"true"}
	varyOrigin    = []string{"Origin"}
	exposeHeaders = []string{"Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset"}
	allowMethods  = []string{"GET, POST, PUT, PATCH, DELETE"}
	allowHeaders  = []string{"Content-Type, X-CSRF-Token, X-API-Key, Authorization"}
	preflightAge  = []string{"600"}
	jsonType      = []string{"application/json; charset=utf-8"}
	noStore       = []string{"no-store"}
)

// securityHeaders sets the headers every response carries. Go's server
// sends no X-Powered-By, and nothing here adds one.
func securityHeaders(h http.Header) {
	h["Strict-Transport-Security"] = hsts
	h["X-Frame-Options"] = deny
	h["X-Content-Type-Options"] = nosniff
	h["Referrer-Policy"] = referrer
	h["Content-Security-Policy"] = csp
	h["Cross-Origin-Opener-Policy"] = sameOrigin
	h["X-Permitted-Cross-Domain-Policies"] = noneValue
}

// cors lets the frontend's origin, and only it, call with credentials.
func (s *Server) cors(h http.Header, r *http.Request) {
	h["Vary"] = varyOrigin
	origin := r.Header.Get("Origin")
	if origin == "" || origin != s.frontendOrigin {
		return
	}
	h["Access-Control-Allow-Origin"] = r.Header["Origin"][:1:1]
	h["Access-Control-Allow-Credentials"] = trueValue
	h["Access-Control-Expose-Headers"] = exposeHeaders
}

// preflight answers CORS preflight requests. Other origins get no CORS
// headers, so their browsers refuse the real request.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") == s.frontendOrigin && r.Header.Get("Access-Control-Request-Method") != "" {
		h := w.Header()
		h["Access-Control-Allow-Methods"] = allowMethods
		h["Access-Control-Allow-Headers"] = allowHeaders
		h["Access-Control-Max-Age"] = preflightAge
	}
	w.WriteHeader(http.StatusNoContent)
}
