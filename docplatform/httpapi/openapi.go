package httpapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"

	"github.com/govkit/govkit/docplatform"
)

// routeDoc is what the OpenAPI document says about a route beyond its
// method, path and access level.
type routeDoc struct {
	Summary string
	Tag     string
	Body    string // "json", "multipart" or ""
}

// queryParam is a query parameter a route reads; a name ending in "!" is
// required.
type queryParam struct{ name, description string }

// routeQuery lists the query parameters of the routes that read any
// (besides a group id the access level names).
var routeQuery = map[string][]queryParam{
	"GET /api/documents": {
		{"groupId", "only this group (one of the caller's)"}, {"contentType", "sniffed media type, exact"},
		{"q", "file name contains, ignoring case"}, {"createdAfter", "RFC 3339, inclusive"}, {"createdBefore", "RFC 3339, exclusive"},
		{"hasOcr", "true or false"}, {"reviewed", "true or false; hasOcr=true&reviewed=false is the review queue"},
		{"limit", "1-200, default 50"}, {"cursor", "nextCursor of the previous page"},
	},
	"GET /api/workflows":                 {{"groupId", "only this group (one of the caller's)"}},
	"GET /api/groups/{groupId}/requests": {{"status", "PENDING (default), APPROVED, REJECTED or ALL"}},
	"GET /api/membership-requests":       {{"status", "PENDING, APPROVED, REJECTED or ALL (default)"}},
	"GET /api/audit": {
		{"groupId", "only this group"}, {"action", "only this action, e.g. auth.login"}, {"from", "RFC 3339, inclusive"},
		{"to", "RFC 3339, exclusive"}, {"limit", "1-1000, default 100"}, {"before", "nextBefore of the previous page"},
	},
	"GET /api/audit/report": {
		{"from!", "first day, YYYY-MM-DD"}, {"to!", "last day, YYYY-MM-DD (at most 366 days)"},
		{"timeZone", "IANA zone the days are counted in, default UTC"}, {"groupId", "only this group"},
	},
}

// routeDocs describes the routes by "METHOD /pattern". A route missing
// here still appears in the document, with a summary made from its path.
var routeDocs = map[string]routeDoc{
	"GET /api/health":              {"Health: database reachable, provider discovery loaded", "platform", ""},
	"GET /api/auth/login":          {"Start a login (authorization code with PKCE)", "auth", ""},
	"GET /api/auth/callback":       {"Finish a login at the provider's redirect", "auth", ""},
	"GET /api/auth/me":             {"The caller's profile, roles and groups", "auth", ""},
	"POST /api/auth/refresh":       {"Refresh the tokens (needs X-CSRF-Token)", "auth", ""},
	"GET /api/auth/logout":         {"Log out and end the provider session", "auth", ""},
	"GET /api/api-key":             {"The group's API key (prefix only)", "api keys", ""},
	"POST /api/api-key":            {"Create the group's API key (shown once)", "api keys", "json"},
	"DELETE /api/api-key":          {"Delete the group's API key", "api keys", ""},
	"POST /api/api-key/regenerate": {"Replace the group's API key (the old one dies at once)", "api keys", "json"},

	"GET /api/groups":                                         {"My groups with my role", "groups", ""},
	"POST /api/groups":                                        {"Create a group", "groups", "json"},
	"GET /api/groups/{groupId}":                               {"A group", "groups", ""},
	"PUT /api/groups/{groupId}":                               {"Change a group's settings", "groups", "json"},
	"DELETE /api/groups/{groupId}":                            {"Soft-delete a group", "groups", ""},
	"GET /api/groups/{groupId}/members":                       {"A group's members", "groups", ""},
	"PUT /api/groups/{groupId}/members/{userId}":              {"Set a user's role in the group (adds the user if needed)", "groups", "json"},
	"DELETE /api/groups/{groupId}/members/{userId}":           {"Remove a member", "groups", ""},
	"POST /api/groups/{groupId}/requests":                     {"Request membership of a group", "groups", "json"},
	"GET /api/groups/{groupId}/requests":                      {"A group's membership requests", "groups", ""},
	"POST /api/groups/{groupId}/requests/{requestId}/approve": {"Approve a membership request", "groups", ""},
	"POST /api/groups/{groupId}/requests/{requestId}/reject":  {"Reject a membership request", "groups", ""},
	"GET /api/membership-requests":                            {"My membership requests", "groups", ""},
	"GET /api/admin/groups":                                   {"Every live group", "admin", ""},
	"GET /api/admin/users":                                    {"Every user", "admin", ""},
	"POST /api/admin/users/{id}/promote":                      {"Make a user a system admin", "admin", ""},
	"POST /api/admin/users/{id}/demote":                       {"Withdraw a user's system-admin flag", "admin", ""},
	"DELETE /api/admin/users/{id}":                            {"Delete a user", "admin", ""},
	"POST /api/documents":                                     {"Upload a document (multipart part \"file\")", "documents", "multipart"},
	"GET /api/documents":                                      {"List documents of my groups, newest first", "documents", ""},
	"GET /api/documents/{id}":                                 {"A document's metadata", "documents", ""},
	"GET /api/documents/{id}/content":                         {"Download a document", "documents", ""},
	"DELETE /api/documents/{id}":                              {"Delete a document", "documents", ""},
	"PUT /api/documents/{id}/ocr":                             {"Write the document's OCR result (group API key)", "ocr", "json"},
	"GET /api/documents/{id}/ocr":                             {"The document's OCR result", "ocr", ""},
	"GET /api/workflows":                                      {"Workflows of my groups", "workflows", ""},
	"POST /api/workflows":                                     {"Create a workflow with version 1", "workflows", "json"},
	"GET /api/workflows/{id}":                                 {"A workflow with its latest configuration", "workflows", ""},
	"DELETE /api/workflows/{id}":                              {"Delete a workflow and its versions", "workflows", ""},
	"GET /api/workflows/{id}/versions":                        {"A workflow's versions, newest first", "workflows", ""},
	"POST /api/workflows/{id}/versions":                       {"Save a new immutable version", "workflows", "json"},
	"GET /api/workflows/{id}/versions/{version}":              {"One version of a workflow", "workflows", ""},
	"POST /api/documents/{id}/reviews":                        {"Start a review session (locks the document)", "reviews", ""},
	"GET /api/documents/{id}/reviews":                         {"A document's review sessions", "reviews", ""},
	"GET /api/reviews/{sessionId}":                            {"A review session with its corrections", "reviews", ""},
	"POST /api/reviews/{sessionId}/corrections":               {"Submit field corrections", "reviews", "json"},
	"POST /api/reviews/{sessionId}/complete":                  {"Complete a review (releases the lock)", "reviews", ""},
	"POST /api/reviews/{sessionId}/abandon":                   {"Abandon a review (releases the lock)", "reviews", ""},
	"GET /api/audit":                                          {"The audit log, newest first", "audit", ""},
	"GET /api/audit/report":                                   {"The audit report for a date range (date form)", "audit", ""},
	"GET /api/openapi.json":                                   {"This document", "platform", ""},
	"GET /":                                                   {"The web UI: its page at every path outside /api/, and its files", "platform", ""},
	"GET /api/docs":                                           {"The API documentation page", "platform", ""},
	"GET /api/docs/{file}":                                    {"The documentation page's assets", "platform", ""},
}

