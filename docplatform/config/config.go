// Package config reads the document platform's settings from the
// environment, once, at start, into a typed Config that is passed down.
//
// Variable names and defaults are the original platform's (SSO_*,
// FRONTEND_URL, NODE_ENV, THROTTLE_*, API_KEY_*) plus ours (DATABASE_URL,
// PORT, TRUSTED_PROXIES, RATE_LIMIT_IPV6_PREFIX, REDIS_URL,
// REDIS_KEY_PREFIX, COOKIE_SECRET, COOKIE_SECRET_PREVIOUS,
// DOCUMENT_STORAGE, DOCUMENT_MAX_BYTES, REVIEW_LOCK_TTL_MS, METRICS_LISTEN). When
// DOCUMENT_STORAGE is s3://bucket/prefix, the AWS tools' variables say how
// to reach the store: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, AWS_REGION
// or AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, and AWS_S3_ADDRESSING_STYLE (auto, path or virtual,
// as the AWS CLI's s3 addressing_style). Every
// problem is collected and reported together, so an operator fixes a
// deployment in one go instead of one variable per restart.
package config

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/docplatform/s3store"
	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/internal/clientip"
	"github.com/govkit/govkit/internal/ratelimit"
)

// Config is the platform's configuration.
type Config struct {
	AuthServerURL         string // SSO_AUTH_SERVER_URL
	Realm                 string // SSO_REALM
	Issuer                string // derived from the two above
	ClientID              string // SSO_CLIENT_ID
	ClientSecret          string // SSO_CLIENT_SECRET
	RedirectURI           string // SSO_REDIRECT_URI
	FrontendURL           string // FRONTEND_URL, without trailing slash
	PostLogoutRedirectURI string // SSO_POST_LOGOUT_REDIRECT_URI, default FRONTEND_URL
	NodeEnv               string // NODE_ENV
	// SecureCookies is false only when NODE_ENV is development or test.
	SecureCookies bool

	GlobalLimit  ratelimit.Rule // THROTTLE_GLOBAL_LIMIT / _TTL_MS: 100 per 60 s
	AuthLimit    ratelimit.Rule // THROTTLE_AUTH_LIMIT / _TTL_MS: 10 per 60 s (login, callback, logout each)
	RefreshLimit ratelimit.Rule // THROTTLE_AUTH_REFRESH_LIMIT / _TTL_MS: 5 per 60 s

	APIKeyMaxFailedAttempts int           // API_KEY_MAX_FAILED_ATTEMPTS: 20
	APIKeyFailedWindow      time.Duration // API_KEY_FAILED_WINDOW_MS: 60 s
	APIKeySweepInterval     time.Duration // API_KEY_SWEEP_INTERVAL_MS: 60 s
	// RateLimitIPv6Prefix (RATE_LIMIT_IPV6_PREFIX, default 64, 32..128) is
	// how many leading bits of an IPv6 client address share one budget in
	// every per-IP limit: a host is usually handed a whole /64.
	RateLimitIPv6Prefix int

	DatabaseURL    string // DATABASE_URL: postgres://… or a SQLite file; default under the data dir
	Port           int    // PORT: 3002
	TrustedProxies *clientip.Resolver
	RedisURL       string // REDIS_URL: optional shared counters
	// RedisKeyPrefix (REDIS_KEY_PREFIX, default "govkit:docplatform:")
	// lets deployments share one Redis without sharing budgets.
	RedisKeyPrefix string
	CookieSecret   string // COOKIE_SECRET: at least 32 characters
	// CookieSecretPrevious (COOKIE_SECRET_PREVIOUS) is the secret
	// COOKIE_SECRET replaces, accepted while a rotation is under way
	// (httpapi.Options.CookieSecretPrevious); "" when none is.
	CookieSecretPrevious string
	// DocumentStorage (DOCUMENT_STORAGE) is a directory, default {data
	// dir}/documents, or s3://bucket/prefix; then S3 is set.
	DocumentStorage string
	S3              *s3store.Config
	// DocumentMaxBytes bounds one uploaded document (DOCUMENT_MAX_BYTES,
	// default 25 MiB).
	DocumentMaxBytes int64
	// ReviewLockTTL is how long an idle review session holds its document
	// (REVIEW_LOCK_TTL_MS, default 15 minutes).
	ReviewLockTTL time.Duration
	// MetricsListen (METRICS_LISTEN, e.g. ":9464" or "127.0.0.1:9464")
	// is where the Prometheus metrics are served, on a listener of their
	// own; "" serves none.
	MetricsListen string
	// DependencyTimeout (DEPENDENCY_TIMEOUT_MS, default 5 s, 100 ms to
	// 60 s) bounds how long a request waits for PostgreSQL, Redis or the
	// object store before the part counts as down and the request is
	// answered 503 (see DefaultDependencyTimeout).
	DependencyTimeout time.Duration
}

