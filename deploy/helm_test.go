package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/govkit/govkit/internal/testsvc"
	notifyconfig "github.com/govkit/govkit/notify/config"
)

const chart = "helm/govkit"

// kubeVersion is the cluster version helm template renders for: a helm
// built from source defaults to an old one (releases set it at link time).
const kubeVersion = "1.31.0"

// manifest is one rendered Kubernetes object, as generic YAML.
type manifest map[string]any

// get walks a path of map keys and list indexes (ints).
func (m manifest) get(path ...any) any {
	var cur any = map[string]any(m)
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = mm[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			cur = l[k]
		}
	}
	return cur
}

func (m manifest) str(path ...any) string { s, _ := m.get(path...).(string); return s }
func (m manifest) kind() string           { return m.str("kind") }
func (m manifest) name() string           { return m.str("metadata", "name") }

func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testsvc.RequireHelm(t), args...)
	// A private home: no repositories or plugins of the machine's user.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = errors.New(err.Error() + ": " + errb.String() + out.String())
	}
	return out.String(), err
}

func render(t *testing.T, values string, set ...string) []manifest {
	t.Helper()
	args := []string{"template", "rel", chart, "--namespace", "govkit", "--kube-version", kubeVersion, "-f", values}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm template -f %s: %v", values, err)
	}
	var ms []manifest
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		// Into a plain map: decoding into the named type would make every
		// nested map a manifest too, and the walks below expect plain maps.
		var m map[string]any
		err := dec.Decode(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("rendered YAML: %v", err)
		}
		if m != nil {
			ms = append(ms, manifest(m))
		}
	}
	return ms
}

// CI lints and renders the chart with each values file under ci/ and
// checks what Kubernetes would run: the kinds, probes on the health
// endpoints, no root, a read-only root filesystem, resources, pinned
// images, secrets only by reference, a PodDisruptionBudget per Deployment
// and notify's two roles.
func TestHelmChart(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(chart, "ci", "*.yaml"))
	if len(files) < 4 {
		t.Fatalf("values files %v", files)
	}
	want := map[string]map[string]int{
		"default-values.yaml":     {"Deployment": 2, "Service": 3, "PodDisruptionBudget": 2, "ConfigMap": 1, "ServiceAccount": 1},
		"notifybc-values.yaml":    {"Deployment": 2, "Service": 2, "PodDisruptionBudget": 2, "ConfigMap": 1, "ServiceAccount": 1, "Ingress": 1, "Secret": 2},
		"production-values.yaml":  {"Deployment": 3, "Service": 5, "PodDisruptionBudget": 3, "ConfigMap": 1, "ServiceAccount": 1, "Ingress": 2, "HorizontalPodAutoscaler": 2, "ServiceMonitor": 2, "PrometheusRule": 1},
		"notify-only-values.yaml": {"Deployment": 2, "Service": 1, "PodDisruptionBudget": 2, "ConfigMap": 1, "ServiceAccount": 1},
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			if out, err := helm(t, "lint", "--strict", chart, "-f", f); err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
			ms := render(t, f)
			kinds := map[string]int{}
			for _, m := range ms {
				kinds[m.kind()]++
			}
			if w, ok := want[name]; ok {
				for k, n := range w {
					if kinds[k] != n {
						t.Errorf("%d %s, want %d (all: %v)", kinds[k], k, n, kinds)
					}
				}
				for k := range kinds {
					if _, ok := w[k]; !ok {
						t.Errorf("unexpected %s", k)
					}
				}
			}
			checkManifests(t, ms)
		})
	}
}

