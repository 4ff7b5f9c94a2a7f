package email

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults for settings the original leaves to nodemailer; the values are
// nodemailer's own, so an unchanged config behaves the same.
const (
	DefaultMaxConnections    = 5
	DefaultMaxMessages       = 100
	DefaultConnectionTimeout = 2 * time.Minute
	DefaultSocketTimeout     = 10 * time.Minute
)

// SMTPConfig is the part of the original's `email.smtp` (nodemailer SMTP
// transport options) that govkit honours. The zero value of every field is
// the nodemailer default, so a config that sets only Host works.
type SMTPConfig struct {
	Host string
	// Port defaults to 465 when Secure, else 587 (nodemailer's defaults).
	Port int
	// Secure opens TLS from the first byte (SMTPS); otherwise STARTTLS is
	// used when the server offers it, unless IgnoreTLS.
	Secure     bool
	IgnoreTLS  bool
	RequireTLS bool

	// User and Pass are auth.user and auth.pass. Credentials are only sent
	// over TLS or to a loopback host.
	User string
	Pass string
	// AuthMethod is PLAIN, LOGIN, CRAM-MD5 or XOAUTH2; empty picks the first
	// of PLAIN, LOGIN, CRAM-MD5 that the server offers.
	AuthMethod string

	// DisablePool is `pool: false`: each connection carries one message.
	// Pooling is on otherwise (the original's docs recommend `pool: true`).
	DisablePool bool
	// MaxConnections bounds the connections open at once (default 5).
	MaxConnections int
	// MaxMessages is how many messages one connection carries before it is
	// replaced (default 100); negative means no limit (`Infinity` in .js).
	MaxMessages int

	// ConnectionTimeout bounds opening the TCP connection to one address.
	ConnectionTimeout time.Duration
	// SocketTimeout bounds each SMTP command, the greeting included.
	SocketTimeout time.Duration

	// Name is the host name sent in EHLO (default: this machine's name).
	Name string
	// LocalAddress is the local IP address to connect from.
	LocalAddress string

	TLS TLSOptions
}

// TLSOptions are the `email.smtp.tls` settings honoured.
type TLSOptions struct {
	// InsecureSkipVerify is `rejectUnauthorized: false`.
	InsecureSkipVerify bool
	// ServerName overrides the name the certificate is checked against
	// (default: Host).
	ServerName string
	// MinVersion is `minVersion` ("TLSv1.2", …); 0 means TLS 1.2.
	MinVersion uint16
	// CA holds PEM certificates trusted instead of the system roots.
	CA []string
	// Cert and Key are a PEM client certificate and key.
	Cert string
	Key  string
}

func (c SMTPConfig) withDefaults() SMTPConfig {
	if c.Port == 0 {
		c.Port = 587
		if c.Secure {
			c.Port = 465
		}
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultMaxConnections
	}
	if c.MaxMessages == 0 {
		c.MaxMessages = DefaultMaxMessages
	}
	if c.DisablePool {
		c.MaxMessages = 1
	}
	if c.ConnectionTimeout <= 0 {
		c.ConnectionTimeout = DefaultConnectionTimeout
	}
	if c.SocketTimeout <= 0 {
		c.SocketTimeout = DefaultSocketTimeout
	}
	return c
}

func (c SMTPConfig) tlsConfig() (*tls.Config, error) {
	t := &tls.Config{
		ServerName:         c.TLS.ServerName,
		InsecureSkipVerify: c.TLS.InsecureSkipVerify, //nolint:gosec // the operator's explicit rejectUnauthorized: false
		MinVersion:         c.TLS.MinVersion,
	}
	if t.ServerName == "" {
		t.ServerName = c.Host
	}
	if t.MinVersion == 0 {
		t.MinVersion = tls.VersionTLS12
	}
	if len(c.TLS.CA) > 0 {
		pool := x509.NewCertPool()
		for i, pem := range c.TLS.CA {
			if !pool.AppendCertsFromPEM([]byte(pem)) {
				return nil, fmt.Errorf("email.smtp.tls.ca[%d]: no PEM certificate found", i)
			}
		}
		t.RootCAs = pool
	}
	if c.TLS.Cert != "" || c.TLS.Key != "" {
		pair, err := tls.X509KeyPair([]byte(c.TLS.Cert), []byte(c.TLS.Key))
		if err != nil {
			return nil, fmt.Errorf("email.smtp.tls.cert/key: %w", err)
		}
		t.Certificates = []tls.Certificate{pair}
	}
	return t, nil
}

