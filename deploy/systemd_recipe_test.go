package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/sso/ssotest"
	"github.com/govkit/govkit/notify/mailcatcher"
)

// unit is the [Service] settings of a unit file that the recipe relies on.
type unit struct {
	execStart   []string
	environment []string // Environment= assignments
	envFiles    []string // EnvironmentFile= paths
	user        string
	stateDir    string
}

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var u unit
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		switch k {
		case "ExecStart":
			u.execStart = strings.Fields(v)
		case "Environment":
			u.environment = append(u.environment, v)
		case "EnvironmentFile":
			u.envFiles = append(u.envFiles, v)
		case "User":
			u.user = v
		case "StateDirectory":
			u.stateDir = v
		}
	}
	return u
}

// readEnvFile reads an EnvironmentFile as systemd does (NAME=value lines,
// # comments).
func readEnvFile(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out
}

// etcCopy copies the recipe's /etc/govkit under root, applying edits
// (old → new) to the files, as an operator fills them in.
func etcCopy(t *testing.T, root string, edits map[string][2]string) {
	t.Helper()
	must(t, filepath.WalkDir("systemd/etc", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel("systemd", p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		text := string(b)
		for name, e := range edits {
			if strings.HasSuffix(rel, name) {
				if !strings.Contains(text, e[0]) {
					t.Fatalf("%s has no %q to fill in", rel, e[0])
				}
				text = strings.Replace(text, e[0], e[1], 1)
			}
		}
		dst := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, []byte(text), 0o600)
	}))
}

// unitCommand is a unit's ExecStart with /etc/govkit and the state
// directory under root, the binary replaced, and listen addresses on free
// ports (the unit's own are fixed ones another test may hold).
func unitCommand(u unit, root string) []string {
	state := filepath.Join(root, "var/lib", u.stateDir)
	var args []string
	for _, a := range u.execStart[1:] {
		a = strings.ReplaceAll(a, "${STATE_DIRECTORY}", state)
		a = strings.ReplaceAll(a, "/etc/govkit", filepath.Join(root, "etc/govkit"))
		if regexp.MustCompile(`^127\.0\.0\.1:\d+$`).MatchString(a) {
			a = "127.0.0.1:0"
		}
		args = append(args, a)
	}
	return args
}

// unitEnv is the environment systemd gives the service: Environment=,
// then each EnvironmentFile= (under root).
func unitEnv(t *testing.T, u unit, root string) []string {
	env := append([]string{}, u.environment...)
	for _, f := range u.envFiles {
		env = append(env, readEnvFile(t, filepath.Join(root, strings.TrimPrefix(f, "/")))...)
	}
	return env
}