// DefaultDependencyTimeout is DEPENDENCY_TIMEOUT_MS's default: a part
// that does not answer within it is answered as an outage, long before a
// client or a proxy gives up on the request.
const DefaultDependencyTimeout = 5 * time.Second

// Error lists every configuration problem found.
type Error struct{ Problems []string }

func (e *Error) Error() string {
	return "configuration:\n  " + strings.Join(e.Problems, "\n  ")
}

// MinCookieSecret is the shortest COOKIE_SECRET accepted: it keys the
// login-state cookie encryption, the API-key HMAC and the CSRF tokens'
// signatures.
const MinCookieSecret = 32

// Load reads the configuration through getenv (os.Getenv in production).
// dataDir holds the defaults for DATABASE_URL and DOCUMENT_STORAGE.
func Load(getenv func(string) string, dataDir string) (Config, error) {
	var problems []string
	req := func(name string) string {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			problems = append(problems, name+": required")
		}
		return v
	}
	absURL := func(name, v string) {
		if v == "" {
			return
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, name+": must be an absolute http(s) URL")
		}
	}
	num := func(name string, def int) int {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			problems = append(problems, fmt.Sprintf("%s: must be a positive integer, got %q", name, v))
			return def
		}
		return n
	}
	ms := func(name string, def int) time.Duration { return time.Duration(num(name, def)) * time.Millisecond }

	var c Config
	c.AuthServerURL = req("SSO_AUTH_SERVER_URL")
	c.Realm = req("SSO_REALM")
	c.ClientID = req("SSO_CLIENT_ID")
	c.ClientSecret = req("SSO_CLIENT_SECRET")
	c.RedirectURI = req("SSO_REDIRECT_URI")
	c.FrontendURL = strings.TrimRight(req("FRONTEND_URL"), "/")
	c.CookieSecret = req("COOKIE_SECRET")
	absURL("SSO_AUTH_SERVER_URL", c.AuthServerURL)
	absURL("SSO_REDIRECT_URI", c.RedirectURI)
	absURL("FRONTEND_URL", c.FrontendURL)
	if c.CookieSecret != "" && len(c.CookieSecret) < MinCookieSecret {
		problems = append(problems, fmt.Sprintf("COOKIE_SECRET: must be at least %d characters", MinCookieSecret))
	}
	c.CookieSecretPrevious = strings.TrimSpace(getenv("COOKIE_SECRET_PREVIOUS"))
	switch {
	case c.CookieSecretPrevious == "":
	case len(c.CookieSecretPrevious) < MinCookieSecret:
		problems = append(problems, fmt.Sprintf("COOKIE_SECRET_PREVIOUS: must be at least %d characters (or empty)", MinCookieSecret))
	case c.CookieSecretPrevious == c.CookieSecret:
		problems = append(problems, "COOKIE_SECRET_PREVIOUS: is COOKIE_SECRET itself; it must be the secret COOKIE_SECRET replaces (or empty)")
	}
	if c.AuthServerURL != "" {
		c.Issuer = sso.IssuerFrom(c.AuthServerURL, c.Realm)
	}
	c.PostLogoutRedirectURI = strings.TrimSpace(getenv("SSO_POST_LOGOUT_REDIRECT_URI"))
	absURL("SSO_POST_LOGOUT_REDIRECT_URI", c.PostLogoutRedirectURI)
	if c.PostLogoutRedirectURI == "" {
		c.PostLogoutRedirectURI = c.FrontendURL
	}
	c.NodeEnv = strings.TrimSpace(getenv("NODE_ENV"))
	c.SecureCookies = c.NodeEnv != "development" && c.NodeEnv != "test"

	c.GlobalLimit = ratelimit.Rule{Limit: num("THROTTLE_GLOBAL_LIMIT", 100), Window: ms("THROTTLE_GLOBAL_TTL_MS", 60000)}
	c.AuthLimit = ratelimit.Rule{Limit: num("THROTTLE_AUTH_LIMIT", 10), Window: ms("THROTTLE_AUTH_TTL_MS", 60000)}
	c.RefreshLimit = ratelimit.Rule{Limit: num("THROTTLE_AUTH_REFRESH_LIMIT", 5), Window: ms("THROTTLE_AUTH_REFRESH_TTL_MS", 60000)}
	c.APIKeyMaxFailedAttempts = num("API_KEY_MAX_FAILED_ATTEMPTS", 20)
	c.APIKeyFailedWindow = ms("API_KEY_FAILED_WINDOW_MS", 60000)
	c.APIKeySweepInterval = ms("API_KEY_SWEEP_INTERVAL_MS", 60000)
	c.RateLimitIPv6Prefix = num("RATE_LIMIT_IPV6_PREFIX", 64)
	if c.RateLimitIPv6Prefix < 32 || c.RateLimitIPv6Prefix > 128 {
		problems = append(problems, fmt.Sprintf("RATE_LIMIT_IPV6_PREFIX: must be a prefix length from 32 to 128, got %d", c.RateLimitIPv6Prefix))
		c.RateLimitIPv6Prefix = 64
	}

	c.DatabaseURL = strings.TrimSpace(getenv("DATABASE_URL"))
	if c.DatabaseURL == "" {
		c.DatabaseURL = filepath.Join(dataDir, "docplatform.db")
	}
	c.Port = num("PORT", 3002)
	if c.Port > 65535 {
		problems = append(problems, fmt.Sprintf("PORT: must be at most 65535, got %d", c.Port))
	}
	tp, err := clientip.Parse(getenv("TRUSTED_PROXIES"))
	if err != nil {
		problems = append(problems, "TRUSTED_PROXIES: "+err.Error())
	}
	c.TrustedProxies = tp
	c.RedisURL = strings.TrimSpace(getenv("REDIS_URL"))
	if c.RedisURL != "" {
		if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
			problems = append(problems, "REDIS_URL: must be a redis:// or rediss:// URL")
		}
	}
	c.RedisKeyPrefix = getenv("REDIS_KEY_PREFIX")
	if c.RedisKeyPrefix == "" {
		c.RedisKeyPrefix = "govkit:docplatform:"
	}
	c.DocumentStorage = strings.TrimSpace(getenv("DOCUMENT_STORAGE"))
	if c.DocumentStorage == "" {
		c.DocumentStorage = filepath.Join(dataDir, "documents")
	}
	if strings.Contains(c.DocumentStorage, "://") {
		s3, err := loadS3(getenv, c.DocumentStorage)
		problems = append(problems, err...)
		c.S3 = s3
	}
	c.DocumentMaxBytes = int64(num("DOCUMENT_MAX_BYTES", 25<<20))
	c.ReviewLockTTL = ms("REVIEW_LOCK_TTL_MS", 15*60*1000)
	c.MetricsListen = strings.TrimSpace(getenv("METRICS_LISTEN"))
	if c.MetricsListen != "" {
		if _, port, err := net.SplitHostPort(c.MetricsListen); err != nil || port == "" {
			problems = append(problems, fmt.Sprintf("METRICS_LISTEN: must be host:port or :port, got %q", c.MetricsListen))
		}
	}
	c.DependencyTimeout = ms("DEPENDENCY_TIMEOUT_MS", int(DefaultDependencyTimeout/time.Millisecond))
	if c.DependencyTimeout < 100*time.Millisecond || c.DependencyTimeout > time.Minute {
		problems = append(problems, "DEPENDENCY_TIMEOUT_MS: must be between 100 and 60000")
	}
	if c.S3 != nil {
		c.S3.Timeout = c.DependencyTimeout
	}
	if len(problems) > 0 {
		return c, &Error{Problems: problems}
	}
	return c, nil
}