func checkManifests(t *testing.T, ms []manifest) {
	t.Helper()
	roles := map[string]manifest{}
	notifyNodes := 0
	pdbs := map[string]bool{}
	for _, m := range ms {
		if m.kind() == "PodDisruptionBudget" {
			pdbs[m.name()] = true
		}
	}
	for _, m := range ms {
		if m.kind() != "Deployment" {
			continue
		}
		podSpec, ok := m.get("spec", "template", "spec").(map[string]any)
		if !ok {
			t.Fatalf("%s: no pod spec: %v", m.name(), m)
		}
		pod := manifest(podSpec)
		if pod.get("securityContext", "runAsNonRoot") != true {
			t.Errorf("%s: pod runAsNonRoot is not true", m.name())
		}
		if !pdbs[m.name()] {
			t.Errorf("%s has no PodDisruptionBudget", m.name())
		}
		containers, _ := pod.get("containers").([]any)
		for i := range containers {
			c := manifest(containers[i].(map[string]any))
			where := m.name() + "/" + c.str("name")
			if c.str("name") == "notify" {
				notifyNodes++
			}
			image := c.str("image")
			if !pinned(image) {
				t.Errorf("%s: image %q is not pinned", where, image)
			}
			sc := func(k string) any { return c.get("securityContext", k) }
			if sc("runAsNonRoot") != true || sc("readOnlyRootFilesystem") != true || sc("allowPrivilegeEscalation") != false ||
				!slices.Contains(c.get("securityContext", "capabilities", "drop").([]any), any("ALL")) {
				t.Errorf("%s: securityContext %v", where, c.get("securityContext"))
			}
			for _, probe := range []string{"readinessProbe", "livenessProbe", "startupProbe"} {
				if c.str(probe, "httpGet", "path") != "/api/health" {
					t.Errorf("%s: %s is not on /api/health", where, probe)
				}
			}
			if c.get("resources", "requests", "cpu") == nil || c.get("resources", "requests", "memory") == nil || c.get("resources", "limits", "memory") == nil {
				t.Errorf("%s: resources %v: requests (cpu, memory) and a memory limit are needed", where, c.get("resources"))
			}
			env, _ := c.get("env").([]any)
			for _, e := range env {
				e := manifest(e.(map[string]any))
				n := e.str("name")
				if (strings.Contains(n, "PASSWORD") || strings.Contains(n, "SECRET")) && e.get("valueFrom") == nil {
					t.Errorf("%s: %s is a literal value; secrets come from Secrets", where, n)
				}
				if n == "NOTIFYBC_NODE_ROLE" {
					roles[e.str("value")] = m
				}
			}
		}
	}
	if len(roles) == 0 && notifyNodes == 1 {
		return // one notify node, which does everything
	}
	if p, s := roles["primary"], roles["secondary"]; p == nil || s == nil {
		t.Fatalf("notify roles %v: want a primary and secondaries", roles)
	} else if p.get("spec", "replicas") != 1 || p.str("spec", "strategy", "type") != "Recreate" {
		t.Errorf("notify primary: replicas %v, strategy %v; want 1, Recreate", p.get("spec", "replicas"), p.get("spec", "strategy"))
	}
}

