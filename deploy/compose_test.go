package deploy_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// composeEnv is a .env with every variable the compose file requires.
func composeEnv() map[string]string {
	return map[string]string{
		"PUBLIC_URL": "https://docs.example.org", "SSO_AUTH_SERVER_URL": "https://sso.example.org/auth", "SSO_REALM": "standard",
		"SSO_CLIENT_ID": "govkit", "SSO_CLIENT_SECRET": "client-secret", "COOKIE_SECRET": strings.Repeat("c", 40),
		"POSTGRES_PASSWORD": "pg-secret", "REDIS_PASSWORD": "redis-secret", "S3_ACCESS_KEY": "govkit", "S3_SECRET_KEY": "s3-secret",
	}
}

func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  ".",
		ConfigFiles: []types.ConfigFile{{Filename: "docker-compose.yml"}},
		Environment: env,
	}, func(o *loader.Options) { o.SetProjectName("govkit", true) })
}

// The compose file is valid by the Compose Specification (compose-go
// validates against its JSON schema and resolves anchors and merges), and
// it runs what the issue asks for, the way it says.
func TestComposeFile(t *testing.T) {
	p, err := loadCompose(t, composeEnv())
	if err != nil {
		t.Fatal(err)
	}
	svc := func(name string) types.ServiceConfig {
		t.Helper()
		s, err := p.GetService(name)
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		return s
	}
	env := func(s types.ServiceConfig, k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		return ""
	}

	var platforms, notifies []types.ServiceConfig
	for _, s := range p.Services {
		if s.Build == nil {
			continue
		}
		switch s.Command[0] {
		case "docplatform":
			platforms = append(platforms, s)
		case "notify":
			notifies = append(notifies, s)
		}
	}
	if len(platforms) != 2 {
		t.Fatalf("%d platform replicas, want 2", len(platforms))
	}
	for _, s := range platforms {
		for k, want := range map[string]string{
			"DATABASE_URL": "postgres://", "REDIS_URL": "redis://", "DOCUMENT_STORAGE": "s3://", "AWS_ENDPOINT_URL": "http://s3:",
		} {
			if !strings.HasPrefix(env(s, k), want) {
				t.Errorf("%s: %s=%q, want %s…", s.Name, k, env(s, k), want)
			}
		}
		if env(s, "COOKIE_SECRET") != env(platforms[0], "COOKIE_SECRET") || env(s, "COOKIE_SECRET") == "" {
			t.Errorf("%s: replicas must share COOKIE_SECRET", s.Name)
		}
	}
	roles := map[string]int{}
	for _, s := range notifies {
		roles[env(s, "NOTIFYBC_NODE_ROLE")]++
		if !slices.ContainsFunc(s.Configs, func(c types.ServiceConfigObjConfig) bool { return c.Target == "/app/src/config.local.js" }) {
			t.Errorf("%s: no config.local.js in the deployment directory /app/src", s.Name)
		}
	}
	if roles["primary"] != 1 || roles["secondary"] < 1 {
		t.Errorf("notify roles %v, want one primary and at least one secondary", roles)
	}
	if !slices.Contains(svc("mongo").Command, "--replSet") {
		t.Error("MongoDB is not started as a replica set")
	}
	for _, name := range []string{"postgres", "redis", "s3"} {
		svc(name)
	}
	if !strings.Contains(strings.Join(svc("redis").Command, " "), "--requirepass") {
		t.Error("Redis runs without a password")
	}

	for _, s := range p.Services {
		image := s.Image
		if s.Build == nil {
			if !pinned(image) {
				t.Errorf("%s: image %q is not pinned to a version", s.Name, image)
			}
		}
		if s.Build != nil {
			if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") {
				t.Errorf("%s: govkit containers run read-only with every capability dropped", s.Name)
			}
			hc := s.HealthCheck
			if hc == nil || len(hc.Test) < 4 || hc.Test[1] != "/usr/local/bin/govkit" || hc.Test[2] != "healthcheck" || !strings.HasSuffix(hc.Test[3], "/api/health") {
				t.Errorf("%s: health check %v, want the binary's healthcheck of /api/health", s.Name, hc)
			}
		}
		if len(s.Ports) > 0 && s.Name != "proxy" {
			t.Errorf("%s publishes ports; only the proxy should", s.Name)
		}
	}
}

// pinned reports whether an image reference names a version (a tag other
// than latest, or a digest).
func pinned(ref string) bool {
	if _, digest, ok := strings.Cut(ref, "@sha256:"); ok {
		return len(digest) == 64
	}
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return false
	}
	tag := ref[i+1:]
	return tag != "" && tag != "latest" && !strings.Contains(tag, "$")
}

func TestPinned(t *testing.T) {
	for ref, want := range map[string]bool{
		"redis:7.4.5-bookworm": true, "redis": false, "redis:latest": false, "localhost:5000/x": false,
		"localhost:5000/x:1.2": true, "x@sha256:" + strings.Repeat("a", 64): true, "x@sha256:abc": false,
	} {
		if pinned(ref) != want {
			t.Errorf("pinned(%q) = %v", ref, !want)
		}
	}
}

// Without its secrets the compose file refuses to start, naming them.
func TestComposeRequiresItsSecrets(t *testing.T) {
	for _, name := range []string{"COOKIE_SECRET", "POSTGRES_PASSWORD", "REDIS_PASSWORD", "S3_SECRET_KEY", "SSO_CLIENT_SECRET"} {
		env := composeEnv()
		delete(env, name)
		if _, err := loadCompose(t, env); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: %v", name, err)
		}
	}
}
