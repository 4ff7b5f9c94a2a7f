package upgrade

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/config"
)

// Running the five steps in order on a v1 deployment gives files that the
// service's own config loader accepts (it refuses every renamed key of an
// older version), with the deployment's settings in force. NODE_ENV is
// production, not test, so the local files are read.
func TestChainFromV1LoadsWithTheServiceConfigLoader(t *testing.T) {
	dir := copyTree(t, "testdata/chain/v1")
	environ := map[string]string{"NODE_ENV": "production", "NOTIFYBC_NODE_ROLE": "slave"}
	for from := 1; from <= 5; from++ {
		code, out, errOut := runMain(t, environ, "--dir", dir, "--from", strconv.Itoa(from), "--to", strconv.Itoa(from+1))
		if code != ExitOK {
			t.Fatalf("step %d: exit %d\n%s%s", from, code, out, errOut)
		}
		if from == 5 && !strings.Contains(out, "NOTIFYBC_NODE_ROLE is `slave`: set it to `secondary`") {
			t.Errorf("v5→v6 checklist does not tailor the node role step:\n%s", out)
		}
	}

	load := func(env map[string]string) *config.Config {
		t.Helper()
		c, err := config.Load(config.Options{Dir: filepath.Join(dir, "src"), NodeEnv: "production", Env: env, JSPoolSize: 1})
		if err != nil {
			t.Fatalf("the service refuses the upgraded files: %v", err)
		}
		return c
	}
	c := load(map[string]string{
		"NOTIFY_HTTP_HOST": "https://prod.example.gov", "SWIFT_ACCOUNT_KEY": "account-key",
		"DATABASE_SERVICE_NAME": "db.example.gov", "MONGODB_USER": "notify", "MONGODB_PASSWORD": "pw", "MONGODB_DATABASE": "nb",
		"PORT": "4321", "HOST": "127.0.0.1",
	})
	for _, w := range c.Warnings {
		t.Errorf("warning from the loader: %s", w)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"httpHost comes from the environment file's process.env read", c.HTTPHost, "https://prod.example.gov"},
		{"adminIps", strings.Join(c.AdminIPs, ","), "127.0.0.1,10.0.0.0/8"},
		{"trustedReverseProxyIps", strings.Join(c.TrustedReverseProxyIPs, ","), "127.0.0.1"},
		{"host from the environment file's process.env read", c.Host, "127.0.0.1"},
		{"port from the environment file's process.env read", c.Port, 4321},
		{"smtp host of the environment file wins", c.Email.SMTP.Host, "smtp.prod.example.gov"},
		{"smtp port of the local file stays", c.Email.SMTP.Port, 25},
		{"smtp pool", c.Email.SMTP.Pool, true},
		{"inbound SMTP domain", c.Email.InboundSMTPServer.Domain, "notify.example.gov"},
		{"inbound SMTP port", c.Email.InboundSMTPServer.ListeningSMTPPort, 2525},
		{"bounce threshold moved to email.bounce", c.Email.Bounce.UnsubThreshold, 3},
		{"handleBounce became email.bounce.enabled", c.Email.Bounce.Enabled, true},
		{"handleListUnsubscribeByEmail became email.listUnsubscribeByEmail.enabled", c.Email.ListUnsubscribeByEmail.Enabled, false},
		{"smsServiceProvider became sms.provider", c.SMS.Provider, "swift"},
		{"swift settings moved under providerSettings", c.SMS.ProviderSettings.Swift.AccountKey, "account-key"},
		{"swift shared key", c.SMS.ProviderSettings.Swift.NotifyBCSwiftKey, "swift-shared-key"},
		{"logSuccessfulBroadcastDispatches became guaranteed processing", c.Notification.GuaranteedBroadcastPushDispatchProcessing, true},
		{"chunk size", c.Notification.BroadcastSubscriberChunkSize, 500},
		{"datasource uri folded from hostname, port and database", c.Datasource.URI, "mongodb://db.example.gov:27017/nb"},
		{"datasource user", c.Datasource.Options["user"], "notify"},
		{"datasource password became pass", c.Datasource.Options["pass"], "pw"},
		{"middleware initial became all", len(c.Middleware.All["compression"].Params) == 0 && c.Middleware.All["compression"].Enabled, true},
		{"middleware routes:before became apiOnly", c.Middleware.APIOnly["morgan"].Enabled, false},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if _, ok := c.Middleware.All["compression"]; !ok {
		t.Error("middleware all lacks compression")
	}
	if c.OIDC == nil || c.OIDC.IsAdmin == nil {
		t.Fatal("oidc.isAdmin did not survive")
	}
	for _, tc := range []struct {
		roles []any
		want  bool
	}{{[]any{"admin"}, true}, {[]any{"user"}, false}} {
		got, err := c.Call(context.Background(), "oidc.isAdmin", map[string]any{"roles": tc.roles})
		if err != nil || got != tc.want {
			t.Errorf("oidc.isAdmin(%v) = %v, %v; want %v", tc.roles, got, err, tc.want)
		}
	}

	// Without the environment variables the local values and the LoopBack
	// defaults apply, as they did in v1.
	c = load(map[string]string{})
	if c.HTTPHost != "https://notify.example.gov" {
		t.Errorf("httpHost without NOTIFY_HTTP_HOST: got %q, want the local file's", c.HTTPHost)
	}
	if c.Host != "0.0.0.0" || c.Port != 3000 {
		t.Errorf("listening address without HOST and PORT: got %s:%d, want the defaults the environment file names", c.Host, c.Port)
	}
	if c.Datasource.URI != "mongodb://localhost:27017/notify-bc" {
		t.Errorf("datasource uri without environment: got %q", c.Datasource.URI)
	}
}