// startServe runs a serve command in the background until the test ends
// and returns the first submatch of ready in its output (stdout and
// stderr), and the lines before it.
func startServe(t *testing.T, bin string, env []string, ready *regexp.Regexp, args ...string) (string, []string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	stdout := pr
	must(t, cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); pw.Close(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var before []string
	for line := range lines {
		if m := ready.FindStringSubmatch(line); m != nil {
			go func() {
				for range lines {
				}
			}()
			return m[1], before
		}
		before = append(before, line)
	}
	t.Fatalf("govkit %v stopped before serving:\n%s", args, strings.Join(before, "\n"))
	return "", nil
}

func getStatus(t *testing.T, url string, header ...string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestSystemdRecipeRuns walks the systemd recipe's steps with the same
// binary the Dockerfile builds, as far as this machine allows (no systemd
// runs the units here): /etc/govkit is laid out from the example files and
// filled in as the README says (the SMTP server and OpenID provider
// replaced by local ones), then each unit's commands run with the unit's
// environment and its ExecStart's flags — check-config (every part ok),
// the first administrator, serve (health, a sign-in, the metrics), and the
// proxy-list defaults it replaces (127.0.0.1 is no admin address).
func TestSystemdRecipeRuns(t *testing.T) {
	bin := govkitBinary(t)
	root := t.TempDir()
	catcher := mailcatcher.New(mailcatcher.Options{})
	smtpAddr, stopMail, err := catcher.Start(context.Background(), "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { stopMail(context.Background()) })
	_, smtpPort, _ := net.SplitHostPort(smtpAddr)
	idp := ssotest.New(t)
	etcCopy(t, root, map[string][2]string{
		"notify/src/config.local.js": {"host: 'smtp.example.org',\n      port: 587,", "host: '127.0.0.1',\n      port: " + smtpPort + ","},
		"notify.env":                 {"SMTP_PASSWORD=", "SMTP_PASSWORD=test-smtp-password"},
		"docplatform.env":            {"SSO_AUTH_SERVER_URL=https://keycloak.example.org/auth", "SSO_AUTH_SERVER_URL=" + idp.Issuer + "/protocol/openid-connect"},
	})
	// the rest of the platform's blanks
	envFile := filepath.Join(root, "etc/govkit/docplatform.env")
	b, _ := os.ReadFile(envFile)
	filled := strings.NewReplacer("SSO_CLIENT_SECRET=\n", "SSO_CLIENT_SECRET="+idp.ClientSecret+"\n", "SSO_CLIENT_ID=govkit-platform", "SSO_CLIENT_ID="+idp.ClientID,
		"COOKIE_SECRET=\n", "COOKIE_SECRET="+strings.Repeat("c", 64)+"\n").Replace(string(b))
	must(t, os.WriteFile(envFile, []byte(filled), 0o600))
	// notify's API port of the example is fixed; a free one here.
	cfgPath := filepath.Join(root, "etc/govkit/notify/src/config.local.js")
	b, _ = os.ReadFile(cfgPath)
	must(t, os.WriteFile(cfgPath, []byte(strings.Replace(strings.Replace(string(b), "port: 3000,", "port: 0,", 1), "listeningSmtpPort: 2525", "listeningSmtpPort: 0", 1)), 0o644))

	t.Run("notify", func(t *testing.T) {
		u := readUnit(t, "systemd/govkit-notify.service")
		env := unitEnv(t, u, root)
		serve := unitCommand(u, root)
		if serve[0] != "notify" || serve[1] != "serve" {
			t.Fatalf("ExecStart %v", u.execStart)
		}
		flags := serve[2:]
		var deployment []string // --dir and --data-dir, which admin and check-config take too
		for i := 0; i < len(flags); i += 2 {
			if flags[i] != "--metrics-listen" {
				deployment = append(deployment, flags[i], flags[i+1])
			}
		}
		code, out := runBinary(t, bin, env, "", append([]string{"notify", "check-config"}, deployment...)...)
		if code != 0 || strings.Contains(out, "warn") {
			t.Fatalf("check-config: exit %d\n%s", code, out)
		}
		for _, want := range []string{"ok    store         embedded", "ok    SMTP          smtp 127.0.0.1:" + smtpPort + " as notify@example.org", `NODE_ENV="production"`} {
			if !strings.Contains(out, want) {
				t.Errorf("check-config does not say %q:\n%s", want, out)
			}
		}
		code, out = runBinary(t, bin, env, "Recipe-Passw0rd!\n", append([]string{"notify", "admin", "add", "--email", "ops@example.org"}, deployment...)...)
		if code != 0 {
			t.Fatalf("admin add: exit %d\n%s", code, out)
		}
		url, _ := startServe(t, bin, env, regexp.MustCompile(`^notify: serving (\S+)`), serve...)
		if code, _ := getStatus(t, url+"/health"); code != 200 {
			t.Fatalf("health %d", code)
		}
		// 127.0.0.1 (the same-host proxy's address) is no admin address,
		// with or without X-Forwarded-For.
		for _, h := range [][]string{nil, {"X-Forwarded-For", "203.0.113.9"}} {
			_, who := getStatus(t, url+"/administrators/whoami", h...)
			if !strings.Contains(string(who), `"role":"Anonymous"`) {
				t.Errorf("a request from the proxy's address %v is %s", h, who)
			}
		}
		body, _ := json.Marshal(map[string]string{"email": "ops@example.org", "password": "Recipe-Passw0rd!"})
		resp, err := http.Post(url+"/administrators/login", "application/json", bytes.NewReader(body))
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the administrator the recipe adds cannot sign in: %d", resp.StatusCode)
		}
	})

	t.Run("docplatform", func(t *testing.T) {
		u := readUnit(t, "systemd/govkit-docplatform.service")
		env := unitEnv(t, u, root)
		serve := unitCommand(u, root)
		if serve[0] != "docplatform" || serve[1] != "serve" || serve[2] != "--data-dir" {
			t.Fatalf("ExecStart %v", u.execStart)
		}
		env = append(env, "METRICS_LISTEN=127.0.0.1:0") // the example's 9464, on a free port
		code, out := runBinary(t, bin, env, "", "docplatform", "check-config", "--data-dir", serve[3])
		if code != 0 {
			t.Fatalf("check-config: exit %d\n%s", code, out)
		}
		if strings.Contains(out, "warn") {
			t.Errorf("the recipe's settings draw warnings:\n%s", out)
		}
		url, before := startServe(t, bin, env, regexp.MustCompile(`"msg":"listening","url":"([^"]+)"`), serve...)
		if code, _ := getStatus(t, url+"/api/health"); code != 200 {
			t.Fatalf("health %d", code)
		}
		metricsURL := ""
		for _, l := range before {
			if m := regexp.MustCompile(`"msg":"metrics listening","url":"([^"]+)"`).FindStringSubmatch(l); m != nil {
				metricsURL = m[1]
			}
		}
		if code, body := getStatus(t, metricsURL); code != 200 || !bytes.Contains(body, []byte(`docplatform_http_requests_total{route="GET /api/health",status="200"} 1`)) {
			t.Errorf("metrics at %q: %d", metricsURL, code)
		}
		code, out = runBinary(t, bin, env, "", "docplatform", "grant-admin", "--sub", "user-ops", "--data-dir", serve[3])
		if code != 0 {
			t.Fatalf("grant-admin: exit %d\n%s", code, out)
		}
	})
}
