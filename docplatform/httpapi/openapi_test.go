package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/govkit/govkit/docplatform/httpapi"
)

const oas31ID = "https://spec.openapis.org/oas/3.1/schema/2022-10-07"

// oas31 compiles the OpenAPI 3.1 schema (testdata/oas-3.1-schema.json,
// the specification's JSON Schema for 3.1 documents) with a JSON Schema
// 2020-12 validator.
func oas31(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/oas-3.1-schema.json")
	must(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	must(t, err)
	c := jsonschema.NewCompiler()
	must(t, c.AddResource(oas31ID, doc))
	s, err := c.Compile(oas31ID)
	must(t, err)
	return s
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	must(t, err)
	return v
}

func TestOpenAPIDocument(t *testing.T) {
	rw := newRWorld(t, sqliteStore)
	schema := oas31(t)
	resp := rw.call(anon, request{method: "GET", path: "/api/openapi.json"})
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("%s %s", resp.Status, resp.Header.Get("Content-Type"))
	}

	t.Run("the document is valid OpenAPI 3.1", func(t *testing.T) {
		if err := schema.Validate(decodeAny(t, raw)); err != nil {
			t.Fatalf("%v", err)
		}
	})
	t.Run("the validator refuses broken documents", func(t *testing.T) {
		mutations := map[string]func(doc map[string]any){
			"no info":                       func(d map[string]any) { delete(d, "info") },
			"OpenAPI 3.0":                   func(d map[string]any) { d["openapi"] = "3.0.3" },
			"an API key in the body":        func(d map[string]any) { sec(d)["apiKey"].(map[string]any)["in"] = "body" },
			"a misspelt operation property": func(d map[string]any) { op(d, "/api/documents", "get")["summry"] = "x" },
			"a response without description": func(d map[string]any) {
				op(d, "/api/documents", "get")["responses"].(map[string]any)["2XX"] = map[string]any{}
			},
			"a path parameter that is not required": func(d map[string]any) {
				op(d, "/api/documents/{id}", "get")["parameters"].([]any)[0].(map[string]any)["required"] = false
			},
		}
		for name, mutate := range mutations {
			t.Run(name, func(t *testing.T) {
				var d map[string]any
				must(t, json.Unmarshal(raw, &d))
				mutate(d)
				b, _ := json.Marshal(d)
				if err := schema.Validate(decodeAny(t, b)); err == nil {
					t.Fatal("accepted")
				}
			})
		}
	})

	var doc struct {
		Paths map[string]map[string]struct {
			AccessLevel string             `json:"x-access-level"`
			MinRole     string             `json:"x-min-role"`
			Security    []map[string][]any `json:"security"`
			Parameters  []map[string]any   `json:"parameters"`
			Summary     string             `json:"summary"`
			Responses   map[string]any     `json:"responses"`
		}
		Components struct {
			SecuritySchemes map[string]map[string]string
		}
	}
	must(t, json.Unmarshal(raw, &doc))
	t.Run("every route is described with its access level and security schemes", func(t *testing.T) {
		param := regexp.MustCompile(`\{([^}.]+)(\.\.\.)?\}`)
		n := 0
		for _, rt := range rw.api.Routes() {
			if rt.Method == "" || rt.Method == "OPTIONS" {
				continue
			}
			n++
			path := param.ReplaceAllString(rt.Pattern, "{$1}")
			o, ok := doc.Paths[path][strings.ToLower(rt.Method)]
			if !ok {
				t.Errorf("%s %s missing", rt.Method, rt.Pattern)
				continue
			}
			if o.AccessLevel != rt.Access.Level.String() || o.Summary == "" {
				t.Errorf("%s %s: access %q summary %q", rt.Method, rt.Pattern, o.AccessLevel, o.Summary)
			}
			var schemes []string
			for _, s := range o.Security {
				for k := range s {
					schemes = append(schemes, k)
				}
			}
			slices.Sort(schemes)
			want := map[httpapi.Level][]string{
				httpapi.LevelPublic:        {},
				httpapi.LevelAuthenticated: {"bearer", "cookie"},
				httpapi.LevelSystemAdmin:   {"bearer", "cookie"},
				httpapi.LevelTokenOrAPIKey: {"apiKey", "bearer", "cookie"},
				httpapi.LevelGroup:         {"bearer", "cookie"},
			}[rt.Access.Level]
			if rt.Access.Level == httpapi.LevelGroup && rt.Access.APIKey {
				want = []string{"apiKey", "bearer", "cookie"}
			}
			if !slices.Equal(schemes, want) && !(len(schemes) == 0 && len(want) == 0) {
				t.Errorf("%s %s: security %v, want %v", rt.Method, rt.Pattern, schemes, want)
			}
			if o.Security == nil {
				t.Errorf("%s %s: no security list (public routes need an empty one)", rt.Method, rt.Pattern)
			}
		}
		if n < 40 {
			t.Fatalf("only %d routes", n)
		}
	})
	t.Run("the three security schemes are declared", func(t *testing.T) {
		s := doc.Components.SecuritySchemes
		if s["cookie"]["in"] != "cookie" || s["cookie"]["name"] != "access_token" || s["bearer"]["scheme"] != "bearer" || s["apiKey"]["in"] != "header" || s["apiKey"]["name"] != "X-API-Key" {
			t.Fatalf("%v", s)
		}
	})
	t.Run("group routes say where the group id comes from and the least role", func(t *testing.T) {
		o := doc.Paths["/api/groups/{groupId}"]["put"]
		if o.AccessLevel != "group" || o.MinRole != "ADMIN" {
			t.Fatalf("%+v", o)
		}
		up := doc.Paths["/api/documents"]["post"]
		found := false
		for _, p := range up.Parameters {
			found = found || (p["name"] == "groupId" && p["in"] == "query" && p["required"] == true)
		}
		if !found {
			t.Fatalf("upload's groupId parameter missing: %v", up.Parameters)
		}
	})
}

func sec(d map[string]any) map[string]any {
	return d["components"].(map[string]any)["securitySchemes"].(map[string]any)
}

func op(d map[string]any, path, method string) map[string]any {
	return d["paths"].(map[string]any)[path].(map[string]any)[method].(map[string]any)
}
