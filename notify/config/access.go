package config

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// Raw returns a deep copy of the merged config tree (defaults and files),
// for keys the typed view does not cover and for merging per-service
// configuration documents over static sections. Function values are Func.
func (c *Config) Raw() map[string]any { return Clone(c.tree) }

// RawMiddleware returns a deep copy of the merged middleware tree.
func (c *Config) RawMiddleware() map[string]any { return Clone(c.middlewareTree) }

// RawDatasource returns a deep copy of the merged datasource tree.
func (c *Config) RawDatasource() map[string]any { return Clone(c.datasourceTree) }

// Lookup returns the value at a dotted key path of the merged config
// ("email.smtp.host"; a numeric segment indexes an array) and whether it is
// present. Maps and slices are
// copies. A present null is (nil, true).
func (c *Config) Lookup(path string) (any, bool) {
	v, ok := lookup(c.tree, path)
	if !ok {
		return nil, false
	}
	return cloneValue(v), true
}

// Get is Lookup without the presence flag.
func (c *Config) Get(path string) any {
	v, _ := c.Lookup(path)
	return v
}

// String returns the string at path; ok is false when it is absent or not
// a string.
func (c *Config) String(path string) (s string, ok bool) {
	v, _ := lookup(c.tree, path)
	s, ok = v.(string)
	return s, ok
}

// Bool returns the boolean at path; ok is false when absent or not a
// boolean.
func (c *Config) Bool(path string) (b bool, ok bool) {
	v, _ := lookup(c.tree, path)
	b, ok = v.(bool)
	return b, ok
}

// Float returns the number at path; ok is false when absent or not a number.
func (c *Config) Float(path string) (f float64, ok bool) {
	v, _ := lookup(c.tree, path)
	f, ok = v.(float64)
	return f, ok
}

// Int returns the number at path as an int; ok is false when absent, not a
// number, or not a whole number.
func (c *Config) Int(path string) (int, bool) {
	f, ok := c.Float(path)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int(f), true
}

// Func returns the config function at path; ok is false when absent or not
// a function.
func (c *Config) Func(path string) (Func, bool) {
	v, _ := lookup(c.tree, path)
	f, ok := v.(Func)
	return f, ok
}

// Call calls the config function at path.
func (c *Config) Call(ctx context.Context, path string, args ...any) (any, error) {
	f, ok := c.Func(path)
	if !ok {
		return nil, fmt.Errorf("notify config: %s is not a function", path)
	}
	return f(ctx, args...)
}

// Origin names the file that set the config key at path ("email.smtp",
// "queue.connection.host"): the last file in precedence whose own tree has
// the key or replaced a map above it (queue.connection: null), or "" when
// no file did and the value (if any) is the built-in default. A .js file that computes the value from process.env
// is still the file that set it. Start-up lines use it to say where each
// external part's address came from.
func (c *Config) Origin(path string) string { return c.origin(kindConfig, path) }

// DatasourceOrigin is Origin for a key of the datasource files ("uri").
func (c *Config) DatasourceOrigin(path string) string { return c.origin(kindDatasource, path) }

func (c *Config) origin(k kind, path string) string {
	keys := strings.Split(path, ".")
	for i := len(c.layers) - 1; i >= 0; i-- {
		f := c.layers[i]
		if f.kind != k {
			continue
		}
		// The file decides the key when it has it, or when it replaced
		// a map above it with something else (null, a value): merging
		// stops there, and what earlier files said below is gone.
		var cur any = f.tree
		for _, key := range keys {
			m, ok := cur.(map[string]any)
			if !ok {
				return f.path
			}
			if cur, ok = m[key]; !ok {
				break
			}
		}
		if _, ok := lookup(f.tree, path); ok {
			return f.path
		}
	}
	return ""
}

// NodeRole is the role of a node in a multi-node deployment, from the
// environment variable NOTIFYBC_NODE_ROLE.
type NodeRole string

const (
	// RoleAll is a single node (the variable unset): cron, boot tasks and
	// queue workers.
	RoleAll NodeRole = ""
	// RolePrimary runs cron and boot tasks, no queue workers.
	RolePrimary NodeRole = "primary"
	// RoleSecondary runs queue workers, no cron.
	RoleSecondary NodeRole = "secondary"
)

// RunsCron reports whether the role runs cron jobs and boot tasks (RSA key
// generation, index creation).
func (r NodeRole) RunsCron() bool { return r != RoleSecondary }

// RunsWorkers reports whether the role runs queue workers.
func (r NodeRole) RunsWorkers() bool { return r != RolePrimary }

// ParseNodeRole reads the value of NOTIFYBC_NODE_ROLE. Version 5's names
// are refused: slave became secondary; master means a primary, which is
// the default and is left unset since version 6.
func ParseNodeRole(v string) (NodeRole, error) {
	switch strings.TrimSpace(v) {
	case "":
		return RoleAll, nil
	case "primary":
		return RolePrimary, nil
	case "secondary":
		return RoleSecondary, nil
	case "slave":
		return "", fmt.Errorf("NOTIFYBC_NODE_ROLE=slave: renamed in version 6: set it to secondary; run `govkit notify upgrade --from 5 --to 6`")
	case "master":
		return "", fmt.Errorf("NOTIFYBC_NODE_ROLE=master: renamed in version 6: leave it unset (or set primary on the one node that runs cron); run `govkit notify upgrade --from 5 --to 6`")
	}
	return "", fmt.Errorf("NOTIFYBC_NODE_ROLE=%q: must be unset, primary or secondary", v)
}

// Redacted returns the merged config for display (a start-up dump, a debug
// page): secrets — any key whose name says pass, secret, token or key, such
// as email.smtp.auth.pass, sms.providerSettings.twilio.authToken,
// tls.key — are replaced by "***", and functions by "[function]".
func (c *Config) Redacted() map[string]any { return Redact(c.tree) }

// Redact is Redacted for any tree (RawDatasource, whose uri may hold a
// password, or RawMiddleware).
func Redact(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return redact(m).(map[string]any)
}

func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if secretKey(k) && e != nil {
				if _, isMap := e.(map[string]any); !isMap {
					out[k] = "***"
					continue
				}
			}
			out[k] = redact(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = redact(e)
		}
		return out
	case Func:
		return "[function]"
	}
	return v
}

func secretKey(k string) bool {
	l := strings.ToLower(k)
	for _, s := range []string{"pass", "secret", "token", "key", "private", "credential"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	// any URI may carry a password (uri, ferretdbPostgresUri)
	return l == "cert" || l == "ca" || strings.HasSuffix(l, "uri")
}