// loadS3 reads the object store's settings for DOCUMENT_STORAGE=s3://….
func loadS3(getenv func(string) string, storage string) (*s3store.Config, []string) {
	var problems []string
	bucket, prefix, err := s3store.ParseURL(storage)
	if err != nil {
		problems = append(problems, "DOCUMENT_STORAGE: "+err.Error()+" (a directory, or s3://bucket/prefix)")
	}
	first := func(names ...string) (string, string) {
		for _, n := range names {
			if v := strings.TrimSpace(getenv(n)); v != "" {
				return n, v
			}
		}
		return "", ""
	}
	c := &s3store.Config{Bucket: bucket, Prefix: prefix}
	var name string
	name, c.Endpoint = first("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
			problems = append(problems, name+": must be an http(s) URL without path, credentials or query")
		}
	}
	_, c.Region = first("AWS_REGION", "AWS_DEFAULT_REGION")
	c.AccessKeyID = strings.TrimSpace(getenv("AWS_ACCESS_KEY_ID"))
	c.SecretAccessKey = strings.TrimSpace(getenv("AWS_SECRET_ACCESS_KEY"))
	c.SessionToken = strings.TrimSpace(getenv("AWS_SESSION_TOKEN"))
	if (c.AccessKeyID == "") != (c.SecretAccessKey == "") {
		problems = append(problems, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: set both or neither")
	}
	c.AddressingStyle = strings.ToLower(strings.TrimSpace(getenv("AWS_S3_ADDRESSING_STYLE")))
	switch c.AddressingStyle {
	case "", s3store.AddressingAuto, s3store.AddressingPath, s3store.AddressingVirtual:
	default:
		problems = append(problems, "AWS_S3_ADDRESSING_STYLE: must be auto, path or virtual")
	}
	return c, problems
}

// DeriveKey derives a 32-byte key for one purpose from COOKIE_SECRET, so
// that the cookie cipher, the API-key HMAC and the CSRF signatures never
// share a key.
func DeriveKey(secret, purpose string) []byte {
	k, err := hkdf.Key(sha256.New, []byte(secret), nil, "govkit docplatform "+purpose, 32)
	if err != nil {
		panic(err) // only for lengths hkdf cannot produce
	}
	return k
}