// ignoredSMTPKeys are nodemailer options govkit accepts but does not act
// on, each with the reason given in the start-up warning.
var ignoredSMTPKeys = map[string]string{
	"service":                    "well-known service names are not resolved; set host and port",
	"direct":                     "direct delivery to recipients' MX hosts is not supported",
	"dkim":                       "DKIM signing is not supported; sign at your relay",
	"proxy":                      "connecting through a proxy is not supported",
	"rateDelta":                  "use email.throttle instead",
	"rateLimit":                  "use email.throttle instead",
	"greetingTimeout":            "the greeting is read under socketTimeout",
	"dnsTimeout":                 "host names are resolved under connectionTimeout",
	"logger":                     "govkit logs through its own logger",
	"debug":                      "govkit logs through its own logger",
	"transactionLog":             "govkit logs through its own logger",
	"lmtp":                       "LMTP is not supported",
	"socket":                     "custom sockets are not supported",
	"connection":                 "custom sockets are not supported",
	"opportunisticTLS":           "STARTTLS is already used whenever offered",
	"disableFileAccess":          "messages never read files",
	"disableUrlAccess":           "messages never fetch URLs",
	"requireTLSExtensionEnabled": "REQUIRETLS is not supported",
}

var ignoredTLSKeys = map[string]string{
	"ciphers":             "Go's TLS cipher suites are used",
	"maxVersion":          "the highest version both sides support is used",
	"secureProtocol":      "set minVersion instead",
	"passphrase":          "encrypted keys are not supported",
	"pfx":                 "use cert and key in PEM",
	"checkServerIdentity": "functions are not supported; use servername",
	"ALPNProtocols":       "not used by SMTP",
	"session":             "TLS session reuse is automatic",
}

// ParseSMTP reads the original's `email.smtp` object (as decoded from JSON
// or exported from a .js config) into an SMTPConfig. Options that govkit
// accepts but does not act on come back as warnings naming the key; wrong
// types and bad values are errors naming the key, all of them at once.
// A nil or empty map gives the zero SMTPConfig (no SMTP configured).
func ParseSMTP(raw map[string]any) (SMTPConfig, []string, error) {
	var (
		c        SMTPConfig
		warnings []string
		errs     []error
	)
	bad := func(key, rule string) {
		errs = append(errs, fmt.Errorf("email.smtp.%s: %s", key, rule))
	}
	for _, key := range sortedKeys(raw) {
		v := raw[key]
		if v == nil {
			continue
		}
		switch key {
		case "host":
			s, ok := v.(string)
			if !ok {
				bad(key, "must be a string")
				continue
			}
			c.Host = strings.TrimSpace(s)
		case "port":
			n, ok := toInt(v)
			if !ok || n < 1 || n > 65535 {
				bad(key, "must be a port number between 1 and 65535")
				continue
			}
			c.Port = n
		case "secure", "ignoreTLS", "requireTLS", "pool":
			b, ok := v.(bool)
			if !ok {
				bad(key, "must be true or false")
				continue
			}
			switch key {
			case "secure":
				c.Secure = b
			case "ignoreTLS":
				c.IgnoreTLS = b
			case "requireTLS":
				c.RequireTLS = b
			case "pool":
				c.DisablePool = !b
			}
		case "maxConnections":
			n, ok := toInt(v)
			if !ok || n < 1 {
				bad(key, "must be a whole number of at least 1")
				continue
			}
			c.MaxConnections = n
		case "maxMessages":
			if f, ok := v.(float64); ok && math.IsInf(f, 1) {
				c.MaxMessages = -1
				continue
			}
			n, ok := toInt(v)
			if !ok || n < 1 {
				bad(key, "must be a whole number of at least 1 (or Infinity)")
				continue
			}
			c.MaxMessages = n
		case "connectionTimeout", "socketTimeout":
			n, ok := toInt(v)
			if !ok || n < 1 {
				bad(key, "must be a positive number of milliseconds")
				continue
			}
			d := time.Duration(n) * time.Millisecond
			if key == "connectionTimeout" {
				c.ConnectionTimeout = d
			} else {
				c.SocketTimeout = d
			}
		case "name", "localAddress":
			s, ok := v.(string)
			if !ok {
				bad(key, "must be a string")
				continue
			}
			if key == "name" {
				c.Name = s
			} else {
				c.LocalAddress = s
			}
		case "authMethod":
			s, ok := v.(string)
			m := strings.ToUpper(strings.TrimSpace(s))
			if !ok || !validAuthMethod(m) {
				bad(key, "must be one of PLAIN, LOGIN, CRAM-MD5, XOAUTH2")
				continue
			}
			c.AuthMethod = m
		case "auth":
			m, ok := v.(map[string]any)
			if !ok {
				bad(key, "must be an object {user, pass}")
				continue
			}
			for _, k := range sortedKeys(m) {
				av := m[k]
				switch k {
				case "user", "pass":
					s, ok := av.(string)
					if !ok {
						bad("auth."+k, "must be a string")
						continue
					}
					if k == "user" {
						c.User = s
					} else {
						c.Pass = s
					}
				case "type":
					if s, _ := av.(string); strings.EqualFold(s, "oauth2") {
						bad("auth.type", "OAuth2 token fetching is not supported; set authMethod XOAUTH2 and an access token as auth.pass")
						continue
					}
					if s, _ := av.(string); s != "" && !strings.EqualFold(s, "login") {
						warnings = append(warnings, fmt.Sprintf("email.smtp.auth.type: %q is ignored; only user/pass authentication is supported", s))
					}
				default:
					warnings = append(warnings, fmt.Sprintf("email.smtp.auth.%s: not supported, ignored", k))
				}
			}
		case "tls":
			m, ok := v.(map[string]any)
			if !ok {
				bad(key, "must be an object")
				continue
			}
			warnings = append(warnings, parseTLS(m, &c.TLS, bad)...)
		default:
			if why, ok := ignoredSMTPKeys[key]; ok {
				warnings = append(warnings, fmt.Sprintf("email.smtp.%s: ignored (%s)", key, why))
			} else {
				warnings = append(warnings, fmt.Sprintf("email.smtp.%s: unknown option, ignored", key))
			}
		}
	}
	if c.Host == "" && len(raw) > 0 && len(errs) == 0 {
		warnings = append(warnings, "email.smtp.host: not set, so the other email.smtp options are not used")
	}
	if c.User == "" && c.Pass != "" {
		bad("auth.user", "is required when auth.pass is set")
	}
	if c.Secure && c.RequireTLS {
		warnings = append(warnings, "email.smtp.requireTLS: ignored with secure: true (the connection is TLS from the start)")
	}
	if len(errs) == 0 {
		if _, err := c.tlsConfig(); err != nil {
			errs = append(errs, err)
		}
	}
	return c, warnings, errors.Join(errs...)
}

