package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// TestCreateStampsCreatedByOnly: the original's create records who created
// a record and sets no updatedBy; the first change adds updatedBy.
func TestCreateStampsCreatedByOnly(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	admin := e.Do(t, "POST", "/api/administrators", map[string]any{"email": "stamp@example.org", "password": "Secret_123456"}).Expect(t, http.StatusOK).Map(t)
	for _, c := range []struct {
		name, path string
		body       map[string]any
	}{
		{"subscription", "/api/subscriptions", map[string]any{"serviceName": "stamp", "channel": "email", "userChannelId": "s@example.org", "confirmationRequest": map[string]any{"sendRequest": false}}},
		{"configuration", "/api/configurations", map[string]any{"name": "stamp", "value": 1}},
		{"bounce", "/api/bounces", map[string]any{"channel": "email", "userChannelId": "s@example.org", "hardBounceCount": 0}},
		{"access token", "/api/administrators/" + admin["id"].(string) + "/access-tokens", map[string]any{"name": "t"}},
		{"administrator", "/api/administrators", map[string]any{"email": "stamp2@example.org", "password": "Secret_123456"}},
	} {
		t.Run("a new "+c.name+" has createdBy and no updatedBy", func(t *testing.T) {
			m := e.Do(t, "POST", c.path, c.body).Expect(t, http.StatusOK).Map(t)
			if by, _ := m["createdBy"].(map[string]any); by["role"] != "SuperAdmin" {
				t.Fatalf("createdBy %v", m["createdBy"])
			}
			if _, ok := m["updatedBy"]; ok {
				t.Fatalf("updatedBy %v on a new record", m["updatedBy"])
			}
		})
	}
	if _, ok := admin["updatedBy"]; ok {
		t.Fatalf("sign-up answered updatedBy %v", admin["updatedBy"])
	}
	t.Run("a change sets updatedBy", func(t *testing.T) {
		id := e.Do(t, "POST", "/api/configurations", map[string]any{"name": "stamp2", "value": 1}).Expect(t, http.StatusOK).Map(t)["id"].(string)
		e.Do(t, "PATCH", "/api/configurations/"+id, map[string]any{"value": 2}).Expect(t, http.StatusNoContent)
		m := e.Do(t, "GET", "/api/configurations/"+id, nil).Expect(t, http.StatusOK).Map(t)
		if by, _ := m["updatedBy"].(map[string]any); by["role"] != "SuperAdmin" {
			t.Fatalf("updatedBy %v", m["updatedBy"])
		}
		sid := e.Do(t, "POST", "/api/subscriptions", map[string]any{"serviceName": "stamp", "channel": "email", "userChannelId": "p@example.org", "confirmationRequest": map[string]any{"sendRequest": false}}).Expect(t, http.StatusOK).Map(t)["id"].(string)
		m = e.Do(t, "PATCH", "/api/subscriptions/"+sid, map[string]any{"data": map[string]any{"a": 1}}).Expect(t, http.StatusOK).Map(t)
		if by, _ := m["updatedBy"].(map[string]any); by["role"] != "SuperAdmin" {
			t.Fatalf("updatedBy %v", m["updatedBy"])
		}
	})
}
