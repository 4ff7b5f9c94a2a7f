package config_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func valid() map[string]string {
	return map[string]string{
		"SSO_AUTH_SERVER_URL": "https://sso.example.org/auth", "SSO_REALM": "standard",
		"SSO_CLIENT_ID": "platform", "SSO_CLIENT_SECRET": "s", "SSO_REDIRECT_URI": "https://app.example.org/api/auth/callback",
		"FRONTEND_URL": "https://app.example.org/", "COOKIE_SECRET": strings.Repeat("x", 32),
	}
}

func TestMissingRequiredAreAllListed(t *testing.T) {
	_, err := config.Load(env(nil), "/data")
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v", err)
	}
	for _, name := range []string{"SSO_AUTH_SERVER_URL", "SSO_REALM", "SSO_CLIENT_ID", "SSO_CLIENT_SECRET", "SSO_REDIRECT_URI", "FRONTEND_URL", "COOKIE_SECRET"} {
		if !strings.Contains(err.Error(), name+": required") {
			t.Errorf("%s not listed in:\n%v", name, err)
		}
	}
}

func TestDefaults(t *testing.T) {
	c, err := config.Load(env(valid()), "/data")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"issuer is {server}/realms/{realm}", c.Issuer, "https://sso.example.org/auth/realms/standard"},
		{"frontend URL loses its trailing slash", c.FrontendURL, "https://app.example.org"},
		{"post-logout target defaults to the frontend", c.PostLogoutRedirectURI, "https://app.example.org"},
		{"cookies are Secure without NODE_ENV", c.SecureCookies, true},
		{"global limit 100", c.GlobalLimit.Limit, 100},
		{"global window 60 s", c.GlobalLimit.Window, time.Minute},
		{"auth limit 10", c.AuthLimit.Limit, 10},
		{"refresh limit 5", c.RefreshLimit.Limit, 5},
		{"API-key failures 20", c.APIKeyMaxFailedAttempts, 20},
		{"API-key failure window 60 s", c.APIKeyFailedWindow, time.Minute},
		{"API-key sweep 60 s", c.APIKeySweepInterval, time.Minute},
		{"IPv6 clients share a budget per /64", c.RateLimitIPv6Prefix, 64},
		{"port 3002", c.Port, 3002},
		{"SQLite under the data dir", c.DatabaseURL, "/data/docplatform.db"},
		{"documents under the data dir", c.DocumentStorage, "/data/documents"},
		{"uploads up to 25 MiB", c.DocumentMaxBytes, int64(25 << 20)},
		{"review locks 15 min", c.ReviewLockTTL, 15 * time.Minute},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestValues(t *testing.T) {
	cases := []struct {
		name    string
		set     map[string]string
		problem string
		check   func(config.Config) bool
	}{
		{"NODE_ENV development drops Secure", map[string]string{"NODE_ENV": "development"}, "", func(c config.Config) bool { return !c.SecureCookies }},
		{"NODE_ENV test drops Secure", map[string]string{"NODE_ENV": "test"}, "", func(c config.Config) bool { return !c.SecureCookies }},
		{"NODE_ENV production keeps Secure", map[string]string{"NODE_ENV": "production"}, "", func(c config.Config) bool { return c.SecureCookies }},
		{"throttle values are read in ms", map[string]string{"THROTTLE_AUTH_LIMIT": "3", "THROTTLE_AUTH_TTL_MS": "1500"}, "", func(c config.Config) bool {
			return c.AuthLimit.Limit == 3 && c.AuthLimit.Window == 1500*time.Millisecond
		}},
		{"full endpoint URL gives the issuer without /protocol/openid-connect", map[string]string{"SSO_AUTH_SERVER_URL": "https://sso.example.org/realms/x/protocol/openid-connect"}, "", func(c config.Config) bool {
			return c.Issuer == "https://sso.example.org/realms/x"
		}},
		{"non-numeric limit is named", map[string]string{"THROTTLE_GLOBAL_LIMIT": "lots"}, "THROTTLE_GLOBAL_LIMIT: must be a positive integer", nil},
		{"zero window is refused", map[string]string{"API_KEY_FAILED_WINDOW_MS": "0"}, "API_KEY_FAILED_WINDOW_MS: must be a positive integer", nil},
		{"bad trusted proxy is named", map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8, nope"}, "TRUSTED_PROXIES:", nil},
		{"short cookie secret is refused", map[string]string{"COOKIE_SECRET": "short"}, "COOKIE_SECRET: must be at least 32 characters", nil},
		{"relative frontend URL is refused", map[string]string{"FRONTEND_URL": "/app"}, "FRONTEND_URL: must be an absolute http(s) URL", nil},
		{"REDIS_URL must be redis://", map[string]string{"REDIS_URL": "http://x"}, "REDIS_URL:", nil},
		{"port above 65535 is refused", map[string]string{"PORT": "70000"}, "PORT:", nil},
		{"IPv6 budget prefix 48 is read", map[string]string{"RATE_LIMIT_IPV6_PREFIX": "48"}, "", func(c config.Config) bool { return c.RateLimitIPv6Prefix == 48 }},
		{"IPv6 budget prefix 128 keys whole addresses", map[string]string{"RATE_LIMIT_IPV6_PREFIX": "128"}, "", func(c config.Config) bool { return c.RateLimitIPv6Prefix == 128 }},
		{"IPv6 budget prefix below 32 is refused", map[string]string{"RATE_LIMIT_IPV6_PREFIX": "31"}, "RATE_LIMIT_IPV6_PREFIX: must be a prefix length from 32 to 128, got 31", nil},
		{"IPv6 budget prefix above 128 is refused", map[string]string{"RATE_LIMIT_IPV6_PREFIX": "129"}, "RATE_LIMIT_IPV6_PREFIX: must be a prefix length from 32 to 128, got 129", nil},
		{"IPv6 budget prefix that is not a number is named", map[string]string{"RATE_LIMIT_IPV6_PREFIX": "/64"}, "RATE_LIMIT_IPV6_PREFIX: must be a positive integer", nil},
		{"a directory is not object storage", map[string]string{"DOCUMENT_STORAGE": "/srv/docs"}, "", func(c config.Config) bool {
			return c.DocumentStorage == "/srv/docs" && c.S3 == nil
		}},
		{"s3:// takes the AWS variables, the S3-specific endpoint first", map[string]string{
			"DOCUMENT_STORAGE": "s3://govkit-docs/prod", "AWS_ENDPOINT_URL": "https://other.example", "AWS_ENDPOINT_URL_S3": "http://minio:9000",
			"AWS_DEFAULT_REGION": "ca-central-1", "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_S3_ADDRESSING_STYLE": "Path",
		}, "", func(c config.Config) bool {
			s := c.S3
			return s != nil && s.Bucket == "govkit-docs" && s.Prefix == "prod/" && s.Endpoint == "http://minio:9000" &&
				s.Region == "ca-central-1" && s.AccessKeyID == "AKID" && s.SecretAccessKey == "secret" && s.AddressingStyle == "path"
		}},
		{"AWS_REGION wins over AWS_DEFAULT_REGION", map[string]string{"DOCUMENT_STORAGE": "s3://docs", "AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "eu-west-1"}, "", func(c config.Config) bool {
			return c.S3.Region == "us-west-2" && c.S3.Prefix == "" && c.S3.AccessKeyID == ""
		}},
		{"a bad bucket name is named", map[string]string{"DOCUMENT_STORAGE": "s3://Bad_Bucket/x"}, "DOCUMENT_STORAGE: bucket", nil},
		{"another scheme is refused", map[string]string{"DOCUMENT_STORAGE": "gs://docs"}, "DOCUMENT_STORAGE: must start with s3://", nil},
		{"an endpoint with credentials is refused", map[string]string{"DOCUMENT_STORAGE": "s3://docs", "AWS_ENDPOINT_URL": "http://k:s@minio:9000"}, "AWS_ENDPOINT_URL: must be", nil},
		{"a key id without its secret is refused", map[string]string{"DOCUMENT_STORAGE": "s3://docs", "AWS_ACCESS_KEY_ID": "AKID"}, "AWS_SECRET_ACCESS_KEY: set both or neither", nil},
		{"an unknown addressing style is refused", map[string]string{"DOCUMENT_STORAGE": "s3://docs", "AWS_S3_ADDRESSING_STYLE": "dns"}, "AWS_S3_ADDRESSING_STYLE:", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := valid()
			for k, v := range tc.set {
				m[k] = v
			}
			c, err := config.Load(env(m), "/data")
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("error %v, want one containing %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("unexpected config %+v", c)
			}
		})
	}
}