// An operator's NotifyBC values file keeps working: its replica count,
// ingress, resources, extra variables, config files and the passwords of
// its MongoDB and Redis reach notify; its empty securityContext does not
// undo the hardening (checked above). The rendered config files load in
// notify's own config loader with the environment the pods get.
func TestHelmChartTakesNotifyBCValues(t *testing.T) {
	ms := render(t, filepath.Join(chart, "ci", "notifybc-values.yaml"))
	var secondary, configMap manifest
	secrets := map[string]bool{}
	for _, m := range ms {
		switch {
		case m.kind() == "Deployment" && strings.HasSuffix(m.name(), "notify-secondary"):
			secondary = m
		case m.kind() == "ConfigMap":
			configMap = m
		case m.kind() == "Secret":
			secrets[m.name()] = true
		case m.kind() == "Ingress":
			if m.str("spec", "rules", 0, "host") != "notify-bc.local" {
				t.Errorf("ingress host %v", m.get("spec", "rules"))
			}
		}
	}
	if secondary.get("spec", "replicas") != 3 {
		t.Errorf("replicaCount 3 gave %v secondaries", secondary.get("spec", "replicas"))
	}
	c := manifest(secondary.get("spec", "template", "spec", "containers", 0).(map[string]any))
	if c.str("image") != "registry.example.org/govkit:1.2.3" || c.str("resources", "limits", "memory") != "1Gi" {
		t.Errorf("image %s, resources %v", c.str("image"), c.get("resources"))
	}
	if !secrets["rel-govkit-redis"] || !secrets["rel-govkit-mongodb"] {
		t.Errorf("secrets %v: redis.auth.password and mongodb.auth.passwords become Secrets", secrets)
	}
	env := map[string]string{}
	for _, e := range c.get("env").([]any) {
		e := manifest(e.(map[string]any))
		v := e.str("value")
		if e.get("valueFrom") != nil {
			v = "from-secret-" + strings.ToLower(e.str("name"))
		}
		env[e.str("name")] = v
	}
	if env["TZ"] != "America/Vancouver" {
		t.Errorf("extraEnvs: TZ=%q", env["TZ"])
	}

	// Lay the ConfigMap out as the volume's items do, and load it.
	dir := t.TempDir()
	items := secondary.get("spec", "template", "spec", "volumes", 0, "configMap", "items").([]any)
	for _, it := range items {
		it := manifest(it.(map[string]any))
		p := filepath.Join(dir, it.str("path"))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(configMap.str("data", it.str("key"))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "datasources", "db.datasource.local.js")); err != nil {
		t.Fatal("db.datasource.local.js is not in datasources/")
	}
	cfg, err := notifyconfig.Load(notifyconfig.Options{Dir: dir, NodeEnv: env["NODE_ENV"], Env: env, JSPoolSize: 1})
	if err != nil {
		t.Fatalf("notify cannot load the chart's config: %v", err)
	}
	if q := cfg.Queue.Connection; q == nil || q.Host != "redis-master" || q.Port != 6379 || q.Password != "from-secret-redis_password" {
		t.Errorf("queue.connection %+v", q)
	}
	wantURI := "mongodb://notify-bc:from-secret-mongodb_password@mongodb-0.mongodb-headless:27017/notify-bc?replicaSet=rs0"
	if cfg.Datasource.URI != wantURI {
		t.Errorf("datasource uri %q, want %q", cfg.Datasource.URI, wantURI)
	}
	if cfg.Email.InboundSMTPServer.ListeningSMTPPort != 2525 {
		t.Errorf("inbound SMTP port %d", cfg.Email.InboundSMTPServer.ListeningSMTPPort)
	}
}

// The chart refuses, with a message that says what to set, the values
// that would start pods that cannot work together; each control fixes
// what its refusal names and renders.
func TestHelmChartRefuses(t *testing.T) {
	minimal := filepath.Join(chart, "ci", "default-values.yaml")
	sharedPlatform := []string{"docplatform.replicaCount=2", "redis.host=redis", "docplatform.env.DOCUMENT_STORAGE=s3://docs/p"}
	for _, c := range []struct {
		name    string
		set     []string
		mention []string
		fixed   []string
	}{
		{"an image nobody pushed", []string{"image.repository="}, []string{"image.repository", "docker push"}, []string{"image.repository=registry.example.org/govkit"}},
		{"latest", []string{"image.tag=latest"}, []string{"latest is not allowed"}, []string{"image.tag=1.0.0"}},
		{"two platform replicas on their own SQLite, documents and counters", []string{"docplatform.replicaCount=2", "docplatform.secretKeys={SSO_CLIENT_SECRET}"},
			[]string{"DATABASE_URL", "COOKIE_SECRET", "REDIS_URL", "DOCUMENT_STORAGE=s3://"}, append(sharedPlatform, "docplatform.secretKeys={SSO_CLIENT_SECRET,COOKIE_SECRET,DATABASE_URL}")},
		{"an autoscaled platform without a shared database", []string{"docplatform.autoscaling.enabled=true", "docplatform.existingSecret="},
			[]string{"DATABASE_URL", "COOKIE_SECRET"}, []string{"docplatform.autoscaling.enabled=true", "redis.host=redis", "docplatform.env.DOCUMENT_STORAGE=s3://docs/p"}},
		{"notify secondaries without Redis", []string{"replicaCount=2"}, []string{"redis.host", "3 nodes"}, []string{"replicaCount=2", "redis.host=redis"}},
		{"autoscaled notify without Redis", []string{"autoscaling.enabled=true"}, []string{"redis.host"}, []string{"autoscaling.enabled=true", "redis.host=redis"}},
		{"notify without MongoDB", []string{"mongodb.hosts=null"}, []string{"mongodb.hosts", "mongodb.uriSecret"}, []string{"mongodb.hosts=null", "mongodb.uriSecret.name=mongo-uri"}},
		{"notify in production without SMTP", []string{"smtp.host="}, []string{"smtp.host"}, []string{"smtp.host=smtp.example.org"}},
		{"an SMTP user whose password is nowhere", []string{"smtp.user=notify"}, []string{"smtp.existingSecret"}, []string{"smtp.user=notify", "smtp.existingSecret=notify-smtp"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"template", "rel", chart, "--kube-version", kubeVersion, "-f", minimal}
			with := func(set []string) []string {
				a := slices.Clone(args)
				for _, s := range set {
					a = append(a, "--set", s)
				}
				return a
			}
			_, err := helm(t, with(c.set)...)
			if err == nil {
				t.Fatal("rendered")
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("the refusal does not name %q: %v", m, err)
				}
			}
			if _, err := helm(t, with(c.fixed)...); err != nil {
				t.Errorf("control %v: %v", c.fixed, err)
			}
		})
	}
}

