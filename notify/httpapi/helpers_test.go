package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// seed creates a record through the API as super admin and returns it.
func seed(t *testing.T, e *apitest.Env, path string, body map[string]any) map[string]any {
	t.Helper()
	return e.Do(t, "POST", path, body).Expect(t, http.StatusOK).Map(t)
}

func list(t *testing.T, e *apitest.Env, path string, headers ...string) []map[string]any {
	t.Helper()
	var out []map[string]any
	e.Do(t, "GET", path, nil, headers...).Expect(t, http.StatusOK).JSON(t, &out)
	return out
}

// sub reads a subscription as super admin.
func sub(t *testing.T, e *apitest.Env, id string) map[string]any {
	t.Helper()
	subs := list(t, e, "/api/subscriptions?filter="+url.QueryEscape(`{"where":{"id":"`+id+`"}}`))
	if len(subs) != 1 {
		t.Fatalf("subscription %s: found %d", id, len(subs))
	}
	return subs[0]
}

func q(s string) string { return url.QueryEscape(s) }

func storeQuery(adminID string) mongostore.Query {
	oid, _ := notify.ParseID(adminID)
	return mongostore.Query{Filter: bson.D{{Key: "userId", Value: oid}}}
}
