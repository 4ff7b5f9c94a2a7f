package httpapi_test

import (
	"io"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// TestOpenAPIDocumentPassesLibopenapiValidator checks /api/openapi.json with
// a second, independent OpenAPI validator (pb33f/libopenapi-validator, which
// embeds the specification's own 3.1 schema), so the document's validity
// does not rest on our copy of that schema alone.
func TestOpenAPIDocumentPassesLibopenapiValidator(t *testing.T) {
	rw := newRWorld(t, sqliteStore)
	resp := rw.call(anon, request{method: "GET", path: "/api/openapi.json"})
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /api/openapi.json: %s", resp.Status)
	}
	doc, err := libopenapi.NewDocument(raw)
	must(t, err)
	if got := doc.GetVersion(); got[:3] != "3.1" {
		t.Fatalf("openapi version %q, want 3.1.x", got)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("building the validator: %v", errs)
	}
	valid, problems := v.ValidateDocument()
	for _, p := range problems {
		t.Errorf("%s: %s", p.Message, p.Reason)
		for _, se := range p.SchemaValidationErrors {
			t.Errorf("  at %s: %s", se.Location, se.Reason)
		}
	}
	if !valid {
		t.Fatal("the document does not pass libopenapi-validator")
	}
}
