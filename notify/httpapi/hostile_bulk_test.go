package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// Finding 9: a bulk PATCH applies the validation of a PATCH by id to every
// record it changes, writes all of them or none, and keeps the RSA key
// pair usable.
func TestBulkPatchValidation(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "a", "value": map[string]any{}})
	seed(t, e, "/api/configurations", map[string]any{"name": "subscription", "serviceName": "b", "value": map[string]any{}})
	healthy := func(t *testing.T) {
		t.Helper()
		e.Do(t, "GET", "/api/health", nil).Expect(t, http.StatusOK)
		rsa := list(t, e, "/api/configurations?filter="+q(`{"where":{"name":"rsa"}}`))
		if len(rsa) != 1 {
			t.Fatalf("rsa records %v", rsa)
		}
		if v, _ := rsa[0]["value"].(map[string]any); !strings.Contains(fmt.Sprint(v["private"]), "PRIVATE KEY") {
			t.Fatalf("rsa value %v", rsa[0]["value"])
		}
	}
	for _, tc := range []struct {
		name, where, field string
		body               map[string]any
	}{
		{"name null", `{"name":"subscription"}`, "name", map[string]any{"name": nil}},
		{"name of the wrong type", `{"name":"subscription"}`, "name", map[string]any{"name": 5}},
		{"value null", `{"name":"subscription"}`, "value", map[string]any{"value": nil}},
		{"where-less, name null", ``, "name", map[string]any{"name": nil}},
		{"where-less, a value that is not a key pair", ``, "value", map[string]any{"value": 1}},
		{"where-less rename", ``, "name", map[string]any{"name": "x"}},
		{"duplicates made by the update", `{"name":"subscription"}`, "name", map[string]any{"serviceName": "same"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/api/configurations"
			if tc.where != "" {
				path += "?where=" + q(tc.where)
			}
			r := e.Do(t, "PATCH", path, tc.body).Expect(t, http.StatusBadRequest)
			if m := r.Map(t)["message"].(string); !strings.Contains(m, tc.field) {
				t.Errorf("message %q does not name %s", m, tc.field)
			}
			subs := list(t, e, "/api/configurations?filter="+q(`{"where":{"name":"subscription"},"order":"serviceName"}`))
			if len(subs) != 2 || subs[0]["serviceName"] != "a" || subs[1]["serviceName"] != "b" || subs[0]["value"] == nil {
				t.Fatalf("a refused bulk PATCH changed records: %v", subs)
			}
			healthy(t)
		})
	}
	t.Run("per-id writes keep the rsa record usable too", func(t *testing.T) {
		id := list(t, e, "/api/configurations?filter="+q(`{"where":{"name":"rsa"}}`))[0]["id"].(string)
		e.Do(t, "PATCH", "/api/configurations/"+id, map[string]any{"value": map[string]any{"private": "x"}}).Expect(t, http.StatusBadRequest)
		e.Do(t, "PATCH", "/api/configurations/"+id, map[string]any{"name": "other"}).Expect(t, http.StatusBadRequest)
		e.Do(t, "PUT", "/api/configurations/"+id, map[string]any{"name": "rsa", "value": 1}).Expect(t, http.StatusBadRequest)
		healthy(t)
	})
	t.Run("bounces' bulk PATCH validates as their PATCH by id does", func(t *testing.T) {
		seed(t, e, "/api/bounces", map[string]any{"channel": "email", "userChannelId": "b@invalid.local"})
		e.Do(t, "PATCH", "/api/bounces", map[string]any{"channel": nil}).Expect(t, http.StatusBadRequest)
		e.Do(t, "PATCH", "/api/bounces", map[string]any{"state": "gone"}).Expect(t, http.StatusBadRequest)
		e.Do(t, "PATCH", "/api/bounces", map[string]any{"hardBounceCount": "x"}).Expect(t, http.StatusBadRequest)
		b := list(t, e, "/api/bounces")[0]
		if b["channel"] != "email" || b["state"] != "active" {
			t.Fatalf("bounce %v", b)
		}
		var c map[string]float64
		e.Do(t, "PATCH", "/api/bounces", map[string]any{"hardBounceCount": 3}).Expect(t, http.StatusOK).JSON(t, &c)
		if c["count"] != 1 {
			t.Fatalf("count %v", c)
		}
	})
	t.Run("a valid bulk PATCH still applies and answers the count", func(t *testing.T) {
		var c map[string]float64
		e.Do(t, "PATCH", "/api/configurations?where="+q(`{"name":"subscription"}`), map[string]any{"value": map[string]any{"x": 1}}).Expect(t, http.StatusOK).JSON(t, &c)
		if c["count"] != 2 {
			t.Fatalf("count %v", c)
		}
		healthy(t)
	})
}
