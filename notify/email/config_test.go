package email_test

import (
	"crypto/tls"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/email"
)

func fromJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseSMTP(t *testing.T) {
	cases := []struct {
		name string
		raw  map[string]any
		want email.SMTPConfig
	}{
		{
			name: "the documented production example",
			raw:  fromJSON(t, `{"host":"smtp.example.org","port":25,"pool":true,"tls":{"rejectUnauthorized":false}}`),
			want: email.SMTPConfig{Host: "smtp.example.org", Port: 25, TLS: email.TLSOptions{InsecureSkipVerify: true}},
		},
		{
			name: "pool options, timeouts in milliseconds and auth",
			raw: fromJSON(t, `{"host":"h","secure":true,"maxConnections":10,"maxMessages":500,
				"connectionTimeout":3000,"socketTimeout":60000,"auth":{"user":"u","pass":"p"},"authMethod":"login",
				"name":"notify.example.org","tls":{"servername":"mail.example.org","minVersion":"TLSv1.3"}}`),
			want: email.SMTPConfig{Host: "h", Secure: true, MaxConnections: 10, MaxMessages: 500,
				ConnectionTimeout: 3 * time.Second, SocketTimeout: time.Minute, User: "u", Pass: "p", AuthMethod: "LOGIN",
				Name: "notify.example.org", TLS: email.TLSOptions{ServerName: "mail.example.org", MinVersion: tls.VersionTLS13}},
		},
		{
			name: "pool false turns pooling off",
			raw:  map[string]any{"host": "h", "pool": false},
			want: email.SMTPConfig{Host: "h", DisablePool: true},
		},
		{
			name: "maxMessages Infinity from a .js config means no limit",
			raw:  map[string]any{"host": "h", "maxMessages": math.Inf(1)},
			want: email.SMTPConfig{Host: "h", MaxMessages: -1},
		},
		{
			name: "numbers from goja and numeric strings are accepted",
			raw:  map[string]any{"host": "h", "port": int64(2525), "maxConnections": "3"},
			want: email.SMTPConfig{Host: "h", Port: 2525, MaxConnections: 3},
		},
		{
			name: "requireTLS and ignoreTLS",
			raw:  map[string]any{"host": "h", "requireTLS": true, "ignoreTLS": false},
			want: email.SMTPConfig{Host: "h", RequireTLS: true},
		},
		{
			name: "no smtp section means no host",
			raw:  nil,
			want: email.SMTPConfig{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, warnings, err := email.ParseSMTP(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if len(warnings) != 0 {
				t.Errorf("unexpected warnings %q", warnings)
			}
		})
	}
}

func TestParseSMTPWarnings(t *testing.T) {
	cases := []struct {
		name string
		raw  map[string]any
		want string
	}{
		{"service names are not resolved", map[string]any{"host": "h", "service": "gmail"}, "email.smtp.service: ignored"},
		{"direct delivery is not supported", map[string]any{"host": "h", "direct": true}, "email.smtp.direct: ignored"},
		{"dkim is not supported", map[string]any{"host": "h", "dkim": map[string]any{}}, "email.smtp.dkim: ignored"},
		{"pool rate limits point at email.throttle", map[string]any{"host": "h", "rateLimit": 5}, "use email.throttle"},
		{"unknown keys are named", map[string]any{"host": "h", "hots": "x"}, "email.smtp.hots: unknown option"},
		{"tls ciphers are ignored", map[string]any{"host": "h", "tls": map[string]any{"ciphers": "SSLv3"}}, "email.smtp.tls.ciphers: ignored"},
		{"options without a host do nothing", map[string]any{"port": 25}, "email.smtp.host: not set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, warnings, err := email.ParseSMTP(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(warnings, "\n"), tc.want) {
				t.Errorf("warnings %q do not contain %q", warnings, tc.want)
			}
		})
	}
}

func TestParseSMTPErrors(t *testing.T) {
	cases := []struct {
		name string
		raw  map[string]any
		want []string
	}{
		{"port must be a port number", map[string]any{"host": "h", "port": 70000}, []string{"email.smtp.port"}},
		{"secure must be a boolean", map[string]any{"host": "h", "secure": "yes"}, []string{"email.smtp.secure"}},
		{"auth must be an object", map[string]any{"host": "h", "auth": "u:p"}, []string{"email.smtp.auth"}},
		{"auth.pass needs auth.user", map[string]any{"host": "h", "auth": map[string]any{"pass": "p"}}, []string{"email.smtp.auth.user"}},
		{"OAuth2 token fetching is refused", map[string]any{"host": "h", "auth": map[string]any{"type": "OAuth2", "user": "u"}}, []string{"email.smtp.auth.type"}},
		{"unknown auth method", map[string]any{"host": "h", "authMethod": "NTLMv9"}, []string{"email.smtp.authMethod"}},
		{"bad tls version", map[string]any{"host": "h", "tls": map[string]any{"minVersion": "SSLv3"}}, []string{"email.smtp.tls.minVersion"}},
		{"ca must hold a certificate", map[string]any{"host": "h", "tls": map[string]any{"ca": "not pem"}}, []string{"email.smtp.tls.ca[0]"}},
		{"every error is reported at once", map[string]any{"host": 5, "port": "x", "maxConnections": 0}, []string{"email.smtp.host", "email.smtp.port", "email.smtp.maxConnections"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := email.ParseSMTP(tc.raw)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}
