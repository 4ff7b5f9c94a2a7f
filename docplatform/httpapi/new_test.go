package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/httpapi"
	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/internal/ratelimit"
)

func TestNewRefusesARouteWithoutAccessLevel(t *testing.T) {
	oc, _ := sso.New(sso.Config{Issuer: "http://127.0.0.1:1/realms/x", ClientID: "a", ClientSecret: "b", RedirectURL: "http://x/cb"})
	rule := ratelimit.Rule{Limit: 1, Window: time.Second}
	_, err := httpapi.New(httpapi.Options{
		OIDC: oc, Store: sqliteStore(t), Counters: ratelimit.NewMemory(0), FrontendURL: "http://front", CookieSecret: cookieSecret,
		GlobalLimit: rule, AuthLimit: rule, RefreshLimit: rule, APIKeyFailures: rule,
		Routes: []httpapi.Route{{Method: "GET", Pattern: "/forgotten", Handler: func(http.ResponseWriter, *http.Request) {}}},
	})
	if err == nil {
		t.Fatal("route without access level accepted")
	}
}
