package platform_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/config"
	"github.com/govkit/govkit/docplatform/platform"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
)

// Over a real listener: oversized request headers get the platform's JSON
// 431 with the security headers, not net/http's plain-text answer.
func TestOversizedHeadersGetAJSON431(t *testing.T) {
	idp := ssotest.New(t)
	dir := t.TempDir()
	cfg, err := config.Load(env(map[string]string{
		"SSO_AUTH_SERVER_URL": idp.Issuer + "/protocol/openid-connect", "SSO_REALM": "x",
		"SSO_CLIENT_ID": idp.ClientID, "SSO_CLIENT_SECRET": idp.ClientSecret,
		"SSO_REDIRECT_URI": "http://127.0.0.1/api/auth/callback", "FRONTEND_URL": "http://127.0.0.1:3000",
		"COOKIE_SECRET": strings.Repeat("k", 40), "DATABASE_URL": filepath.Join(dir, "p.db"), "NODE_ENV": "test",
	}), dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := platform.Start(context.Background(), cfg, "", listen(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Shutdown(ctx)
	}()
	for _, size := range []int{100 << 10, 500 << 10} {
		req, _ := http.NewRequest("GET", p.URL+"/api/auth/me", nil)
		req.Header.Set("Cookie", "access_token="+strings.Repeat("a", size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			StatusCode int    `json:"statusCode"`
			Error      string `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 431 || err != nil || body.StatusCode != 431 || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("%d KiB cookie: %s %+v %v %v", size>>10, resp.Status, body, err, resp.Header)
		}
	}
}