// The proxies' addresses are one value for both services; the inbound
// SMTP Service is not public unless asked; each pod carries the scrape
// annotations and a metrics port its Ingress never routes to; the
// PrometheusRule holds the rules of deploy/prometheus/alerts.yaml.
func TestHelmChartProductionSettings(t *testing.T) {
	ms := render(t, filepath.Join(chart, "ci", "production-values.yaml"))
	byName := map[string]manifest{}
	for _, m := range ms {
		byName[m.kind()+"/"+m.name()] = m
	}
	container := func(name string) manifest {
		d := byName["Deployment/"+name]
		if d == nil {
			t.Fatalf("no Deployment %s", name)
		}
		return manifest(d.get("spec", "template", "spec", "containers", 0).(map[string]any))
	}
	envOf := func(c manifest) map[string]manifest {
		out := map[string]manifest{}
		for _, e := range c.get("env").([]any) {
			e := manifest(e.(map[string]any))
			out[e.str("name")] = e
		}
		return out
	}
	platform := envOf(container("rel-govkit-docplatform"))
	if platform["TRUSTED_PROXIES"].str("value") != "10.0.0.0/8" || platform["METRICS_LISTEN"].str("value") != ":9464" {
		t.Errorf("platform TRUSTED_PROXIES %v, METRICS_LISTEN %v", platform["TRUSTED_PROXIES"], platform["METRICS_LISTEN"])
	}
	for _, k := range []string{"COOKIE_SECRET", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY"} {
		if platform[k].str("valueFrom", "secretKeyRef", "key") != k {
			t.Errorf("platform %s not from its Secret key: %v", k, platform[k])
		}
	}
	if !strings.HasPrefix(platform["REDIS_URL"].str("value"), "redis://:$(REDIS_PASSWORD)@redis.cache.svc:6379") {
		t.Errorf("REDIS_URL %v", platform["REDIS_URL"])
	}
	notify := container("rel-govkit-notify-primary")
	if !slices.Contains(notify.get("args").([]any), any("--metrics-listen")) {
		t.Errorf("notify args %v", notify.get("args"))
	}
	for _, d := range []string{"rel-govkit-docplatform", "rel-govkit-notify-primary", "rel-govkit-notify-secondary"} {
		ann := byName["Deployment/"+d].get("spec", "template", "metadata", "annotations")
		a, _ := ann.(map[string]any)
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/path"] != "/metrics" {
			t.Errorf("%s: pod annotations %v", d, ann)
		}
	}
	for _, ing := range []string{"Ingress/rel-govkit-docplatform", "Ingress/rel-govkit-notify"} {
		svc := byName[ing].str("spec", "rules", 0, "http", "paths", 0, "backend", "service", "name")
		for _, p := range byName["Service/"+svc].get("spec", "ports").([]any) {
			if manifest(p.(map[string]any)).str("name") == "metrics" {
				t.Errorf("%s routes to a Service with the metrics port", ing)
			}
		}
	}
	for _, sm := range []string{"ServiceMonitor/rel-govkit-docplatform", "ServiceMonitor/rel-govkit-notify"} {
		if byName[sm].str("spec", "jobLabel") != "govkit.dev/job" || byName[sm].str("spec", "endpoints", 0, "port") != "metrics" {
			t.Errorf("%s: %v", sm, byName[sm].get("spec"))
		}
	}
	if svc := byName["Service/rel-govkit-notify-metrics"]; svc.str("metadata", "labels", "govkit.dev/job") != "govkit-notify" || svc.str("spec", "type") != "ClusterIP" {
		t.Errorf("notify metrics Service %v", svc)
	}
	var rules ruleFile
	b, _ := os.ReadFile("prometheus/alerts.yaml")
	must(t, yaml.Unmarshal(b, &rules))
	got, _ := yaml.Marshal(byName["PrometheusRule/rel-govkit"].get("spec", "groups"))
	want, _ := yaml.Marshal(func() any { var v map[string]any; yaml.Unmarshal(b, &v); return v["groups"] }())
	if string(got) != string(want) || len(rules.Groups) != 2 {
		t.Errorf("the PrometheusRule's groups differ from deploy/prometheus/alerts.yaml")
	}
	copyInChart, _ := os.ReadFile(filepath.Join(chart, "files", "alerts.yaml"))
	if string(copyInChart) != string(b) {
		t.Error("helm/govkit/files/alerts.yaml differs from prometheus/alerts.yaml: copy it again")
	}

	// notify's side of the one value, through notify's own config loader.
	cfg := loadChartConfig(t, ms, "rel-govkit-notify-primary", map[string]string{"SMTP_PASSWORD": "from-secret"})
	if !slices.Equal(cfg.TrustedReverseProxyIPs, []string{"10.0.0.0/8"}) || cfg.HTTPHost != "https://notify.example.org" {
		t.Errorf("notify trustedReverseProxyIps %v, httpHost %q", cfg.TrustedReverseProxyIPs, cfg.HTTPHost)
	}
	if s := cfg.Email.SMTP; s == nil || s.Host != "smtp.example.org" || s.Port != 465 || !s.Secure {
		t.Errorf("email.smtp %+v", s)
	}
	if cfg.Email.InboundSMTPServer.Domain != "notify.example.org" {
		t.Errorf("inbound domain %q", cfg.Email.InboundSMTPServer.Domain)
	}
}

