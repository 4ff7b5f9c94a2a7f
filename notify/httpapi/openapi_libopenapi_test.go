package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// TestExplorerJSONPassesLibopenapiValidator checks /api/explorer-json with
// an independent OpenAPI validator (pb33f/libopenapi-validator checks the
// document against the specification's own schema), so clients that
// generate code from the document can rely on it.
func TestExplorerJSONPassesLibopenapiValidator(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	r := e.Do(t, "GET", "/api/explorer-json", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
	doc, err := libopenapi.NewDocument(r.Body)
	if err != nil {
		t.Fatalf("parsing the document: %v", err)
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

// TestResponsesMatchExplorerJSON sends real requests and checks each answer
// (status, content type, body) against what /api/explorer-json declares
// for that operation, so the document describes what the service does.
func TestResponsesMatchExplorerJSON(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	r := e.Do(t, "GET", "/api/explorer-json", nil, apitest.Anonymous...).Expect(t, http.StatusOK)
	doc, err := libopenapi.NewDocument(r.Body)
	if err != nil {
		t.Fatalf("parsing the document: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("building the validator: %v", errs)
	}
	sub := e.Do(t, "POST", "/api/subscriptions", map[string]any{
		"serviceName": "docs", "channel": "email", "userChannelId": "d@example.org", "state": "confirmed",
		"unsubscriptionCode": "11111", "confirmationRequest": map[string]any{"sendRequest": false, "confirmationCode": "12345"},
	}).Expect(t, http.StatusOK).Map(t)
	id := sub["id"].(string)
	admin := e.Do(t, "POST", "/api/administrators", map[string]any{"email": "docs@example.org", "password": "Secret_123456"}).Expect(t, http.StatusOK).Map(t)
	aid := admin["id"].(string)

	for _, c := range []struct {
		name, method, path string
		body               any
		headers            []string
	}{
		{"subscription list", "GET", "/api/subscriptions", nil, nil},
		{"subscription count", "GET", "/api/subscriptions/count", nil, nil},
		{"subscribed services", "GET", "/api/subscriptions/services", nil, nil},
		{"subscription create", "POST", "/api/subscriptions", map[string]any{"serviceName": "docs", "channel": "email", "userChannelId": "e@example.org", "confirmationRequest": map[string]any{"sendRequest": false}}, nil},
		{"subscription update", "PATCH", "/api/subscriptions/" + id, map[string]any{"data": map[string]any{"a": 1}}, nil},
		{"verify", "GET", "/api/subscriptions/" + id + "/verify?confirmationCode=12345", nil, apitest.Anonymous},
		{"verify with a wrong code", "GET", "/api/subscriptions/" + id + "/verify?confirmationCode=00000", nil, apitest.Anonymous},
		{"unsubscribe", "GET", "/api/subscriptions/" + id + "/unsubscribe?unsubscriptionCode=11111", nil, apitest.Anonymous},
		{"undo", "GET", "/api/subscriptions/" + id + "/unsubscribe/undo?unsubscriptionCode=11111", nil, apitest.Anonymous},
		{"forbidden list", "GET", "/api/subscriptions", nil, apitest.Anonymous},
		{"configuration list", "GET", "/api/configurations", nil, nil},
		{"configuration count", "GET", "/api/configurations/count", nil, nil},
		{"bounce list", "GET", "/api/bounces", nil, nil},
		{"administrator list", "GET", "/api/administrators", nil, nil},
		{"administrator by id", "GET", "/api/administrators/" + aid, nil, nil},
		{"administrator patch", "PATCH", "/api/administrators/" + aid, map[string]any{"username": "docs"}, nil},
		{"login", "POST", "/api/administrators/login", map[string]any{"email": "docs@example.org", "password": "Secret_123456"}, apitest.Anonymous},
		{"login with a wrong password", "POST", "/api/administrators/login", map[string]any{"email": "docs@example.org", "password": "Wrong_123456"}, apitest.Anonymous},
		{"whoami", "GET", "/api/administrators/whoami", nil, nil},
		{"access token create", "POST", "/api/administrators/" + aid + "/access-tokens", map[string]any{"name": "t", "ttl": 60}, nil},
		{"access token list", "GET", "/api/administrators/" + aid + "/access-tokens", nil, nil},
		{"health", "GET", "/api/health", nil, nil},
		{"malformed filter", "GET", "/api/subscriptions?filter=%7Bnot", nil, nil},
		{"unknown subscription id", "GET", "/api/subscriptions/0123456789abcdef01234567/verify?confirmationCode=1", nil, apitest.Anonymous},
		{"malformed body", "POST", "/api/subscriptions", "{not json", nil},
	} {
		t.Run(c.name+" answers as documented", func(t *testing.T) {
			var body io.Reader
			switch b := c.body.(type) {
			case nil:
			case string:
				body = strings.NewReader(b)
			default:
				js, _ := json.Marshal(b)
				body = bytes.NewReader(js)
			}
			req, err := http.NewRequest(c.method, e.URL+c.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if c.body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			for i := 0; i+1 < len(c.headers); i += 2 {
				req.Header.Set(c.headers[i], c.headers[i+1])
			}
			resp, err := e.Client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(raw))
			// the validator matches paths against the document's own
			req.URL.Host, req.URL.Scheme = "", ""
			if ok, problems := v.ValidateHttpResponse(req, resp); !ok {
				for _, p := range problems {
					t.Errorf("%d %s: %s: %s", resp.StatusCode, strings.TrimSpace(string(raw[:min(len(raw), 200)])), p.Message, p.Reason)
					for _, se := range p.SchemaValidationErrors {
						t.Errorf("  at %s: %s", se.Location, se.Reason)
					}
				}
			}
		})
	}
}
