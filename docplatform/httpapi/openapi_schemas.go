package httpapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/govkit/govkit/event"
)

// The bodies of the OpenAPI document. Responses are described from the
// types the handlers encode (reflection over their JSON tags, in
// components), so a field added to a view shows up in the document by
// itself; the conformance test (openapi_conformance_test.go) checks every
// response the handler tests receive against the document. Request bodies
// are written out by hand beside their rules — lengths, enums, what is
// required — because the handlers decode them into local structs and
// check the rules in code.

// schemas names the types that appear as components, so that responses
// refer to them instead of repeating them.
var schemas = map[reflect.Type]string{
	reflect.TypeFor[groupView]():         "Group",
	reflect.TypeFor[memberView]():        "Member",
	reflect.TypeFor[requestView]():       "MembershipRequest",
	reflect.TypeFor[userView]():          "User",
	reflect.TypeFor[meResponse]():        "Me",
	reflect.TypeFor[meGroup]():           "MeGroup",
	reflect.TypeFor[apiKeyView]():        "APIKey",
	reflect.TypeFor[documentView]():      "Document",
	reflect.TypeFor[ocrView]():           "OCRResult",
	reflect.TypeFor[workflowView]():      "Workflow",
	reflect.TypeFor[versionView]():       "WorkflowVersion",
	reflect.TypeFor[reviewView]():        "ReviewSession",
	reflect.TypeFor[correctionView]():    "Correction",
	reflect.TypeFor[auditView]():         "AuditEntry",
	reflect.TypeFor[reportEntry]():       "AuditReportEntry",
	reflect.TypeFor[reportDay]():         "AuditReportDay",
	reflect.TypeFor[event.Event]():       "Event",
	reflect.TypeFor[healthView]():        "Health",
	reflect.TypeFor[memberRoleView]():    "MemberRole",
	reflect.TypeFor[systemAdminView]():   "SystemAdmin",
	reflect.TypeFor[apiKeyCreatedView](): "APIKeyCreated",
}

// Response shapes the handlers write as maps; the types here exist only
// to describe them (the conformance test holds the two together).
type (
	healthView struct {
		Status            string `json:"status" enum:"ok,degraded,unavailable" doc:"unavailable (503): the database or the provider's discovery is down; degraded (200): another part is"`
		Database          string `json:"database" enum:"up,down"`
		IdentityProvider  string `json:"identityProvider" enum:"up,down"`
		DocumentStorage   string `json:"documentStorage,omitempty" enum:"up,down" doc:"DOCUMENT_STORAGE: uploads and downloads fail while it is down"`
		RateLimitCounters string `json:"rateLimitCounters,omitempty" enum:"up,down" doc:"Redis (REDIS_URL): while it is down each replica counts on its own"`
	}
	memberRoleView struct {
		UserID  string `json:"userId"`
		GroupID string `json:"groupId"`
		Role    string `json:"role" enum:"MEMBER,ADMIN"`
	}
	systemAdminView struct {
		ID            string `json:"id"`
		IsSystemAdmin bool   `json:"isSystemAdmin"`
	}
	apiKeyCreatedView struct {
		APIKey apiKeyView `json:"apiKey"`
		Key    string     `json:"key" doc:"The full key, shown in this response only; send it as X-API-Key"`
	}
)

// fieldDocs describe fields whose meaning the name does not carry.
var fieldDocs = map[string]string{
	"Document.uploadedBy":     "A user id, or apikey:<key id> for a machine client",
	"Document.contentType":    "Sniffed from the bytes, never taken from the client",
	"Document.sha256":         "Hex SHA-256 of the stored bytes",
	"OCRResult.result":        "The engine's result, a JSON object of its own shape (e.g. {\"pages\": 1, \"fields\": {\"name\": {\"value\": \"…\", \"confidence\": 0.97}}})",
	"OCRResult.writtenBy":     "apikey:<key id> of the machine client that wrote it",
	"Workflow.config":         "The latest version's configuration, a JSON object",
	"WorkflowVersion.config":  "The configuration of this version, a JSON object",
	"APIKey.keyPrefix":        "The first characters of the key, to recognise it; the key itself is never shown again",
	"Me.roles":                "Role per group id",
	"Me.expires_in":           "Seconds until the access token expires",
	"AuditEntry.event":        "When it happened, an Event in datetime form",
	"AuditReportDay.counts":   "Entries per action, then per outcome",
	"Group.role":              "The caller's role in the group, when a member",
	"ReviewSession.expiresAt": "When the lock lapses without activity",
}

