package httpapi

import (
	"bytes"
	_ "embed"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/ui"
)

//go:embed explorer/index.html
var explorerPage []byte

// registerDocs adds the OpenAPI document and its page. They are not part of
// the route table they describe.
func (s *Server) registerDocs() {
	s.mux.HandleFunc("GET "+s.root+"/explorer-json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.OpenAPI())
	})
	// The page links its style sheet, the web UIs' own (package ui), by
	// its absolute path under the API root.
	body := bytes.ReplaceAll(explorerPage, []byte("{{ROOT}}"), []byte(s.root))
	page := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		// The page's script is inline; it loads only its style sheet and
		// the document beside it. It may be framed by its
		// own origin, and only this page: NotifyBC's console shows the
		// explorer in a same-origin iframe (and the original sends the
		// same two headers here).
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'")
		h.Set("X-Frame-Options", "SAMEORIGIN")
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(body)
	}
	s.mux.HandleFunc("GET "+s.root+"/explorer/explorer.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(ui.Stylesheet)
	})
	s.mux.HandleFunc("GET "+s.root+"/explorer", page)
	s.mux.HandleFunc("GET "+s.root+"/explorer/", page)
}

var pathParamRe = regexp.MustCompile(`\{([^}.]+)(\.\.\.)?\}`)

// OpenAPI returns the OpenAPI 3 document of every registered route.
func (s *Server) OpenAPI() map[string]any {
	paths := map[string]map[string]any{}
	for _, rt := range s.routes {
		p := s.root + pathParamRe.ReplaceAllString(rt.path, "{$1}")
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		op := map[string]any{
			"tags":        []string{rt.tag},
			"summary":     rt.summary,
			"operationId": operationID(rt),
		}
		var params []map[string]any
		for _, m := range pathParamRe.FindAllStringSubmatch(rt.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
		}
		for _, pa := range rt.params {
			if pa.in == "path" {
				continue
			}
			schema := map[string]any{"type": "string"}
			if pa.array {
				schema = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
			}
			pm := map[string]any{"name": pa.name, "in": pa.in, "required": pa.required, "schema": schema}
			if pa.array {
				pm["style"] = "form"
				pm["explode"] = true
			}
			if pa.desc != "" {
				pm["description"] = pa.desc
			}
			params = append(params, pm)
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.body != "" {
			op["requestBody"] = map[string]any{
				"required": true,
				"content":  map[string]any{"application/json": map[string]any{"schema": schemaRef(rt.body)}},
			}
		}
		status := rt.status
		if status == 0 {
			status = http.StatusOK
		}
		resp := map[string]any{"description": http.StatusText(status)}
		switch rt.response {
		case "", "none":
		case "text":
			resp["content"] = map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}
		default:
			resp["content"] = map[string]any{"application/json": map[string]any{"schema": schemaRef(rt.response)}}
		}
		responses := map[string]any{strconv.Itoa(status): resp}
		if rt.response == "text" {
			responses["302"] = map[string]any{"description": "redirect to the configured redirectUrl with ?channel= (and &err= on failure)"}
		}
		errBody := map[string]any{"application/json": map[string]any{"schema": schemaRef("Error")}}
		errResp := func(desc string) map[string]any { return map[string]any{"description": desc, "content": errBody} }
		if rt.body != "" || len(rt.params) > 0 || strings.Contains(rt.path, "{") {
			responses["400"] = errResp("malformed input: body, filter, where or a field's value")
		}
		if rt.body != "" {
			responses["413"] = errResp("request body over 1 MiB (100 KB for callers who are not administrators)")
		}
		if strings.Contains(rt.path, "{") {
			responses["404"] = errResp("no such record (or not visible to the caller)")
		}
		if rt.roles != nil {
			responses["403"] = errResp("Forbidden")
			op["security"] = []map[string]any{{"accessToken": []string{}}}
		}
		if rt.response == "text" {
			// verify, unsubscribe and undo answer a refusal with the
			// configured failure message, or JSON when none is configured
			responses["403"] = map[string]any{"description": "refused: the configured failure message, or a JSON error", "content": map[string]any{
				"text/plain":       map[string]any{"schema": map[string]any{"type": "string"}},
				"application/json": map[string]any{"schema": schemaRef("Error")},
			}}
		}
		if rt.path == "/administrators/login" {
			responses["401"] = errResp("Invalid email or password.")
		}
		if rt.response == "text" || rt.path == "/administrators/login" {
			responses["429"] = map[string]any{"description": "too many wrong codes (or failed log-ins) from this client or for this subscription; Retry-After says when to try again",
				"headers": map[string]any{"Retry-After": map[string]any{"schema": map[string]any{"type": "integer"}, "description": "seconds"}},
				"content": errBody}
		}
		op["responses"] = responses
		paths[p][strings.ToLower(rt.method)] = op
	}
	schemes := map[string]any{
		"accessToken": map[string]any{"type": "apiKey", "in": "header", "name": "Authorization"},
	}
	if s.cfg.OIDC != nil && s.cfg.OIDC.DiscoveryURL != "" {
		schemes["oidc"] = map[string]any{"type": "openIdConnect", "openIdConnectUrl": s.cfg.OIDC.DiscoveryURL}
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       "NotifyBC",
			"version":     "6.4.1",
			"description": "A versatile notification API (govkit implementation, API-compatible with NotifyBC 6)",
		},
		"paths":      paths,
		"components": map[string]any{"securitySchemes": schemes, "schemas": schemas()},
	}
}