var pathParam = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(\.\.\.)?\}`)

// OpenAPI returns the OpenAPI 3.1 document of the server's routes, built
// from the route table so that it cannot drift from it. Each operation
// carries its access level in x-access-level (and, for group routes, where
// the group id comes from and the least role) and the security schemes it
// admits: the access_token cookie, a bearer token, the X-API-Key header.
// Public routes have an empty security list.
func (s *Server) OpenAPI() map[string]any {
	paths := map[string]map[string]any{}
	bodies := &bodySchemas{components: map[string]any{}}
	for _, rt := range s.routes {
		if rt.Method == "" || rt.Method == "OPTIONS" {
			continue
		}
		p := pathParam.ReplaceAllString(rt.Pattern, "{$1}")
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(rt.Method)] = operation(rt, bodies)
	}
	components := map[string]any{
		"Error": map[string]any{
			"type":                 "object",
			"required":             []any{"statusCode", "message", "error"},
			"additionalProperties": false,
			"properties": map[string]any{
				"statusCode": map[string]any{"type": "integer"},
				"message":    map[string]any{"type": "string", "description": "What was wrong; for bad input it names the field and the rule"},
				"error":      map[string]any{"type": "string", "description": "The status's reason phrase"},
			},
		},
	}
	for name, schema := range bodies.components {
		components[name] = schema
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "govkit document platform API",
			"version":     "1.0.0",
			"description": "Every operation names its access level (x-access-level). Cookie-authenticated POST, PUT, PATCH and DELETE requests need the X-CSRF-Token header equal to the csrf_token cookie. Errors are JSON {statusCode, message, error}.",
		},
		"servers": []any{map[string]any{"url": "/"}},
		"paths":   paths,
		"components": map[string]any{
			"securitySchemes": map[string]any{
				"cookie": map[string]any{"type": "apiKey", "in": "cookie", "name": cookieAccess, "description": "The access_token cookie set at login"},
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "An access token of the identity provider"},
				"apiKey": map[string]any{"type": "apiKey", "in": "header", "name": "X-API-Key", "description": "A group's API key; acts as a MEMBER of that group"},
			},
			"schemas": components,
		},
	}
}

func operation(rt Route, bodies *bodySchemas) map[string]any {
	key := rt.Method + " " + rt.Pattern
	doc, ok := routeDocs[key]
	if !ok {
		doc = routeDoc{Summary: key, Tag: "other"}
	}
	a := rt.Access
	op := map[string]any{
		"operationId":    operationID(rt),
		"summary":        doc.Summary,
		"tags":           []any{doc.Tag},
		"x-access-level": a.Level.String(),
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(rt.Pattern, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": pathSchema(rt.Pattern, m[1])})
	}
	if a.Level == LevelGroup {
		op["x-group-from"] = [...]string{"", "path", "query", "body"}[a.GroupFrom]
		op["x-group-field"] = a.GroupField
		min := a.MinRole
		if min == "" {
			min = docplatform.RoleMember
		}
		op["x-min-role"] = string(min)
		if a.GroupFrom == FromQuery {
			params = append(params, map[string]any{"name": a.GroupField, "in": "query", "required": true, "schema": map[string]any{"type": "string", "format": "uuid"}})
		}
	}
	for _, q := range routeQuery[key] {
		name, required := strings.CutSuffix(q.name, "!")
		schema := map[string]any{"type": "string"}
		if name == "groupId" {
			schema["format"] = "uuid"
		}
		params = append(params, map[string]any{"name": name, "in": "query", "required": required, "description": q.description, "schema": schema})
	}
	write := rt.Method == "POST" || rt.Method == "PUT" || rt.Method == "PATCH" || rt.Method == "DELETE"
	if write && a.Level != LevelPublic {
		params = append(params, map[string]any{"name": "X-CSRF-Token", "in": "header", "required": false,
			"description": "Required when the access_token cookie authenticates the request", "schema": map[string]any{"type": "string"}})
	}
	if params != nil {
		op["parameters"] = params
	}
	switch doc.Body {
	case "json":
		schema := requestBodies[key]
		if schema == nil {
			schema = map[string]any{"type": "object"} // the document test fails on it: describe the body
		}
		op["requestBody"] = map[string]any{"required": !optionalBodies[key], "content": map[string]any{"application/json": map[string]any{"schema": schema}}}
	case "multipart":
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{"multipart/form-data": map[string]any{"schema": map[string]any{
			"type": "object", "required": []any{"file"},
			"properties": map[string]any{"file": map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}},
		}}}}
	}
	security := []any{}
	switch a.Level {
	case LevelPublic:
	case LevelTokenOrAPIKey:
		security = append(security, scheme("cookie"), scheme("bearer"), scheme("apiKey"))
	default:
		security = append(security, scheme("cookie"), scheme("bearer"))
		if a.allowsAPIKey() {
			security = append(security, scheme("apiKey"))
		}
	}
	op["security"] = security
	errRef := map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}
	responses := map[string]any{"default": map[string]any{"description": "Any other error", "content": errRef}}
	for _, r := range responseBodies[key] {
		resp := map[string]any{"description": r.description}
		if c := bodies.content(r); c != nil {
			resp["content"] = c
		}
		responses[r.status] = resp
	}
	if len(responseBodies[key]) == 0 {
		responses["2XX"] = map[string]any{"description": "Success"} // the document test fails on it: describe the answer
	}
	codes := map[string]string{"429": "Rate limit exceeded (Retry-After)"}
	if a.Level != LevelPublic {
		codes["401"] = "No valid credential"
		codes["403"] = "Credential not allowed, not a member, role too low, or CSRF check failed"
	}
	if a.Level == LevelGroup || strings.Contains(rt.Pattern, "{") || rt.Method != "GET" {
		codes["400"] = "Invalid input; the message names the field"
		codes["404"] = "Not found"
	}
	if doc.Body == "multipart" {
		codes["413"] = "The document exceeds the size limit"
	}
	if limitClass := rt.limit; limitClass == limitNone {
		delete(codes, "429")
	}
	for c, d := range codes {
		responses[c] = map[string]any{"description": d, "content": errRef}
	}
	op["responses"] = responses
	return op
}

func scheme(name string) map[string]any { return map[string]any{name: []any{}} }

// operationID is method and path in camel case: getApiDocumentsById.
func operationID(rt Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(rt.Method))
	for _, seg := range strings.Split(strings.Trim(rt.Pattern, "/"), "/") {
		if m := pathParam.FindStringSubmatch(seg); m != nil {
			b.WriteString("By")
			seg = m[1]
		}
		for _, part := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '.' || r == '_' }) {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// openAPI: GET /api/openapi.json.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	b, err := json.MarshalIndent(s.OpenAPI(), "", "  ")
	if err != nil {
		s.internalError(w, r, "openapi", err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(b)
}

// pathSchema is the schema of a path parameter: the platform's own ids are
// UUIDs (anything else is 400 before a lookup), user ids are the identity
// provider's subjects, workflow versions are numbers from 1.
func pathSchema(pattern, name string) map[string]any {
	switch {
	case name == "version":
		return map[string]any{"type": "integer", "minimum": 1}
	case name == "groupId", name == "requestId", name == "sessionId",
		name == "id" && !strings.HasPrefix(pattern, "/api/admin/users/"):
		return map[string]any{"type": "string", "format": "uuid"}
	}
	return map[string]any{"type": "string"}
}
