package deploy_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// envExample reads compose.env.example: its keys in order and values.
func envExample(t *testing.T) ([]string, map[string]string) {
	t.Helper()
	f, err := os.Open("compose.env.example")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var keys []string
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("compose.env.example: %q is not NAME=value", line)
		}
		keys = append(keys, k)
		vals[k] = v
	}
	return keys, vals
}

// optionalCompose are the values compose starts without.
var optionalCompose = []string{"COOKIE_SECRET_PREVIOUS", "SMTP_USER", "SMTP_PASSWORD"}

// composeEnv is a filled-in .env: the example's values, every empty one
// given a test value.
func composeEnv(t *testing.T) map[string]string {
	_, env := envExample(t)
	for k, v := range env {
		if v == "" && !slices.Contains(optionalCompose, k) {
			env[k] = "test-" + strings.ToLower(k) + "-0123456789abcdef0123456789abcdef"
		}
	}
	env["SMTP_USER"], env["SMTP_PASSWORD"] = "notify@example.org", "test-smtp-password"
	return env
}

func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  ".",
		ConfigFiles: []types.ConfigFile{{Filename: "docker-compose.yml"}},
		Environment: env,
	}, func(o *loader.Options) { o.SetProjectName("govkit", true) })
}

func composeProject(t *testing.T) *types.Project {
	t.Helper()
	p, err := loadCompose(t, composeEnv(t))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func envOf(s types.ServiceConfig, k string) string {
	if v := s.Environment[k]; v != nil {
		return *v
	}
	return ""
}

// The compose file is valid by the Compose Specification (compose-go
// validates against its JSON schema and resolves anchors and merges), and
// it runs what the recipe says, safely: TLS at the proxy with HTTP only
// redirecting, the proxy as an unprivileged user, MongoDB with
// authentication and a keyFile on the internal network only, no password
// on a command line, limits on every long-running container, and no port
// published but the proxy's and inbound SMTP's.
func TestComposeFile(t *testing.T) {
	env := composeEnv(t)
	p := composeProject(t)
	svc := func(name string) types.ServiceConfig {
		t.Helper()
		s, err := p.GetService(name)
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		return s
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
	proxy := svc("proxy")
	proxyIP := proxy.Networks["internal"].Ipv4Address
	for _, s := range platforms {
		for k, want := range map[string]string{
			"DATABASE_URL": "postgres://", "REDIS_URL": "redis://", "DOCUMENT_STORAGE": "s3://", "AWS_ENDPOINT_URL": "http://s3:",
			"FRONTEND_URL": "https://" + env["PUBLIC_HOST"], "SSO_REDIRECT_URI": "https://" + env["PUBLIC_HOST"] + "/api/auth/callback",
			"NODE_ENV": "production", "TRUSTED_PROXIES": proxyIP,
		} {
			if !strings.HasPrefix(envOf(s, k), want) {
				t.Errorf("%s: %s=%q, want %s…", s.Name, k, envOf(s, k), want)
			}
		}
		if envOf(s, "COOKIE_SECRET") != envOf(platforms[0], "COOKIE_SECRET") || envOf(s, "COOKIE_SECRET") == "" {
			t.Errorf("%s: replicas must share COOKIE_SECRET", s.Name)
		}
	}
	if proxyIP == "" || proxyIP != env["PROXY_ADDRESS"] {
		t.Errorf("the proxy's address %q is not PROXY_ADDRESS", proxyIP)
	}
	roles := map[string]int{}
	for _, s := range notifies {
		roles[envOf(s, "NOTIFYBC_NODE_ROLE")]++
		if !slices.ContainsFunc(s.Configs, func(c types.ServiceConfigObjConfig) bool { return c.Target == "/app/src/config.local.js" }) {
			t.Errorf("%s: no config.local.js in the deployment directory /app/src", s.Name)
		}
		if envOf(s, "PROXY_ADDRESS") != proxyIP || envOf(s, "NOTIFY_HTTP_HOST") != "https://"+env["NOTIFY_HOST"] {
			t.Errorf("%s: PROXY_ADDRESS %q, NOTIFY_HTTP_HOST %q", s.Name, envOf(s, "PROXY_ADDRESS"), envOf(s, "NOTIFY_HTTP_HOST"))
		}
	}
	if roles["primary"] != 1 || roles["secondary"] < 1 {
		t.Errorf("notify roles %v, want one primary and at least one secondary", roles)
	}

	mongo := strings.Join(svc("mongo").Command, " ")
	for _, want := range []string{"--replSet", "--auth", "--keyFile", "--bind_ip localhost,mongo"} {
		if !strings.Contains(mongo, want) {
			t.Errorf("MongoDB runs %q, without %s", mongo, want)
		}
	}
	if strings.Contains(mongo, "bind_ip_all") {
		t.Error("MongoDB listens on every interface")
	}

	if proxy.User == "" || strings.HasPrefix(proxy.User, "0") || proxy.User == "root" {
		t.Errorf("the proxy runs as %q", proxy.User)
	}
	var published []string
	for _, s := range p.Services {
		for _, port := range s.Ports {
			published = append(published, s.Name+":"+port.Published+"->"+strconv.Itoa(int(port.Target)))
		}
	}
	sort.Strings(published)
	want := []string{"notify-primary:" + env["INBOUND_SMTP_PORT"] + "->2525", "proxy:443->8443", "proxy:80->8080"}
	if !slices.Equal(published, want) {
		t.Errorf("published ports %v, want %v", published, want)
	}
	caddyfile := p.Configs["caddyfile"].Content
	for _, want := range []string{"{$PUBLIC_HOST}:8443", "{$NOTIFY_HOST}:8443", "tls {$TLS_CERTIFICATE}", "http://:8080 {\n  redir https://{host}{uri} permanent\n}", "auto_https disable_redirects"} {
		if !strings.Contains(caddyfile, want) {
			t.Errorf("Caddyfile lacks %q:\n%s", want, caddyfile)
		}
	}
	if strings.Count(caddyfile, "reverse_proxy") != 2 || strings.Index(caddyfile, "http://:8080") < strings.LastIndex(caddyfile, "reverse_proxy") {
		t.Errorf("plain HTTP must only redirect:\n%s", caddyfile)
	}

	secrets := []string{env["REDIS_PASSWORD"], env["POSTGRES_PASSWORD"], env["MONGO_ROOT_PASSWORD"], env["MONGO_NOTIFY_PASSWORD"], env["MONGO_REPLICA_KEY"], env["SMTP_PASSWORD"], env["COOKIE_SECRET"]}
	for _, s := range p.Services {
		argv := strings.Join(append(append(slices.Clone(s.Entrypoint), s.Command...), healthTest(s)...), " ")
		for _, secret := range secrets {
			if strings.Contains(argv, secret) {
				t.Errorf("%s: a secret is on a command line: %s", s.Name, argv)
			}
		}
		if s.Build == nil && !pinned(s.Image) {
			t.Errorf("%s: image %q is not pinned to a version", s.Name, s.Image)
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
		if s.Restart == "unless-stopped" && (s.MemLimit == 0 || s.CPUS == 0 || s.PidsLimit == 0) {
			t.Errorf("%s: no memory, CPU or pids limit (mem %d, cpus %v, pids %d)", s.Name, s.MemLimit, s.CPUS, s.PidsLimit)
		}
	}
	if !strings.Contains(strings.Join(svc("redis").Command, " "), "/tmp/redis.conf") || envOf(svc("redis"), "REDISCLI_AUTH") == "" {
		t.Error("Redis's password must reach it through a file and REDISCLI_AUTH")
	}
}

func healthTest(s types.ServiceConfig) []string {
	if s.HealthCheck == nil {
		return nil
	}
	return s.HealthCheck.Test
}

// Without a value it needs the compose file refuses to start, naming it;
// the optional ones may be empty.
func TestComposeRequiresItsValues(t *testing.T) {
	keys, _ := envExample(t)
	for _, name := range keys {
		env := composeEnv(t)
		delete(env, name)
		_, err := loadCompose(t, env)
		optional := slices.Contains(optionalCompose, name)
		switch {
		case optional && err != nil:
			t.Errorf("without the optional %s: %v", name, err)
		case !optional && (err == nil || !strings.Contains(err.Error(), name)):
			t.Errorf("without %s: %v", name, err)
		}
	}
}

// Every value .env.example names is one the compose file uses, and every
// value the file uses is in .env.example.
func TestComposeEnvExampleMatchesTheFile(t *testing.T) {
	keys, _ := envExample(t)
	b, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	// ${NAME…} is compose's; $${…} is escaped for the container.
	for _, m := range regexp.MustCompile(`(^|[^$])\$\{([A-Za-z_][A-Za-z0-9_]*)`).FindAllSubmatch(b, -1) {
		used[string(m[2])] = true
	}
	for _, k := range keys {
		if !used[k] {
			t.Errorf("compose.env.example names %s, which docker-compose.yml never uses", k)
		}
		delete(used, k)
	}
	for k := range used {
		t.Errorf("docker-compose.yml uses %s, which compose.env.example does not name", k)
	}
}

// The recipe's govkit containers, run as far as this machine allows: the
// same binary the Dockerfile builds, with each service's command line,
// environment and config files as compose would give them (the files
// written where the service's configs put them, under a scratch root).
// check-config then reads exactly what the containers would: the config
// must load and pass production's rules, and each part must be the
// service compose names (the hosts themselves do not resolve here, so
// connecting fails, which check-config reports as it would for an
// operator).
func TestComposeRecipeRuns(t *testing.T) {
	bin := govkitBinary(t)
	env := composeEnv(t)
	p := composeProject(t)
	for _, name := range []string{"notify-primary", "platform-a"} {
		s, err := p.GetService(name)
		if err != nil {
			t.Fatal(err)
		}
		root := t.TempDir()
		for _, c := range s.Configs {
			path := filepath.Join(root, c.Target)
			must(t, os.MkdirAll(filepath.Dir(path), 0o755))
			must(t, os.WriteFile(path, []byte(p.Configs[c.Source].Content), 0o644))
		}
		// serve's flags, the paths under the scratch root; the command the
		// recipe's steps run is `docker compose run --rm SERVICE <part> check-config <the same flags>`.
		args := []string{s.Command[0], "check-config"}
		for i := 2; i < len(s.Command); i++ {
			switch s.Command[i] {
			case "--dir", "--data-dir":
				args = append(args, s.Command[i], filepath.Join(root, s.Command[i+1]))
				i++
			case "--metrics-listen":
				i++ // serve's only
			default:
				t.Fatalf("%s: unexpected argument %q", name, s.Command[i])
			}
		}
		var environ []string
		for k, v := range s.Environment {
			if v != nil {
				environ = append(environ, k+"="+*v)
			}
		}
		code, out := runBinary(t, bin, environ, "", args...)
		t.Logf("%s: govkit %s\n%s", name, strings.Join(args, " "), out)
		if code != 1 {
			t.Errorf("%s: check-config exit %d, want 1 (the hosts do not resolve here)", name, code)
		}
		if !strings.Contains(out, "ok    config") {
			t.Errorf("%s: the config does not load:\n%s", name, out)
		}
		if strings.Contains(out, "warn") {
			t.Errorf("%s: the recipe's settings draw warnings:\n%s", name, out)
		}
		var want []string
		switch name {
		case "notify-primary":
			want = []string{
				"store         mongodb mongodb://notify@mongo:27017/notify-bc?authSource=notify-bc&replicaSet=rs0 (file " + filepath.Join(root, "app/src/datasources/db.datasource.local.js") + ")",
				"queue         redis redis:6379 (file " + filepath.Join(root, "app/src/config.local.js") + ")",
				"SMTP          smtp " + env["SMTP_HOST"] + ":" + env["SMTP_PORT"] + " as " + env["SMTP_USER"],
				"inbound SMTP  listener 0.0.0.0:2525 for " + env["INBOUND_SMTP_DOMAIN"],
				`NODE_ENV="production", primary`,
			}
		case "platform-a":
			want = []string{
				"database           postgresql postgres://govkit@postgres:5432/govkit?sslmode=disable (variable DATABASE_URL)",
				"redis              redis redis://redis:6379/0 (variable REDIS_URL)",
				"document storage   s3 s3://govkit-documents/platform at http://s3:7070",
				`NODE_ENV="production", public URL https://` + env["PUBLIC_HOST"],
			}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: check-config does not say %q:\n%s", name, w, out)
			}
		}
		for _, secret := range []string{env["REDIS_PASSWORD"], env["POSTGRES_PASSWORD"], env["MONGO_NOTIFY_PASSWORD"], env["SMTP_PASSWORD"]} {
			if strings.Contains(out, secret) {
				t.Errorf("%s: check-config printed a secret:\n%s", name, out)
			}
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