func TestHelmChartInboundSMTPIsNotPublicByDefault(t *testing.T) {
	for _, m := range render(t, filepath.Join(chart, "ci", "default-values.yaml")) {
		if m.kind() == "Service" && strings.HasSuffix(m.name(), "notify-smtp") {
			if m.str("spec", "type") != "ClusterIP" {
				t.Fatalf("inbound SMTP Service is %s by default", m.str("spec", "type"))
			}
			return
		}
	}
	t.Fatal("no inbound SMTP Service")
}

// loadChartConfig lays a notify Deployment's ConfigMap out as its volume
// does and loads it with notify's config loader and the pod's
// environment (Secret values replaced by secrets).
func loadChartConfig(t *testing.T, ms []manifest, deployment string, secrets map[string]string) *notifyconfig.Config {
	t.Helper()
	var d, configMap manifest
	for _, m := range ms {
		switch {
		case m.kind() == "Deployment" && m.name() == deployment:
			d = m
		case m.kind() == "ConfigMap":
			configMap = m
		}
	}
	c := manifest(d.get("spec", "template", "spec", "containers", 0).(map[string]any))
	env := map[string]string{}
	for _, e := range c.get("env").([]any) {
		e := manifest(e.(map[string]any))
		v := e.str("value")
		if e.get("valueFrom") != nil {
			v = secrets[e.str("name")]
		}
		env[e.str("name")] = v
	}
	dir := t.TempDir()
	for _, it := range d.get("spec", "template", "spec", "volumes", 0, "configMap", "items").([]any) {
		it := manifest(it.(map[string]any))
		p := filepath.Join(dir, it.str("path"))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(configMap.str("data", it.str("key"))), 0o644))
	}
	cfg, err := notifyconfig.Load(notifyconfig.Options{Dir: dir, NodeEnv: env["NODE_ENV"], Env: env, JSPoolSize: 1})
	if err != nil {
		t.Fatalf("notify cannot load the chart's config: %v", err)
	}
	return cfg
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHelmRecipeRuns runs what the chart's pods would run, as far as this
// machine allows: notify's check-config on the ConfigMap laid out as the
// volume does, with the pod's arguments and environment (Secrets given
// test values), and the platform's with its pod environment. The config
// must load and pass production's rules, and each part must be the one the
// values name (the hosts do not resolve here, so connecting fails, which
// check-config reports as it would in the cluster).
func TestHelmRecipeRuns(t *testing.T) {
	bin := govkitBinary(t)
	ms := render(t, filepath.Join(chart, "ci", "production-values.yaml"))
	secrets := func(name string) string { return "test-" + strings.ToLower(name) + "-0123456789abcdef0123456789abcdef" }
	for _, d := range []string{"rel-govkit-notify-primary", "rel-govkit-docplatform"} {
		var dep, configMap manifest
		for _, m := range ms {
			switch {
			case m.kind() == "Deployment" && m.name() == d:
				dep = m
			case m.kind() == "ConfigMap":
				configMap = m
			}
		}
		c := manifest(dep.get("spec", "template", "spec", "containers", 0).(map[string]any))
		var env []string
		for _, e := range c.get("env").([]any) {
			e := manifest(e.(map[string]any))
			v := e.str("value")
			if e.get("valueFrom") != nil {
				v = secrets(e.str("name"))
				if e.str("name") == "DATABASE_URL" {
					v = "postgres://govkit:" + v + "@postgres.db.svc:5432/govkit"
				}
			}
			// $(VAR) references, as the kubelet expands them
			for _, prev := range env {
				k, pv, _ := strings.Cut(prev, "=")
				v = strings.ReplaceAll(v, "$("+k+")", pv)
			}
			env = append(env, e.str("name")+"="+v)
		}
		root := t.TempDir()
		var args []string
		for _, a := range c.get("args").([]any) {
			args = append(args, a.(string))
		}
		var check []string
		switch args[0] {
		case "notify":
			for _, it := range dep.get("spec", "template", "spec", "volumes", 0, "configMap", "items").([]any) {
				it := manifest(it.(map[string]any))
				p := filepath.Join(root, "app/src", it.str("path"))
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				must(t, os.WriteFile(p, []byte(configMap.str("data", it.str("key"))), 0o644))
			}
			check = []string{"notify", "check-config", "--dir", filepath.Join(root, "app"), "--data-dir", filepath.Join(root, "data")}
		case "docplatform":
			check = []string{"docplatform", "check-config", "--data-dir", filepath.Join(root, "data")}
		}
		code, out := runBinary(t, bin, env, "", check...)
		t.Logf("%s: govkit %s\n%s", d, strings.Join(check, " "), out)
		if code != 1 || !strings.Contains(out, "ok    config") {
			t.Errorf("%s: check-config exit %d, want 1 with the config loaded", d, code)
		}
		var want []string
		if args[0] == "notify" {
			want = []string{"store         mongodb mongodb://notify-bc@mongo-0.mongo:27017,mongo-1.mongo:27017,mongo-2.mongo:27017/notify-bc?replicaSet=rs0",
				"queue         redis redis.cache.svc:6379", "SMTP          smtp smtp.example.org:465 (TLS) as notify@example.org",
				"inbound SMTP  listener 0.0.0.0:2525 for notify.example.org", `NODE_ENV="production", primary`}
		} else {
			want = []string{"database           postgresql postgres://govkit@postgres.db.svc:5432/govkit (variable DATABASE_URL)",
				"redis              redis redis://redis.cache.svc:6379/0 (variable REDIS_URL)",
				"document storage   s3 s3://govkit-documents/prod", `NODE_ENV="production", public URL https://docs.example.org`}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: check-config does not say %q", d, w)
			}
		}
		if strings.Contains(out, "warn") {
			t.Errorf("%s: the chart's settings draw warnings", d)
		}
		if strings.Contains(out, secrets("MONGODB_PASSWORD")) || strings.Contains(out, secrets("REDIS_PASSWORD")) {
			t.Errorf("%s: a secret in check-config's output", d)
		}
	}
}
