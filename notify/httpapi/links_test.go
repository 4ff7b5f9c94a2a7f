package httpapi_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// TestLinksNeverPointAtTheCallersHost reproduces finding 7 of the second
// hostile review over real HTTP: an anonymous subscriber who sends
// Host: evil.example must not get the service to mail a confirmation
// whose links point at evil.example. Links use httpHost when it is set;
// otherwise the request's Host when it is one of the service's names,
// else the listen address, with a warning.
func TestLinksNeverPointAtTheCallersHost(t *testing.T) {
	body := map[string]any{"serviceName": "news", "channel": "email", "userChannelId": "reader@example.com"}
	template := map[string]any{"subscription": map[string]any{"confirmationRequest": map[string]any{"email": map[string]any{"textBody": "Confirm: {subscription_confirmation_url}"}}}}
	confirm := func(t *testing.T, e *apitest.Env, headers ...string) string {
		t.Helper()
		before := len(e.Mail.Mails())
		e.Do(t, "POST", "/api/subscriptions", body, append(append([]string{}, apitest.Anonymous...), headers...)...).Expect(t, http.StatusOK)
		return e.WaitMail(t, before+1)[before].Text
	}

	t.Run("without httpHost", func(t *testing.T) {
		var log syncBuffer
		e := apitest.Start(t, apitest.Options{Config: []map[string]any{template, {"port": 3456.0}},
			Logger: slog.New(slog.NewTextHandler(&log, nil))})
		t.Run("a foreign Host is not in the links: the listen address is, and a warning says so", func(t *testing.T) {
			text := confirm(t, e, "Host", "evil.example")
			if strings.Contains(text, "evil.example") || !strings.Contains(text, "Confirm: http://localhost:3456/api/subscriptions/") {
				t.Fatalf("mail text %q", text)
			}
			if !strings.Contains(log.String(), "not one of the service's names") {
				t.Fatalf("no warning in the log:\n%s", log.String())
			}
		})
		t.Run("the service's own name is (control)", func(t *testing.T) {
			if text := confirm(t, e); !strings.Contains(text, "Confirm: "+e.URL+"/api/subscriptions/") {
				t.Fatalf("mail text %q", text)
			}
		})
	})
	t.Run("with httpHost links use it whatever the Host", func(t *testing.T) {
		e := apitest.Start(t, apitest.Options{Config: []map[string]any{template, {"httpHost": "https://notify.example.org"}}})
		for _, h := range [][]string{{"Host", "evil.example"}, nil} {
			if text := confirm(t, e, h...); !strings.Contains(text, "Confirm: https://notify.example.org/api/subscriptions/") {
				t.Fatalf("mail text %q", text)
			}
		}
	})
}