func TestDeriveKeySeparatesPurposes(t *testing.T) {
	a := config.DeriveKey("secret", "login-state")
	b := config.DeriveKey("secret", "api-key")
	if len(a) != 32 || bytes.Equal(a, b) || !bytes.Equal(a, config.DeriveKey("secret", "login-state")) {
		t.Fatal("keys are not 32 bytes, distinct per purpose and stable")
	}
}

func TestCookieSecretPreviousAndMetricsListen(t *testing.T) {
	for _, c := range []struct {
		name, key, value, problem string
	}{
		{"a previous secret too short is refused", "COOKIE_SECRET_PREVIOUS", "short", "COOKIE_SECRET_PREVIOUS: must be at least"},
		{"the current secret as the previous one is refused", "COOKIE_SECRET_PREVIOUS", "", "COOKIE_SECRET_PREVIOUS: is COOKIE_SECRET itself"},
		{"a metrics address without a port is refused", "METRICS_LISTEN", "localhost", "METRICS_LISTEN"},
		{"a previous secret of 32 characters is taken", "COOKIE_SECRET_PREVIOUS", strings.Repeat("p", 32), ""},
		{"a metrics port alone is taken", "METRICS_LISTEN", ":9464", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			vars := valid()
			v := c.value
			if v == "" && c.problem != "" {
				v = vars["COOKIE_SECRET"]
			}
			vars[c.key] = v
			cfg, err := config.Load(env(vars), t.TempDir())
			if c.problem == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.key == "COOKIE_SECRET_PREVIOUS" && cfg.CookieSecretPrevious != v || c.key == "METRICS_LISTEN" && cfg.MetricsListen != v {
					t.Fatalf("%s not taken: %+v", c.key, cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.problem) {
				t.Fatalf("err %v, want %q", err, c.problem)
			}
		})
	}
}
