package httpapi

import (
	"fmt"
	"mime"
	"net/http"
	"slices"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/access"
)

// Role sets of the original's @Roles decorators.
var (
	superAdminOnly = []notify.Role{notify.RoleSuperAdmin}
	adminsOnly     = []notify.Role{notify.RoleSuperAdmin, notify.RoleAdmin}
	signedIn       = []notify.Role{notify.RoleSuperAdmin, notify.RoleAdmin, notify.RoleAuthenticatedUser}
	// notAdmins is login's rule: a request that is already an admin has
	// no business logging in (the original refuses it with 403).
	notAdmins = []notify.Role{notify.RoleAnonymous, notify.RoleAuthenticatedUser}
)

// param documents one query or path parameter in the OpenAPI document.
type param struct {
	name     string
	in       string // "query" or "path"
	desc     string
	array    bool
	required bool
}

// route is one operation of the API.
type route struct {
	method string
	// path is relative to restApiRoot, in ServeMux form:
	// "/subscriptions/{id}/verify".
	path string
	// roles may call it; nil means everyone, anonymous included.
	roles   []notify.Role
	tag     string // OpenAPI tag: the API area
	summary string
	// status is the success status, for the document (200 if 0).
	status int
	// body names the request body schema ("" when there is none). A
	// route with a body takes only application/json (415 otherwise), as
	// NotifyBC's clients send it: a browser can send a text/plain or form
	// body to any site without asking, but not a JSON one.
	body string
	// forms: the route also takes a form body (the Swift webhook, which
	// a gateway posts, and which trusts only the key in its body).
	forms bool
	// response names the response schema: a record name, "[]record",
	// "count", "text" or "" (no body).
	response string
	params   []param
	h        http.HandlerFunc
}

// handle registers r: the role guard first, then the handler.
func (s *Server) handle(r route) {
	s.routes = append(s.routes, r)
	h := r.h
	roles := r.roles
	pattern := r.method + " " + s.root + r.path
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setRoute(req, pattern)
		who := access.Caller(req.Context())
		if roles != nil && !slices.Contains(roles, who.Role) {
			writeError(w, req, errForbiddenResource)
			return
		}
		if r.body != "" && hasBody(req) {
			if err := checkContentType(req, r.forms); err != nil {
				writeError(w, req, err)
				return
			}
		}
		if !access.IsAdmin(who) && req.Body != nil && s.maxBody > MaxPublicBodyBytes {
			req.Body = http.MaxBytesReader(w, req.Body, MaxPublicBodyBytes)
		}
		h(w, req)
	}))
}

// hasBody reports whether req says it carries a body: a Content-Length
// above 0, or a chunked one (-1). An empty body is read as {}, whatever its
// type, as NotifyBC does.
func hasBody(req *http.Request) bool { return req.ContentLength != 0 }

// checkContentType refuses a body that is not JSON (or, with forms, an
// URL-encoded form): 415, naming the type to send. Parameters such as
// charset are allowed.
func checkContentType(req *http.Request, forms bool) error {
	ct := req.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	switch {
	case err == nil && mt == "application/json":
		return nil
	case err == nil && forms && mt == formType:
		return nil
	case forms:
		return httpError(http.StatusUnsupportedMediaType, fmt.Sprintf("the request body must be application/json or %s (Content-Type is %q)", formType, ct))
	}
	return httpError(http.StatusUnsupportedMediaType, fmt.Sprintf("the request body must be application/json (Content-Type is %q)", ct))
}

const formType = "application/x-www-form-urlencoded"

// MaxPublicBodyBytes bounds the bodies of callers who are not
// administrators: 100 KB, the original's limit for everyone. What they
// write (a subscription's data, above all) is read again by every
// broadcast to their service, a thousand subscribers at a time.
const MaxPublicBodyBytes = 100 << 10

// Common parameter documentation.
var (
	pathID      = param{name: "id", in: "path", required: true}
	filterParam = param{name: "filter", in: "query", desc: `JSON {"where":…,"fields":…,"order":…,"skip":…,"limit":…}; where uses $-prefixed MongoDB query operators; also filter[where][field]=value`}
	whereParam  = param{name: "where", in: "query", desc: "JSON MongoDB query ($-prefixed operators); also where[field]=value"}
)