func parseTLS(m map[string]any, t *TLSOptions, bad func(key, rule string)) (warnings []string) {
	for _, k := range sortedKeys(m) {
		v := m[k]
		if v == nil {
			continue
		}
		key := "tls." + k
		switch k {
		case "rejectUnauthorized":
			b, ok := v.(bool)
			if !ok {
				bad(key, "must be true or false")
				continue
			}
			t.InsecureSkipVerify = !b
		case "servername":
			s, ok := v.(string)
			if !ok {
				bad(key, "must be a string")
				continue
			}
			t.ServerName = s
		case "minVersion":
			s, _ := v.(string)
			ver, ok := tlsVersions[s]
			if !ok {
				bad(key, `must be "TLSv1.2" or "TLSv1.3"`)
				continue
			}
			t.MinVersion = ver
		case "ca":
			switch ca := v.(type) {
			case string:
				t.CA = []string{ca}
			case []any:
				for i, e := range ca {
					s, ok := e.(string)
					if !ok {
						bad(fmt.Sprintf("%s[%d]", key, i), "must be a PEM string")
						continue
					}
					t.CA = append(t.CA, s)
				}
			default:
				bad(key, "must be a PEM string or a list of them")
			}
		case "cert", "key":
			s, ok := v.(string)
			if !ok {
				bad(key, "must be a PEM string")
				continue
			}
			if k == "cert" {
				t.Cert = s
			} else {
				t.Key = s
			}
		default:
			if why, ok := ignoredTLSKeys[k]; ok {
				warnings = append(warnings, fmt.Sprintf("email.smtp.%s: ignored (%s)", key, why))
			} else {
				warnings = append(warnings, fmt.Sprintf("email.smtp.%s: unknown option, ignored", key))
			}
		}
	}
	return warnings
}

var tlsVersions = map[string]uint16{
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
}

func validAuthMethod(m string) bool {
	switch m {
	case "PLAIN", "LOGIN", "CRAM-MD5", "XOAUTH2":
		return true
	}
	return false
}

// toInt accepts the number types JSON and goja produce, and numeric
// strings, since nodemailer converts with Number().
func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n != math.Trunc(n) || math.IsInf(n, 0) || math.Abs(n) > math.MaxInt32 {
			return 0, false
		}
		return int(n), true
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(n))
		return i, err == nil
	}
	return 0, false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