// bodySchemas builds component schemas while the document is made.
type bodySchemas struct {
	components map[string]any
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// of returns the schema of t's JSON encoding, registering named types as
// components.
func (b *bodySchemas) of(t reflect.Type) map[string]any {
	if name, ok := schemas[t]; ok {
		if _, done := b.components[name]; !done {
			b.components[name] = nil // recursion guard
			b.components[name] = b.build(t, name)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return b.build(t, "")
}

func (b *bodySchemas) build(t reflect.Type, name string) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{"type": "object"}
	case t == reflect.TypeFor[event.Event]():
		return eventSchema()
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Pointer:
		return nullable(b.of(t.Elem()))
	case reflect.Slice:
		elem := t.Elem()
		if elem.Kind() == reflect.Pointer {
			elem = elem.Elem() // the handlers never put nil in a list
		}
		return map[string]any{"type": "array", "items": b.of(elem)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": b.of(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		required := []any{}
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if !f.IsExported() || tag == "-" {
				continue
			}
			key, opts, _ := strings.Cut(tag, ",")
			if key == "" {
				key = f.Name
			}
			s := b.of(f.Type)
			if e := f.Tag.Get("enum"); e != "" {
				s = map[string]any{"type": "string", "enum": toAny(strings.Split(e, ","))}
			}
			doc := f.Tag.Get("doc")
			if d, ok := fieldDocs[name+"."+key]; ok {
				doc = d
			}
			if doc != "" {
				s = withDescription(s, doc)
			}
			props[key] = s
			if !strings.Contains(opts, "omitempty") {
				required = append(required, key)
			}
		}
		sort.Slice(required, func(i, j int) bool { return required[i].(string) < required[j].(string) })
		return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
	}
	panic("openapi: no schema for " + t.String())
}

// nullable allows null beside s.
func nullable(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok && len(s) <= 2 {
		c := map[string]any{}
		for k, v := range s {
			c[k] = v
		}
		c["type"] = []any{typ, "null"}
		return c
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// withDescription adds a description; a $ref gets it beside, as OpenAPI
// 3.1 allows.
func withDescription(s map[string]any, d string) map[string]any {
	c := map[string]any{"description": d}
	for k, v := range s {
		c[k] = v
	}
	return c
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// eventSchema is the Event type of package event: date form or UTC
// datetime form, never mixed (event.JSONSchema has the exact patterns).
func eventSchema() map[string]any {
	date := map[string]any{"type": "string", "format": "date", "description": "YYYY-MM-DD"}
	dt := map[string]any{"type": "string", "description": "UTC: YYYY-MM-DDTH:MM:SS[.F]Z (hour of one or two digits, 1-7 fraction digits)",
		"pattern": `^\d{4}-\d{2}-\d{2}T\d{1,2}:\d{2}:\d{2}(\.\d{1,7})?Z$`}
	return map[string]any{
		"description": "A temporal fact, {start_date[, end_date]} or {start_datetime[, end_datetime]} (package event)",
		"oneOf": []any{
			map[string]any{"type": "object", "required": []any{"start_date"}, "additionalProperties": false,
				"properties": map[string]any{"start_date": date, "end_date": date}},
			map[string]any{"type": "object", "required": []any{"start_datetime"}, "additionalProperties": false,
				"properties": map[string]any{"start_datetime": dt, "end_datetime": dt}},
		},
	}
}

// object is a JSON object schema; props alternate name and schema, and a
// name ending in "?" is optional.
func object(props ...any) map[string]any {
	p := map[string]any{}
	required := []any{}
	for i := 0; i+1 < len(props); i += 2 {
		name := props[i].(string)
		if n, ok := strings.CutSuffix(name, "?"); ok {
			name = n
		} else {
			required = append(required, name)
		}
		p[name] = props[i+1]
	}
	return map[string]any{"type": "object", "properties": p, "required": required, "additionalProperties": false}
}

func str(minLen, maxLen int, desc string) map[string]any {
	s := map[string]any{"type": "string", "description": desc}
	if minLen > 0 {
		s["minLength"] = minLen
	}
	if maxLen > 0 {
		s["maxLength"] = maxLen
	}
	return s
}

var (
	uuidSchema    = map[string]any{"type": "string", "format": "uuid"}
	configSchema  = map[string]any{"type": "object", "description": "The workflow's configuration: any JSON object of at most 256 KiB, e.g. {\"steps\": [{\"name\": \"ocr\"}, {\"name\": \"review\"}]}"}
	groupIDSchema = withDescription(uuidSchema, "The group the request acts on; the caller must hold the route's role in it")
)

// requestBodies are the JSON request bodies by "METHOD /pattern". Unknown
// fields are refused with 400 everywhere (additionalProperties false).
var requestBodies = map[string]map[string]any{
	"POST /api/api-key":            object("groupId", groupIDSchema),
	"POST /api/api-key/regenerate": object("groupId", groupIDSchema),
	"POST /api/groups": object("name", str(1, 100, "Unique among live groups, ignoring case; trimmed"),
		"description?", str(0, 1000, "")),
	"PUT /api/groups/{groupId}": object("name?", str(1, 100, "Unique among live groups, ignoring case; trimmed; left out: unchanged"),
		"description?", str(0, 1000, "Left out: unchanged")),
	"PUT /api/groups/{groupId}/members/{userId}": object("role", map[string]any{"type": "string", "enum": []any{"MEMBER", "ADMIN"}}),
	"POST /api/groups/{groupId}/requests":        object("message?", str(0, 500, "A note to the group's admins")),
	"PUT /api/documents/{id}/ocr": object(
		"engine?", str(0, 100, "Name of the OCR engine, e.g. tesseract-5"),
		"result", map[string]any{"type": "object", "description": "The engine's result: any JSON object, stored and returned as sent, e.g. {\"pages\": 1, \"fields\": {\"invoiceNumber\": {\"value\": \"INV-1\", \"confidence\": 0.98}}}"}),
	"POST /api/workflows": object("groupId", groupIDSchema, "name", str(1, 100, "Unique within the group; trimmed"),
		"description?", str(0, 1000, ""), "config", configSchema),
	"POST /api/workflows/{id}/versions": object("config", configSchema),
	"POST /api/reviews/{sessionId}/corrections": object("corrections", map[string]any{
		"type": "array", "minItems": 1, "maxItems": 500,
		"items": object("field", str(1, 200, "The field corrected, e.g. invoiceNumber"),
			"originalValue?", map[string]any{"type": "string", "description": "What the OCR read"},
			"value", map[string]any{"type": "string", "description": "The corrected value"}),
	}),
}

// optionalBodies may be left out altogether.
var optionalBodies = map[string]bool{"POST /api/groups/{groupId}/requests": true}

// A response is one status of a route with its body: a Go type encoded as
// JSON, or a media type with a schema, or nothing.
type response struct {
	status      string
	description string
	body        any    // a value of the type encoded (JSON), or nil
	media       string // for a body that is not JSON
	schema      map[string]any
}

func listOf(key string, item any) map[string]any { return map[string]any{key: item} }

// responseBodies are the successful answers by "METHOD /pattern". Every
// error is the Error schema (the "default" response besides the statuses
// the chain can answer).
var responseBodies = map[string][]response{
	"GET /api/health": {{status: "200", description: "Everything is up, or only a part the platform works on without (degraded)", body: healthView{}},
		{status: "503", description: "The database or the provider's discovery is down", body: healthView{}}},
	"GET /api/auth/login":    {{status: "302", description: "To the identity provider's login (Location)"}},
	"GET /api/auth/callback": {{status: "302", description: "To FRONTEND_URL, signed in (cookies set), or with ?auth_error=callback_failed"}},
	"GET /api/auth/me":       {{status: "200", description: "The caller", body: meResponse{}}},
	"POST /api/auth/refresh": {{status: "200", description: "Cookies renewed", body: struct {
		ExpiresIn int64 `json:"expires_in" doc:"Seconds until the new access token expires"`
	}{}}},
	"GET /api/auth/logout": {{status: "302", description: "To the provider's end-session endpoint, then SSO_POST_LOGOUT_REDIRECT_URI"}},
	"GET /api/api-key": {{status: "200", description: "The key, or null when the group has none", body: struct {
		APIKey *apiKeyView `json:"apiKey"`
	}{}}},
	"POST /api/api-key":            {{status: "201", description: "Created; the key is in this response only", body: apiKeyCreatedView{}}},
	"DELETE /api/api-key":          {{status: "204", description: "Deleted"}},
	"POST /api/api-key/regenerate": {{status: "200", description: "Replaced; the new key is in this response only", body: apiKeyCreatedView{}}},

	"GET /api/groups": {{status: "200", description: "The caller's live groups with their role", body: struct {
		Groups []groupView `json:"groups"`
	}{}}},
	"POST /api/groups":             {{status: "201", description: "Created", body: groupView{}}},
	"GET /api/groups/{groupId}":    {{status: "200", description: "The group", body: groupView{}}},
	"PUT /api/groups/{groupId}":    {{status: "200", description: "Changed", body: groupView{}}},
	"DELETE /api/groups/{groupId}": {{status: "204", description: "Soft-deleted"}},
	"GET /api/groups/{groupId}/members": {{status: "200", description: "The members", body: struct {
		Members []memberView `json:"members"`
	}{}}},
	"PUT /api/groups/{groupId}/members/{userId}":    {{status: "200", description: "The role is set", body: memberRoleView{}}},
	"DELETE /api/groups/{groupId}/members/{userId}": {{status: "204", description: "Removed"}},
	"POST /api/groups/{groupId}/requests":           {{status: "201", description: "Requested", body: requestView{}}},
	"GET /api/groups/{groupId}/requests": {{status: "200", description: "The group's requests",
		body: struct {
			Requests []requestView `json:"requests"`
		}{}}},
	"POST /api/groups/{groupId}/requests/{requestId}/approve": {{status: "200", description: "Approved; the user is a MEMBER", body: requestView{}}},
	"POST /api/groups/{groupId}/requests/{requestId}/reject":  {{status: "200", description: "Rejected", body: requestView{}}},
	"GET /api/membership-requests": {{status: "200", description: "The caller's requests",
		body: struct {
			Requests []requestView `json:"requests"`
		}{}}},
	"GET /api/admin/groups": {{status: "200", description: "Every live group", body: struct {
		Groups []groupView `json:"groups"`
	}{}}},
	"GET /api/admin/users": {{status: "200", description: "Every user", body: struct {
		Users []userView `json:"users"`
	}{}}},
	"POST /api/admin/users/{id}/promote": {{status: "200", description: "The user is a system admin", body: systemAdminView{}}},
	"POST /api/admin/users/{id}/demote":  {{status: "200", description: "The user is no longer a system admin", body: systemAdminView{}}},
	"DELETE /api/admin/users/{id}":       {{status: "204", description: "Deleted with their memberships"}},
	"POST /api/documents":                {{status: "201", description: "Stored", body: documentView{}}},
	"GET /api/documents": {{status: "200", description: "One page, newest first", body: struct {
		Documents  []documentView `json:"documents"`
		NextCursor *string        `json:"nextCursor" doc:"Pass as cursor for the next page; null on the last page"`
	}{}}},
	"GET /api/documents/{id}": {{status: "200", description: "The document's metadata", body: documentView{}}},
	"GET /api/documents/{id}/content": {{status: "200", description: "The stored bytes, as an attachment, with the sniffed type (active types, such as HTML, as application/octet-stream)",
		media: "*/*", schema: map[string]any{"type": "string", "format": "binary"}}},
	"DELETE /api/documents/{id}": {{status: "204", description: "Deleted with its file"}},
	"PUT /api/documents/{id}/ocr": {{status: "200", description: "Replaced", body: ocrView{}},
		{status: "201", description: "Written for the first time", body: ocrView{}}},
	"GET /api/documents/{id}/ocr": {{status: "200", description: "The OCR result", body: ocrView{}}},
	"GET /api/workflows": {{status: "200", description: "Workflows by name", body: struct {
		Workflows []workflowView `json:"workflows"`
	}{}}},
	"POST /api/workflows":        {{status: "201", description: "Created with version 1", body: workflowView{}}},
	"GET /api/workflows/{id}":    {{status: "200", description: "With the latest configuration", body: workflowView{}}},
	"DELETE /api/workflows/{id}": {{status: "204", description: "Deleted with its versions"}},
	"GET /api/workflows/{id}/versions": {{status: "200", description: "Newest first", body: struct {
		Versions []versionView `json:"versions"`
	}{}}},
	"POST /api/workflows/{id}/versions":          {{status: "201", description: "Saved as the next version", body: versionView{}}},
	"GET /api/workflows/{id}/versions/{version}": {{status: "200", description: "The version", body: versionView{}}},
	"POST /api/documents/{id}/reviews": {{status: "200", description: "The caller's active session, its lock renewed", body: reviewView{}},
		{status: "201", description: "A new session holding the document's lock", body: reviewView{}}},
	"GET /api/documents/{id}/reviews": {{status: "200", description: "The document's sessions", body: struct {
		Reviews []reviewView `json:"reviews"`
	}{}}},
	"GET /api/reviews/{sessionId}": {{status: "200", description: "With its corrections", body: reviewView{}}},
	"POST /api/reviews/{sessionId}/corrections": {{status: "201", description: "Recorded; the lock is renewed", body: struct {
		Corrections []correctionView `json:"corrections"`
	}{}}},
	"POST /api/reviews/{sessionId}/complete": {{status: "200", description: "Completed; the lock is released", body: reviewView{}}},
	"POST /api/reviews/{sessionId}/abandon":  {{status: "200", description: "Abandoned; the lock is released", body: reviewView{}}},
	"GET /api/audit": {{status: "200", description: "Newest first", body: struct {
		Entries    []auditView `json:"entries"`
		NextBefore *int64      `json:"nextBefore" doc:"Pass as before for the next page; null on the last page"`
	}{}}},
	"GET /api/audit/report": {{status: "200", description: "Days with counts, and the entries in date form, oldest first", body: struct {
		From      string        `json:"from"`
		To        string        `json:"to"`
		TimeZone  string        `json:"timeZone"`
		Days      []*reportDay  `json:"days"`
		Entries   []reportEntry `json:"entries"`
		Truncated bool          `json:"truncated" doc:"More entries than one report holds (10000)"`
	}{}}},
	"GET /api/openapi.json": {{status: "200", description: "This document", media: "application/json",
		schema: map[string]any{"type": "object", "description": "An OpenAPI 3.1 document", "required": []any{"openapi", "info", "paths"},
			"properties": map[string]any{"openapi": map[string]any{"type": "string"}, "info": map[string]any{"type": "object"}, "paths": map[string]any{"type": "object"}}}}},
	"GET /": {{status: "200", description: "The web UI's page (text/html) for any path outside /api/, or one of its files by its own type",
		media: "text/html,*/*", schema: map[string]any{"type": "string"}}},
	"GET /api/docs": {{status: "200", description: "The documentation page", media: "text/html",
		schema: map[string]any{"type": "string", "contentMediaType": "text/html"}}},
	"GET /api/docs/{file}": {{status: "200", description: "docs.js or docs.css", media: "text/javascript,text/css",
		schema: map[string]any{"type": "string"}}},
}

// content is the content map of a response: JSON of the body's type, or
// the media type given.
func (b *bodySchemas) content(r response) map[string]any {
	switch {
	case r.body != nil:
		return map[string]any{"application/json": map[string]any{"schema": b.of(reflect.TypeOf(r.body))}}
	case r.media != "":
		c := map[string]any{}
		for _, m := range strings.Split(r.media, ",") {
			c[m] = map[string]any{"schema": r.schema}
		}
		return c
	}
	return nil
}
