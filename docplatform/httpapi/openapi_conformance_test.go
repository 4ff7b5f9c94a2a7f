package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/govkit/govkit/docplatform/httpapi"
)

// The handler tests' server checks every answer against the OpenAPI
// document (newHarness wraps the API with conform): a JSON body must match
// the schema of its route and status, a successful status must be one the
// document names. So the response schemas, made from the views' types,
// are held to what the handlers really write, by every test that calls
// the API.

// conformance holds the document's compiled response schemas.
type conformance struct {
	routes *http.ServeMux // "METHOD pattern" of the platform's routes
	doc    map[string]any
	mu     sync.Mutex
	c      *jsonschema.Compiler
	cache  map[string]*jsonschema.Schema
}

var (
	conformOnce sync.Once
	conformDoc  *conformance
	conformErr  error
)

// documentConformance builds the checker from the first server's
// document; every server of the tests has the same platform routes.
func documentConformance(api *httpapi.Server) (*conformance, error) {
	conformOnce.Do(func() {
		raw, err := json.Marshal(api.OpenAPI())
		if err != nil {
			conformErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			conformErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		if err := c.AddResource("https://govkit.test/openapi.json", doc); err != nil {
			conformErr = err
			return
		}
		mux := http.NewServeMux()
		for _, rt := range api.Routes() {
			if rt.Method != "" && rt.Method != "OPTIONS" && strings.HasPrefix(rt.Pattern, "/api/") {
				mux.Handle(rt.Method+" "+rt.Pattern, http.NotFoundHandler())
			}
		}
		conformDoc = &conformance{routes: mux, doc: doc.(map[string]any), c: c, cache: map[string]*jsonschema.Schema{}}
	})
	return conformDoc, conformErr
}

var pathParamName = strings.NewReplacer("...}", "}")

// check returns what is wrong with an answer, or "".
func (cf *conformance) check(r *http.Request, status int, contentType string, body []byte) string {
	_, pattern := cf.routes.Handler(r)
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		return "" // not one of the platform's routes (a probe, a 404)
	}
	path = pathParamName.Replace(path)
	op, _ := cf.doc["paths"].(map[string]any)[path].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if op == nil {
		return fmt.Sprintf("%s is not in the document", pattern)
	}
	responses := op["responses"].(map[string]any)
	code := fmt.Sprint(status)
	resp, ok := responses[code].(map[string]any)
	if !ok {
		if status < 400 {
			return fmt.Sprintf("%s answered %d, a status the document does not name", pattern, status)
		}
		code = "default"
		resp = responses[code].(map[string]any)
	}
	content, _ := resp["content"].(map[string]any)
	media, _, _ := strings.Cut(contentType, ";")
	if (len(body) == 0 && len(content) == 0) || (status >= 300 && status < 400) {
		return "" // a redirect's body is net/http's courtesy link
	}
	if _, any := content["*/*"]; any {
		return ""
	}
	if _, ok := content[media]; !ok {
		return fmt.Sprintf("%s %d answered %q, the document names %v", pattern, status, media, keys(content))
	}
	if media != "application/json" {
		return ""
	}
	schema, err := cf.schema(path, strings.ToLower(method), code)
	if err != nil {
		return fmt.Sprintf("%s %d: compiling its schema: %v", pattern, status, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Sprintf("%s %d: body is not JSON: %v", pattern, status, err)
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Sprintf("%s %d: body %s does not match the document: %v", pattern, status, truncate(body), err)
	}
	return ""
}

func (cf *conformance) schema(path, method, code string) (*jsonschema.Schema, error) {
	ptr := "/paths/" + pointerToken(path) + "/" + method + "/responses/" + code + "/content/application~1json/schema"
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if s, ok := cf.cache[ptr]; ok {
		return s, nil
	}
	s, err := cf.c.Compile("https://govkit.test/openapi.json#" + (&url.URL{Fragment: ptr}).EscapedFragment())
	if err == nil {
		cf.cache[ptr] = s
	}
	return s, err
}

func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// conform wraps the API: every answer is checked against the document,
// and a mismatch fails the test that made the request.
func conform(t testing.TB, api *httpapi.Server) http.Handler {
	cf, err := documentConformance(api)
	if err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		api.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if problem := cf.check(r, rec.status, rec.Header().Get("Content-Type"), rec.body.Bytes()); problem != "" {
			t.Errorf("OpenAPI conformance: %s", problem)
		}
	})
}

// recorder passes the answer through and keeps a copy of JSON bodies.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if strings.HasPrefix(r.Header().Get("Content-Type"), "application/json") {
		r.body.Write(b)
	} else if r.body.Len() == 0 {
		r.body.WriteByte(' ') // a non-empty body of another type
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// The checker tells a body that matches from one that does not.
func TestConformanceCheckRefusesWhatTheDocumentDoesNotSay(t *testing.T) {
	rw := newRWorld(t, sqliteStore)
	cf, err := documentConformance(rw.api)
	must(t, err)
	get := func(path string) *http.Request { r, _ := http.NewRequest("GET", path, nil); return r }
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		ctype  string
		body   string
		ok     bool
	}{
		{"a matching list", get("/api/groups"), 200, "application/json", `{"groups":[]}`, true},
		{"a group id that is a number", get("/api/groups"), 200, "application/json", `{"groups":[{"id":1}]}`, false},
		{"a field the document does not name", get("/api/groups/0b9f2a4e-7e8e-4a34-9f43-3c1d2a6b8e10"), 200, "application/json",
			`{"id":"0b9f2a4e-7e8e-4a34-9f43-3c1d2a6b8e10","name":"x","description":"","createdBy":"u","createdAt":"2026-01-01T00:00:00Z","secret":"y"}`, false},
		{"an error body", get("/api/groups"), 403, "application/json", `{"statusCode":403,"message":"no","error":"Forbidden"}`, true},
		{"an error body without message", get("/api/groups"), 403, "application/json", `{"statusCode":403,"error":"Forbidden"}`, false},
		{"a success status the document does not name", get("/api/groups"), 202, "application/json", `{}`, false},
		{"a media type the document does not name", get("/api/auth/me"), 200, "text/plain", `hello`, false},
		{"a probe route is not checked", get("/test/public"), 200, "application/json", `{}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			problem := cf.check(c.req, c.status, c.ctype, []byte(c.body))
			if (problem == "") != c.ok {
				t.Errorf("check = %q, want ok=%v", problem, c.ok)
			}
		})
	}
}