func operationID(rt route) string {
	parts := strings.FieldsFunc(rt.path, func(r rune) bool { return r == '/' || r == '{' || r == '}' || r == '-' })
	id := strings.ToLower(rt.method)
	for _, p := range parts {
		id += strings.ToUpper(p[:1]) + p[1:]
	}
	return id
}

func schemaRef(name string) map[string]any {
	switch name {
	case "count":
		return map[string]any{"type": "object", "properties": map[string]any{"count": map[string]any{"type": "integer"}}}
	case "strings":
		return map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	case "object":
		return map[string]any{"type": "object", "additionalProperties": true}
	}
	if rest, ok := strings.CutPrefix(name, "[]"); ok {
		return map[string]any{"type": "array", "items": schemaRef(rest)}
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// schemas describes the records. Schemaless records allow other fields.
func schemas() map[string]any {
	str := map[string]any{"type": "string"}
	dt := map[string]any{"type": "string", "format": "date-time"}
	obj := map[string]any{"type": "object", "additionalProperties": true}
	boolean := map[string]any{"type": "boolean"}
	integer := map[string]any{"type": "integer"}
	// The complexity rule uses lookaheads, which a "pattern" in the document
	// may not (OpenAPI validators compile it with RE2), so it is described.
	password := map[string]any{"type": "string", "minLength": 10, "description": "must match " + notify.PasswordComplexity + " (an upper-case and a lower-case letter, a digit, one of !_@#&$*, at least 10 characters)"}
	base := func(props map[string]any, open bool) map[string]any {
		all := map[string]any{"id": str, "created": dt, "updated": dt, "createdBy": obj, "updatedBy": obj}
		for k, v := range props {
			all[k] = v
		}
		return map[string]any{"type": "object", "properties": all, "additionalProperties": open}
	}
	out := map[string]any{
		"Subscription": base(map[string]any{
			"serviceName": str, "channel": map[string]any{"type": "string", "enum": []string{"email", "sms"}},
			"userChannelId": str, "state": map[string]any{"type": "string", "enum": []string{"unconfirmed", "confirmed", "deleted"}},
			"confirmationRequest": obj, "userId": str, "broadcastPushNotificationFilter": str, "data": obj,
			"unsubscriptionCode": str, "unsubscribedAdditionalServices": obj,
		}, true),
		"Notification": base(map[string]any{
			"serviceName": str, "state": str, "userChannelId": str, "userId": str, "message": obj,
			"channel":     map[string]any{"type": "string", "enum": []string{"inApp", "email", "sms"}},
			"isBroadcast": boolean, "skipSubscriptionConfirmationCheck": boolean, "validTill": dt, "invalidBefore": dt,
			"data": obj, "asyncBroadcastPushNotification": map[string]any{}, "broadcastPushNotificationSubscriptionFilter": str,
			"httpHost": str, "readBy": map[string]any{"type": "array", "items": str}, "deletedBy": map[string]any{"type": "array", "items": str},
			"dispatch": obj,
		}, true),
		"Configuration": base(map[string]any{"name": str, "value": map[string]any{}, "serviceName": str}, true),
		"Bounce": base(map[string]any{
			"channel": str, "userChannelId": str, "hardBounceCount": integer, "state": str,
			"bounceMessages": map[string]any{"type": "array", "items": obj}, "latestNotificationStarted": dt, "latestNotificationEnded": dt,
		}, true),
		"Administrator":  base(map[string]any{"email": str, "username": str}, false),
		"AccessToken":    base(map[string]any{"ttl": integer, "name": str, "userId": str}, false),
		"UserCredential": base(map[string]any{"userId": str}, false),
		"Login":          map[string]any{"type": "object", "required": []string{"email", "password"}, "properties": map[string]any{"email": str, "password": str, "tokenName": str, "ttl": integer}},
		"Token":          map[string]any{"type": "object", "properties": map[string]any{"token": str, "ttl": integer}},
		"Password":       map[string]any{"type": "object", "required": []string{"password"}, "properties": map[string]any{"password": password}},
		"NewAdministrator": map[string]any{"type": "object", "required": []string{"email", "password"},
			"properties": map[string]any{"email": str, "password": password, "username": str}},
		"NewAccessToken": map[string]any{"type": "object", "properties": map[string]any{"ttl": integer, "name": str}},
		"UserProfile":    map[string]any{"type": "object", "properties": map[string]any{"securityId": str, "authnStrategy": str, "role": str}},
		"Error": map[string]any{"type": "object", "required": []string{"statusCode"}, "properties": map[string]any{
			"statusCode": integer, "message": map[string]any{}, "error": str,
		}},
		"health":     obj,
		"SwiftReply": obj,
	}
	for k, v := range consoleSchemas() {
		out[k] = v
	}
	return out
}
