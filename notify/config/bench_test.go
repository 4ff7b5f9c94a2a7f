package config_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/govkit/govkit/notify/config"
)

// BenchmarkLoad measures start-up cost of a typical deployment: a
// config.local.js with OIDC functions and process.env reads, a
// middleware.local.json and a datasource file.
func BenchmarkLoad(b *testing.B) {
	root := deploymentB(b)
	opts := config.Options{Dir: filepath.Join(root, "src"), NodeEnv: "production", Env: map[string]string{"HTTP_HOST": "https://n.example"}, JSPoolSize: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Load(opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIsAdmin measures a per-request call of a config function from
// parallel goroutines.
func BenchmarkIsAdmin(b *testing.B) {
	root := deploymentB(b)
	c, err := config.Load(config.Options{Dir: filepath.Join(root, "src"), NodeEnv: "production"})
	if err != nil {
		b.Fatal(err)
	}
	payload := map[string]any{
		"resource_access": map[string]any{"NotifyBC": map[string]any{"roles": []any{"user", "admin"}}},
		"realm_access":    map[string]any{"roles": []any{"offline_access"}},
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if v, err := c.OIDC.IsAdmin(context.Background(), payload); err != nil || v != true {
				b.Fatal(v, err)
			}
		}
	})
}

func deploymentB(b *testing.B) string {
	root := b.TempDir()
	files := map[string]string{
		"src/config.local.js": `module.exports = {
  httpHost: process.env.HTTP_HOST,
  adminIps: ['10.0.0.0/8'],
  email: { smtp: { host: 'smtp.example', port: 25, pool: true } },
  oidc: {
    discoveryUrl: 'https://op.example/.well-known/openid-configuration',
    clientId: 'NotifyBC',
    isAdmin(user) { const r = user.resource_access.NotifyBC.roles; return r instanceof Array && r.indexOf('admin') > -1; },
    isAuthorizedUser(user) { return user.realm_access.roles.indexOf('offline_access') > -1; },
  },
};`,
		"src/middleware.local.json":                `{"apiOnly": {"morgan": {"enabled": true}}}`,
		"src/datasources/db.datasource.local.json": `{"uri": "mongodb://127.0.0.1:27017/notifyBC?replicaSet=rs0"}`,
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}
