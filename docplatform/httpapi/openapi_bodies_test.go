package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
)

// untyped reports why a body schema says nothing about the body: missing,
// an object without properties, an array without items, or a reference
// to such a component. Free-form members inside a typed object (an OCR
// engine's result, a workflow's configuration) are fine: the body around
// them is described.
func untyped(doc map[string]any, schema any) string {
	s, ok := schema.(map[string]any)
	if !ok || len(s) == 0 {
		return "no schema"
	}
	if ref, ok := s["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/components/schemas/")
		target := doc["components"].(map[string]any)["schemas"].(map[string]any)[name]
		if !found || target == nil {
			return "dangling reference " + ref
		}
		return untyped(doc, target)
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := s[k].([]any); ok {
			for _, a := range alts {
				if a.(map[string]any)["type"] == "null" {
					continue
				}
				if why := untyped(doc, a); why != "" {
					return why
				}
			}
			return ""
		}
	}
	switch s["type"] {
	case "object":
		if _, ok := s["properties"]; !ok {
			return `{"type":"object"} without properties`
		}
	case "array":
		if _, ok := s["items"]; !ok {
			return "an array without items"
		}
		return untyped(doc, s["items"])
	case nil:
		return "no type"
	}
	return ""
}

// Every request body and every response body of the document has a real
// schema; responses without a body (204, redirects) say so by having no
// content, and every operation names its successful statuses.
func TestOpenAPIBodiesAreTyped(t *testing.T) {
	rw := newRWorld(t, sqliteStore)
	resp := rw.call(anon, request{method: "GET", path: "/api/openapi.json"})
	raw, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	must(t, json.Unmarshal(raw, &doc))
	var problems []string
	requestBodies := 0
	for path, ops := range doc["paths"].(map[string]any) {
		if strings.HasPrefix(path, "/test/") {
			continue // the harness's probe routes (Options.Routes), not the platform's
		}
		for method, o := range ops.(map[string]any) {
			op := o.(map[string]any)
			where := strings.ToUpper(method) + " " + path
			if rb, ok := op["requestBody"].(map[string]any); ok {
				requestBodies++
				for media, c := range rb["content"].(map[string]any) {
					if why := untyped(doc, c.(map[string]any)["schema"]); why != "" {
						problems = append(problems, fmt.Sprintf("%s: request body %s: %s", where, media, why))
					}
				}
			}
			success := 0
			for status, r := range op["responses"].(map[string]any) {
				if status == "2XX" {
					problems = append(problems, where+": responses say only 2XX; name the statuses and their bodies")
				}
				if strings.HasPrefix(status, "2") || strings.HasPrefix(status, "3") {
					success++
				}
				content, _ := r.(map[string]any)["content"].(map[string]any)
				for media, c := range content {
					if strings.HasPrefix(media, "text/") || media == "*/*" {
						continue // not JSON: the media type is the description
					}
					if why := untyped(doc, c.(map[string]any)["schema"]); why != "" {
						problems = append(problems, fmt.Sprintf("%s: response %s %s: %s", where, status, media, why))
					}
				}
			}
			if success == 0 {
				problems = append(problems, where+": no successful response")
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
	if requestBodies < 11 {
		t.Errorf("%d request bodies described, want at least the 11 the API reads", requestBodies)
	}
}

// The checker itself tells a described body from an undescribed one.
func TestUntypedFindsUndescribedBodies(t *testing.T) {
	doc := map[string]any{"components": map[string]any{"schemas": map[string]any{
		"Bare": map[string]any{"type": "object"},
		"Good": map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}},
	}}}
	for _, c := range []struct {
		schema any
		bad    bool
	}{
		{map[string]any{"type": "object"}, true},
		{nil, true},
		{map[string]any{"$ref": "#/components/schemas/Bare"}, true},
		{map[string]any{"$ref": "#/components/schemas/Missing"}, true},
		{map[string]any{"type": "array", "items": map[string]any{"type": "object"}}, true},
		{map[string]any{"$ref": "#/components/schemas/Good"}, false},
		{map[string]any{"anyOf": []any{map[string]any{"$ref": "#/components/schemas/Good"}, map[string]any{"type": "null"}}}, false},
		{map[string]any{"type": "array", "items": map[string]any{"$ref": "#/components/schemas/Good"}}, false},
	} {
		if got := untyped(doc, c.schema) != ""; got != c.bad {
			t.Errorf("untyped(%v) = %v, want %v", c.schema, got, c.bad)
		}
	}
}
