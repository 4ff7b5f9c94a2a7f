package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/govkit/govkit/notify/config"
)

// deployment writes files (paths relative to the deployment root, e.g.
// "src/config.local.js") and returns the root.
func deployment(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func load(t *testing.T, root, nodeEnv string, env map[string]string) (*config.Config, error) {
	t.Helper()
	return config.Load(config.Options{Dir: filepath.Join(root, "src"), NodeEnv: nodeEnv, Env: env, JSPoolSize: 2})
}

func mustLoad(t *testing.T, root, nodeEnv string, env map[string]string) *config.Config {
	t.Helper()
	c, err := load(t, root, nodeEnv, env)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func problems(t *testing.T, err error) []config.Problem {
	t.Helper()
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *config.Error, got %v", err)
	}
	return ce.Problems
}

func TestLayering(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		nodeEnv string
		path    string
		want    any
	}{
		{
			name:    "env file overrides defaults",
			files:   map[string]string{"src/config.production.json": `{"port": 8080}`},
			nodeEnv: "production", path: "port", want: 8080.0,
		},
		{
			name: "local file overrides env file",
			files: map[string]string{
				"src/config.production.json": `{"httpHost": "http://env"}`,
				"src/config.local.json":      `{"httpHost": "http://local"}`,
			},
			nodeEnv: "production", path: "httpHost", want: "http://local",
		},
		{
			name: "local file overrides env file of another extension",
			files: map[string]string{
				"src/config.production.js": `module.exports = {httpHost: 'http://env'}`,
				"src/config.local.json":    `{"httpHost": "http://local"}`,
			},
			nodeEnv: "production", path: "httpHost", want: "http://local",
		},
		{
			name: "within one layer js overrides json and ts overrides js",
			files: map[string]string{
				"src/config.local.json": `{"httpHost": "json", "internalHttpHost": "json"}`,
				"src/config.local.js":   `module.exports = {httpHost: 'js', internalHttpHost: 'js'}`,
				"src/config.local.ts":   `const c: Record<string, string> = {internalHttpHost: 'ts'}; module.exports = c;`,
			},
			path: "internalHttpHost", want: "ts",
		},
		{
			name:  "deep merge keeps sibling defaults",
			files: map[string]string{"src/config.local.json": `{"email": {"bounce": {"unsubThreshold": 2}}}`},
			path:  "email.bounce", want: map[string]any{
				"enabled": true, "unsubThreshold": 2.0, "subjectRegex": "",
				"smtpStatusCodeRegex":  `5\.\d{1,3}\.\d{1,3}`,
				"failedRecipientRegex": config.Defaults()["email"].(map[string]any)["bounce"].(map[string]any)["failedRecipientRegex"],
			},
		},
		{
			name:  "arrays are replaced, not merged",
			files: map[string]string{"src/config.local.json": `{"adminIps": ["10.0.0.0/8"]}`},
			path:  "adminIps", want: []any{"10.0.0.0/8"},
		},
		{
			name:  "an empty array replaces the default",
			files: map[string]string{"src/config.local.json": `{"adminIps": []}`},
			path:  "adminIps", want: []any{},
		},
		{
			name:  "null replaces an object",
			files: map[string]string{"src/config.local.js": `module.exports = {queue: {connection: null}}`},
			path:  "queue.connection", want: nil,
		},
		{
			name:  "undefined leaves the default",
			files: map[string]string{"src/config.local.js": `module.exports = {port: undefined}`},
			path:  "port", want: 3000.0,
		},
		{
			name:    "base config.json is read below the env file",
			files:   map[string]string{"src/config.json": `{"httpHost": "base", "internalHttpHost": "base"}`, "src/config.production.json": `{"httpHost": "env"}`},
			nodeEnv: "production", path: "internalHttpHost", want: "base",
		},
		{
			name:  "base config.ts is the original's defaults file and is not read",
			files: map[string]string{"src/config.ts": `module.exports = {port: 1}`},
			path:  "port", want: 3000.0,
		},
		{
			name:    "NODE_ENV=test skips local files",
			files:   map[string]string{"src/config.test.json": `{"httpHost": "test"}`, "src/config.local.json": `{"httpHost": "local"}`},
			nodeEnv: "test", path: "httpHost", want: "test",
		},
		{
			name:    "files of another NODE_ENV are not read",
			files:   map[string]string{"src/config.dev.json": `{"httpHost": "dev"}`},
			nodeEnv: "production", path: "httpHost", want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t, deployment(t, tc.files), tc.nodeEnv, nil)
			if got := c.Get(tc.path); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s = %#v, want %#v", tc.path, got, tc.want)
			}
		})
	}
}

func TestLocalFilesSkippedUnderTestEnvAreNotEvenRun(t *testing.T) {
	root := deployment(t, map[string]string{"src/config.local.js": `throw new Error('must not run')`})
	mustLoad(t, root, "test", nil)
	if _, err := load(t, root, "production", nil); err == nil {
		t.Fatal("the local file runs outside NODE_ENV=test")
	}
}

func TestFilesListsWhatWasRead(t *testing.T) {
	root := deployment(t, map[string]string{
		"src/config.production.json":               `{}`,
		"src/config.local.js":                      `module.exports = {}`,
		"src/middleware.local.json":                `{}`,
		"src/datasources/db.datasource.local.json": `{}`,
	})
	c := mustLoad(t, root, "production", nil)
	var names []string
	for _, f := range c.Files {
		rel, _ := filepath.Rel(root, f)
		names = append(names, filepath.ToSlash(rel))
	}
	want := []string{"src/config.production.json", "src/config.local.js", "src/middleware.local.json", "src/datasources/db.datasource.local.json"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("files = %v, want %v", names, want)
	}
}

func TestOriginNamesTheFileThatSetAKey(t *testing.T) {
	root := deployment(t, map[string]string{
		"src/config.production.json":               `{"email": {"smtp": {"host": "smtp.example.org", "port": 25}}, "queue": {"connection": {"host": "redis"}}}`,
		"src/config.local.js":                      `module.exports = {email: {smtp: {port: 2525}}, queue: {connection: null}}`,
		"src/datasources/db.datasource.local.json": `{"uri": "mongodb://m/db"}`,
	})
	c := mustLoad(t, root, "production", nil)
	prod, local := filepath.Join(root, "src", "config.production.json"), filepath.Join(root, "src", "config.local.js")
	for _, tc := range []struct{ path, want string }{
		{"email.smtp.host", prod},
		{"email.smtp.port", local},
		{"email.smtp", local},
		{"queue.connection", local},
		{"queue.connection.host", local}, // null replaced what production said
		{"email.inboundSmtpServer.enabled", ""},
		{"adminIps", ""},
	} {
		if got := c.Origin(tc.path); got != tc.want {
			t.Errorf("Origin(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
	if got, want := c.DatasourceOrigin("uri"), filepath.Join(root, "src", "datasources", "db.datasource.local.json"); got != want {
		t.Errorf("DatasourceOrigin(uri) = %q, want %q", got, want)
	}
}

func TestJavaScriptConfig(t *testing.T) {
	root := deployment(t, map[string]string{
		"secrets/smtp-pass.txt": "s3cret\n",
		"src/config.local.js": `
const path = require('path');
const fs = require('fs');
const os = require('os');
const _ = require('lodash');
module.exports = {
  httpHost: process.env.HTTP_HOST,
  port: process.env.PORT,
  internalHttpHost: 'http://' + os.hostname() + ':3000',
  email: {
    smtp: {
      host: 'smtp.example.com',
      port: 25,
      pool: true,
      auth: { user: 'u', pass: fs.readFileSync(path.join(__dirname, '..', 'secrets', 'smtp-pass.txt'), 'utf8').trim() },
    },
  },
  oidc: {
    discoveryUrl: 'https://op.example/.well-known/openid-configuration',
    clientId: 'NotifyBC',
    isAdmin(user) {
      const roles = user.resource_access.NotifyBC.roles;
      if (!(roles instanceof Array) || roles.length === 0) return false;
      return roles.indexOf('admin') > -1;
    },
    isAuthorizedUser: function (user) { return _.includes(user.realm_access.roles, 'offline_access'); },
  },
  notification: {
    broadcastCustomFilterFunctions: {
      contains_ci: {
        _func: async function (resolvedArgs) {
          if (!resolvedArgs[0] || !resolvedArgs[1]) return false;
          return new Promise((resolve) => setTimeout(() => resolve(_.toLower(resolvedArgs[0]).indexOf(_.toLower(resolvedArgs[1])) >= 0), 5));
        },
        _signature: [{ types: [2] }, { types: [2] }],
      },
    },
  },
};`,
	})
	c := mustLoad(t, root, "production", map[string]string{"HTTP_HOST": "https://notify.example", "PORT": "8080"})
	if c.HTTPHost != "https://notify.example" {
		t.Errorf("httpHost from process.env = %q", c.HTTPHost)
	}
	if c.Port != 8080 {
		t.Errorf("port from process.env = %d", c.Port)
	}
	host, _ := os.Hostname()
	if c.InternalHTTPHost != "http://"+host+":3000" {
		t.Errorf("internalHttpHost with os.hostname() = %q", c.InternalHTTPHost)
	}
	if c.Email.SMTP == nil || c.Email.SMTP.Auth.Pass != "s3cret" || c.Email.SMTP.Port != 25 || !c.Email.SMTP.Pool {
		t.Errorf("smtp = %+v", c.Email.SMTP)
	}
	if c.OIDC == nil || c.OIDC.IsAdmin == nil || c.OIDC.IsAuthorizedUser == nil {
		t.Fatalf("oidc = %+v", c.OIDC)
	}
	admin := map[string]any{
		"resource_access": map[string]any{"NotifyBC": map[string]any{"roles": []any{"admin"}}},
		"realm_access":    map[string]any{"roles": []any{"offline_access"}},
	}
	user := map[string]any{
		"resource_access": map[string]any{"NotifyBC": map[string]any{"roles": []any{}}},
		"realm_access":    map[string]any{"roles": []any{"other"}},
	}
	for _, tc := range []struct {
		name    string
		fn      config.Func
		payload map[string]any
		want    bool
	}{
		{"isAdmin true for the admin role", c.OIDC.IsAdmin, admin, true},
		{"isAdmin false without roles", c.OIDC.IsAdmin, user, false},
		{"isAuthorizedUser true with offline_access", c.OIDC.IsAuthorizedUser, admin, true},
		{"isAuthorizedUser false without it", c.OIDC.IsAuthorizedUser, user, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(context.Background(), tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	ff, ok := c.Notification.BroadcastCustomFilterFunctions["contains_ci"]
	if !ok {
		t.Fatal("contains_ci missing")
	}
	if !reflect.DeepEqual(ff.Signature, []config.ArgSignature{{Types: []int{2}}, {Types: []int{2}}}) {
		t.Errorf("signature = %+v", ff.Signature)
	}
	for _, tc := range []struct {
		args []any
		want bool
	}{
		{[]any{"Hello World", "WORLD"}, true},
		{[]any{"Hello", "bye"}, false},
		{[]any{"", "x"}, false},
	} {
		got, err := ff.Func(context.Background(), tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("contains_ci(%v) = %v, want %v", tc.args, got, tc.want)
		}
	}
	if f, ok := c.Func("oidc.isAdmin"); !ok || f == nil {
		t.Error("Func by path")
	}
	if got, err := c.Call(context.Background(), "oidc.isAdmin", admin); err != nil || got != true {
		t.Errorf("Call = %v, %v", got, err)
	}
}

func TestProcessEnvIsOnlyWhatTheCallerPasses(t *testing.T) {
	t.Setenv("GOVKIT_CONFIG_TEST_LEAK", "leaked")
	root := deployment(t, map[string]string{"src/config.local.js": `module.exports = {httpHost: String(process.env.GOVKIT_CONFIG_TEST_LEAK)}`})
	c := mustLoad(t, root, "", map[string]string{})
	if c.HTTPHost != "undefined" {
		t.Fatalf("process.env showed the real environment: %q", c.HTTPHost)
	}
}

func TestTypeScriptConfig(t *testing.T) {
	root := deployment(t, map[string]string{
		"src/config.local.ts": `
import { toLower } from 'lodash';
import * as path from 'path';
interface Oidc { isAdmin(u: any): boolean }
const oidc: Oidc = { isAdmin: (u: any): boolean => toLower(u.role) === 'admin' };
module.exports = {
  adminIps: ['0.0.0.0/0'],
  queue: { connection: null },
  httpHost: path.join('/a', 'b') as string,
  oidc,
};`,
	})
	c := mustLoad(t, root, "", nil)
	if !reflect.DeepEqual(c.AdminIPs, []string{"0.0.0.0/0"}) || c.Queue.Connection != nil || c.HTTPHost != "/a/b" {
		t.Fatalf("adminIps %v queue %+v httpHost %q", c.AdminIPs, c.Queue.Connection, c.HTTPHost)
	}
	got, err := c.OIDC.IsAdmin(context.Background(), map[string]any{"role": "ADMIN"})
	if err != nil || got != true {
		t.Fatalf("isAdmin = %v, %v", got, err)
	}
}

func TestTypeScriptExportDefault(t *testing.T) {
	root := deployment(t, map[string]string{"src/config.local.ts": `export default { httpHost: 'http://es' };`})
	if c := mustLoad(t, root, "", nil); c.HTTPHost != "http://es" {
		t.Fatalf("httpHost = %q", c.HTTPHost)
	}
}

func TestScriptErrorsNameFileAndLine(t *testing.T) {
	cases := []struct {
		name     string
		file     string
		content  string
		wantLine int
		wantMsg  string
	}{
		{"js syntax error", "src/config.local.js", "module.exports = {\n  port: 3000,\n  adminIps: [,\n  oops oops\n};\n", 4, "syntax error"},
		{"js runtime error", "src/config.local.js", "const x = 1;\n\nnull.foo;\nmodule.exports = {};\n", 3, "TypeError"},
		{"js thrown error", "src/config.local.js", "\n\nthrow new Error('no secret');\n", 3, "no secret"},
		{"require of an unavailable module", "src/config.local.js", "\nconst http = require('http');\n", 2, `require("http")`},
		{"relative require of a missing file", "src/config.local.js", "const s = require('./secrets.json');\n", 1, `Cannot find module './secrets.json'`},
		{"relative require outside the config directory", "src/config.local.js", "\nconst s = require('../secrets.json');\n", 2, "only files in the config directory"},
		{"unavailable lodash function", "src/config.local.js", "const _ = require('lodash');\nmodule.exports = {httpHost: _.camelCase('a b')};\n", 2, "lodash.camelCase is not available"},
		{"ts syntax error", "src/config.local.ts", "const a: number = 1;\nmodule.exports = {\n  port: ,\n};\n", 3, "syntax error"},
		{"ts runtime error points into the ts file", "src/config.local.ts", "interface A { b: string }\nconst a: A | null = null;\n\nconst c = (a as any).b;\nmodule.exports = {};\n", 4, "TypeError"},
		{"json syntax error", "src/config.local.json", "{\n  \"port\": 3000,\n  \"adminIps\": [\"a\",]\n}\n", 3, "invalid JSON"},
		{"json truncated", "src/config.local.json", "{\n  \"port\": 3000,\n", 3, "invalid JSON"},
		{"module.exports not an object", "src/config.local.js", "module.exports = 42;\n", 0, "module.exports must be an object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := deployment(t, map[string]string{tc.file: tc.content})
			_, err := load(t, root, "", nil)
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("problems = %v", ps)
			}
			p := ps[0]
			if filepath.Base(p.File) != filepath.Base(tc.file) {
				t.Errorf("file = %q, want %s", p.File, tc.file)
			}
			if p.Line != tc.wantLine {
				t.Errorf("line = %d, want %d (%s)", p.Line, tc.wantLine, p)
			}
			if !strings.Contains(p.Message, tc.wantMsg) {
				t.Errorf("message %q lacks %q", p.Message, tc.wantMsg)
			}
			if !strings.Contains(err.Error(), filepath.Base(tc.file)) {
				t.Errorf("error text %q does not name the file", err)
			}
		})
	}
}

func TestAllProblemsReportedAtOnce(t *testing.T) {
	root := deployment(t, map[string]string{
		"src/config.local.js":                      "module.exports = {\n  smtp: {host: 'x'},\n  smsServiceProvider: 'swift',\n  port: 'abc',\n};\n",
		"src/middleware.local.json":                `{"initial": {}}`,
		"src/datasources/db.datasource.local.json": `{"url": "mongodb://x"}`,
		"src/config.production.js":                 "module.exports = {\n  a: ,\n};\n",
	})
	_, err := load(t, root, "production", nil)
	ps := problems(t, err)
	want := []string{"config.production.js", "smtp", "smsServiceProvider", "port", "initial", "url"}
	text := err.Error()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("error lacks %q:\n%s", w, text)
		}
	}
	if len(ps) != 6 {
		t.Errorf("%d problems, want 6:\n%s", len(ps), text)
	}
}

func TestWrongTypesAreRefusedWithTheFileThatSetThem(t *testing.T) {
	cases := []struct {
		name string
		json string
		path string
	}{
		{"port must be a number", `{"port": "abc"}`, "port"},
		{"port must be whole", `{"port": 80.5}`, "port"},
		{"adminIps must be strings", `{"adminIps": "127.0.0.1"}`, "adminIps"},
		{"bounce enabled must be boolean", `{"email": {"bounce": {"enabled": "yes"}}}`, "email.bounce.enabled"},
		{"sms provider must be known", `{"sms": {"provider": "nexmo"}}`, "sms.provider"},
		{"enabled throttle needs max", `{"sms": {"throttle": {"max": 0}}}`, "sms.throttle"},
		{"chunk size at least one", `{"notification": {"broadcastSubscriberChunkSize": 0}}`, "notification.broadcastSubscriberChunkSize"},
		{"oidc.isAdmin must be a function", `{"oidc": {"isAdmin": true}}`, "oidc.isAdmin"},
		{"tls without key", `{"tls": {"enabled": true}}`, "tls.enabled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := deployment(t, map[string]string{"src/config.local.json": tc.json})
			_, err := load(t, root, "", nil)
			ps := problems(t, err)
			if len(ps) != 1 || ps[0].Path != tc.path || filepath.Base(ps[0].File) != "config.local.json" {
				t.Fatalf("problems = %v, want one at %s in config.local.json", ps, tc.path)
			}
		})
	}
}

func TestRenamedKeysRefused(t *testing.T) {
	for _, r := range config.RenamedKeys {
		t.Run(r.Path, func(t *testing.T) {
			parts := strings.Split(r.Path, ".")
			var v any = "x"
			for i := len(parts) - 1; i >= 0; i-- {
				v = map[string]any{parts[i]: v}
			}
			js := "module.exports = " + jsLiteral(v) + ";\n"
			root := deployment(t, map[string]string{"src/config.local.js": js})
			_, err := load(t, root, "", nil)
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("problems = %v", ps)
			}
			p := ps[0]
			advice := "govkit notify upgrade --from " + itoa(r.From) + " --to " + itoa(r.From+1)
			if p.Path != r.Path || !strings.Contains(p.Message, r.To) || !strings.Contains(p.Message, advice) {
				t.Fatalf("problem %q does not name %s, %s and %q", p, r.Path, r.To, advice)
			}
		})
	}
}

func TestEveryRenameOfTheSeedIsListed(t *testing.T) {
	want := map[string]int{
		"notification.logSuccessfulBroadcastDispatches": 2,
		"smtp": 3, "inboundSmtpServer": 3, "email.inboundSmtpServer.bounce": 3,
		"notification.handleBounce": 3, "notification.handleListUnsubscribeByEmail": 3,
		"smsServiceProvider": 3, "sms.twilio": 3, "sms.swift": 3,
		"subscription.unsubscriptionEmailDomain": 3,
		"email.throttle.minTime":                 5, "sms.throttle.minTime": 5,
		"email.throttle.clientOptions": 5, "sms.throttle.clientOptions": 5,
		"email.throttle.datastore": 5, "sms.throttle.datastore": 5,
	}
	got := map[string]int{}
	for _, r := range config.RenamedKeys {
		got[r.Path] = r.From
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RenamedKeys = %v, want %v", got, want)
	}
}

func TestAVersion3ConfigReportsEveryRenameTogether(t *testing.T) {
	root := deployment(t, map[string]string{"src/config.local.json": `{
  "smtp": {"host": "smtp.example"},
  "smsServiceProvider": "swift",
  "sms": {"swift": {"accountKey": "k"}},
  "inboundSmtpServer": {"enabled": true, "domain": "d", "bounce": {"unsubThreshold": 3}},
  "notification": {"handleBounce": true, "handleListUnsubscribeByEmail": true, "broadcastSubRequestBatchSize": 10},
  "subscription": {"unsubscriptionEmailDomain": "d"}
}`})
	_, err := load(t, root, "", nil)
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatal(err)
	}
	var paths []string
	for _, p := range ce.Problems {
		paths = append(paths, p.Path)
	}
	want := []string{"notification.handleBounce", "notification.handleListUnsubscribeByEmail", "smtp", "inboundSmtpServer",
		"smsServiceProvider", "sms.swift", "subscription.unsubscriptionEmailDomain"}
	for _, w := range want {
		found := false
		for _, p := range paths {
			found = found || p == w
		}
		if !found {
			t.Errorf("%s not reported; got %v", w, paths)
		}
	}
	if len(ce.Problems) != len(want) {
		t.Errorf("problems = %v", paths)
	}
	warned := false
	for _, w := range ce.Warnings {
		warned = warned || w.Path == "notification.broadcastSubRequestBatchSize"
	}
	if !warned {
		t.Errorf("broadcastSubRequestBatchSize not warned: %v", ce.Warnings)
	}
}

func TestWarnings(t *testing.T) {
	cases := []struct {
		name string
		json string
		path string
		msg  string
	}{
		{"broadcastSubRequestBatchSize is deprecated and ignored", `{"notification": {"broadcastSubRequestBatchSize": 10}}`, "notification.broadcastSubRequestBatchSize", "ignored"},
		{"unknown top-level key", `{"remoting": {"cors": false}}`, "remoting", "unknown key"},
		{"unknown nested key", `{"email": {"bounce": {"enable": true}}}`, "email.bounce.enable", "unknown key"},
		{"bottleneck option", `{"sms": {"throttle": {"maxConcurrent": 1}}}`, "sms.throttle.maxConcurrent", "Bottleneck"},
		{"defaultSmtp removed", `{"email": {"defaultSmtp": {"direct": true}}}`, "email.defaultSmtp", "removed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t, deployment(t, map[string]string{"src/config.local.json": tc.json}), "", nil)
			if len(c.Warnings) != 1 || c.Warnings[0].Path != tc.path || !strings.Contains(c.Warnings[0].Message, tc.msg) {
				t.Fatalf("warnings = %v, want one at %s about %q", c.Warnings, tc.path, tc.msg)
			}
		})
	}
	t.Run("free-form sections are not checked", func(t *testing.T) {
		c := mustLoad(t, deployment(t, map[string]string{"src/config.local.json": `{
			"email": {"smtp": {"host": "h", "anything": 1}, "inboundSmtpServer": {"options": {"secure": true}}},
			"queue": {"connection": {"sentinels": [{"host": "s"}], "name": "mymaster"}},
			"oidc": {"jwtVerifyOptions": {"audience": "NotifyBC"}},
			"subscription": {"confirmationRequest": {"email": {"htmlBody": "x"}}}
		}`}), "", nil)
		if len(c.Warnings) != 0 {
			t.Fatalf("warnings = %v", c.Warnings)
		}
	})
}

func TestMiddleware(t *testing.T) {
	t.Run("local file layers over defaults", func(t *testing.T) {
		root := deployment(t, map[string]string{
			"src/middleware.production.json": `{"apiOnly": {"morgan": {"enabled": true}}}`,
			"src/middleware.local.js":        `module.exports = {all: {compression: {enabled: false}}}`,
		})
		c := mustLoad(t, root, "production", nil)
		if c.Middleware.All["compression"].Enabled {
			t.Error("compression should be disabled by the local file")
		}
		morgan := c.Middleware.APIOnly["morgan"]
		if !morgan.Enabled || len(morgan.Params) != 1 {
			t.Errorf("morgan = %+v: enabled by the env file, params kept from the defaults", morgan)
		}
		if !c.Middleware.APIOnly["helmet"].Enabled {
			t.Error("helmet stays enabled")
		}
	})
	t.Run("test env skips the local middleware file", func(t *testing.T) {
		root := deployment(t, map[string]string{"src/middleware.local.json": `{"all": {"compression": {"enabled": false}}}`})
		if c := mustLoad(t, root, "test", nil); !c.Middleware.All["compression"].Enabled {
			t.Error("local middleware file read under NODE_ENV=test")
		}
	})
	refusals := []struct {
		name, json, path, msg string
	}{
		{"version 1 phase initial", `{"initial": {"compression": {}}}`, "initial", "--from 1 --to 2"},
		{"version 1 phase routes:before", `{"routes:before": {"morgan": {}}}`, "routes:before", "apiOnly"},
		{"params must be an array", `{"apiOnly": {"morgan": {"params": "x"}}}`, "apiOnly.morgan.params", "array"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, deployment(t, map[string]string{"src/middleware.local.json": tc.json}), "", nil)
			ps := problems(t, err)
			if len(ps) != 1 || ps[0].Path != tc.path || !strings.Contains(ps[0].Message, tc.msg) {
				t.Fatalf("problems = %v", ps)
			}
		})
	}
	t.Run("unknown middleware is warned about", func(t *testing.T) {
		c := mustLoad(t, deployment(t, map[string]string{"src/middleware.local.json": `{"all": {"cors": {}}}`}), "", nil)
		if len(c.Warnings) != 1 || c.Warnings[0].Path != "all.cors" {
			t.Fatalf("warnings = %v", c.Warnings)
		}
	})
}

func TestDatasource(t *testing.T) {
	t.Run("uri and driver options layer local over env", func(t *testing.T) {
		root := deployment(t, map[string]string{
			"src/datasources/db.datasource.production.json": `{"uri": "mongodb://env/notifyBC", "user": "env-user"}`,
			"src/datasources/db.datasource.local.js":        `module.exports = {uri: 'mongodb://127.0.0.1:27017/notifyBC?replicaSet=rs0', pass: process.env.MONGODB_PASSWORD}`,
		})
		c := mustLoad(t, root, "production", map[string]string{"MONGODB_PASSWORD": "pw"})
		if c.Datasource.URI != "mongodb://127.0.0.1:27017/notifyBC?replicaSet=rs0" {
			t.Errorf("uri = %q", c.Datasource.URI)
		}
		if !reflect.DeepEqual(c.Datasource.Options, map[string]any{"user": "env-user", "pass": "pw"}) {
			t.Errorf("options = %v", c.Datasource.Options)
		}
	})
	t.Run("no datasource file means the embedded store", func(t *testing.T) {
		if c := mustLoad(t, deployment(t, nil), "", nil); c.Datasource.URI != "" {
			t.Errorf("uri = %q", c.Datasource.URI)
		}
	})
	t.Run("test env skips the local datasource file", func(t *testing.T) {
		root := deployment(t, map[string]string{"src/datasources/db.datasource.local.json": `{"uri": "mongodb://local"}`})
		if c := mustLoad(t, root, "test", nil); c.Datasource.URI != "" {
			t.Errorf("uri = %q", c.Datasource.URI)
		}
	})
	for _, key := range []string{"url", "host", "port", "database"} {
		t.Run(key+" is refused naming uri", func(t *testing.T) {
			root := deployment(t, map[string]string{"src/datasources/db.datasource.local.json": `{"` + key + `": "x"}`})
			_, err := load(t, root, "", nil)
			ps := problems(t, err)
			if len(ps) != 1 || ps[0].Path != key || !strings.Contains(ps[0].Message, "uri") || !strings.Contains(ps[0].Message, "--from 4 --to 5") {
				t.Fatalf("problems = %v", ps)
			}
		})
	}
	for _, key := range []string{"name", "connector", "dbPath"} {
		t.Run(key+" is ignored with a warning", func(t *testing.T) {
			root := deployment(t, map[string]string{"src/datasources/db.datasource.local.json": `{"uri": "mongodb://h/db", "` + key + `": "mongodb"}`})
			c := mustLoad(t, root, "", nil)
			if len(c.Warnings) != 1 || c.Warnings[0].Path != key {
				t.Fatalf("warnings = %v", c.Warnings)
			}
			if _, ok := c.Datasource.Options[key]; ok {
				t.Errorf("%s kept in options", key)
			}
		})
	}
}

func TestVersion1LayoutRefused(t *testing.T) {
	root := deployment(t, map[string]string{"server/config.local.js": `module.exports = {}`})
	_, err := load(t, root, "", nil)
	ps := problems(t, err)
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "--from 1 --to 2") {
		t.Fatalf("problems = %v", ps)
	}
}

func TestCertificates(t *testing.T) {
	t.Run("key and cert enable TLS, ca enables client certificates", func(t *testing.T) {
		root := deployment(t, map[string]string{
			"server/certs/key.pem":  "KEY",
			"server/certs/cert.pem": "CERT",
			"server/certs/ca.pem":   "CA",
		})
		c := mustLoad(t, root, "", nil)
		if !c.TLS.Enabled || !c.TLS.ClientCertificateEnabled || string(c.TLS.Key) != "KEY" || string(c.TLS.Cert) != "CERT" || string(c.TLS.CA) != "CA" {
			t.Fatalf("tls = %+v", c.TLS)
		}
	})
	t.Run("config files may turn them off", func(t *testing.T) {
		root := deployment(t, map[string]string{
			"server/certs/key.pem":  "KEY",
			"server/certs/cert.pem": "CERT",
			"src/config.local.json": `{"tls": {"enabled": false}}`,
		})
		if c := mustLoad(t, root, "", nil); c.TLS.Enabled {
			t.Fatal("tls.enabled false ignored")
		}
	})
	t.Run("a key alone does not enable TLS", func(t *testing.T) {
		root := deployment(t, map[string]string{"server/certs/key.pem": "KEY"})
		if c := mustLoad(t, root, "", nil); c.TLS.Enabled {
			t.Fatal("enabled without cert")
		}
	})
}

func TestNodeRole(t *testing.T) {
	cases := []struct {
		value   string
		want    config.NodeRole
		cron    bool
		workers bool
		refused string
	}{
		{value: "", want: config.RoleAll, cron: true, workers: true},
		{value: "primary", want: config.RolePrimary, cron: true, workers: false},
		{value: "secondary", want: config.RoleSecondary, cron: false, workers: true},
		{value: "slave", refused: "secondary"},
		{value: "master", refused: "unset"},
		{value: "worker", refused: "primary or secondary"},
	}
	for _, tc := range cases {
		t.Run("NOTIFYBC_NODE_ROLE="+tc.value, func(t *testing.T) {
			r, err := config.ParseNodeRole(tc.value)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err = %v, want a refusal naming %q", err, tc.refused)
				}
				return
			}
			if err != nil || r != tc.want || r.RunsCron() != tc.cron || r.RunsWorkers() != tc.workers {
				t.Fatalf("role %q cron %v workers %v err %v", r, r.RunsCron(), r.RunsWorkers(), err)
			}
		})
	}
}

func TestRawIsACopy(t *testing.T) {
	c := mustLoad(t, deployment(t, nil), "", nil)
	raw := c.Raw()
	raw["email"].(map[string]any)["bounce"].(map[string]any)["enabled"] = false
	if v, _ := c.Bool("email.bounce.enabled"); !v {
		t.Fatal("changing Raw changed the config")
	}
	if n, ok := c.Int("notification.broadcastSubscriberChunkSize"); !ok || n != 1000 {
		t.Fatalf("Int = %d %v", n, ok)
	}
	if s, ok := c.String("sms.provider"); !ok || s != "twilio" {
		t.Fatalf("String = %q %v", s, ok)
	}
	if _, ok := c.Int("email.bounce.smtpStatusCodeRegex"); ok {
		t.Fatal("Int of a string")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func jsLiteral(v any) string {
	switch t := v.(type) {
	case map[string]any:
		var parts []string
		for k, e := range t {
			parts = append(parts, "'"+k+"': "+jsLiteral(e))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case string:
		return "'" + t + "'"
	}
	return "null"
}

func TestKeyProblemsCarryTheLineWhereTheKeyIsWritten(t *testing.T) {
	cases := []struct {
		name, file, content, path string
		line                      int
	}{
		{"renamed key in js", "src/config.local.js", "const x = 1;\nmodule.exports = {\n  email: {},\n  smtp: {\n    host: 'h',\n  },\n};\n", "smtp", 4},
		{"nested renamed key in js", "src/config.local.js", "module.exports = {\n  notification: {\n    broadcastSubscriberChunkSize: 10,\n    handleBounce: true,\n  },\n};\n", "notification.handleBounce", 4},
		{"renamed key in a config object assigned later", "src/config.local.js", "const config = {\n  sms: {\n    swift: {accountKey: 'k'},\n  },\n};\nmodule.exports = config;\n", "sms.swift", 3},
		{"renamed key in ts", "src/config.local.ts", "interface C { [k: string]: any }\nconst c: C = {\n  port: 3000,\n  smsServiceProvider: 'swift',\n};\nmodule.exports = c;\n", "smsServiceProvider", 4},
		{"renamed key in json", "src/config.local.json", "{\n  \"port\": 3000,\n  \"inboundSmtpServer\": {}\n}\n", "inboundSmtpServer", 3},
		{"wrong type in js", "src/config.local.js", "module.exports = {\n  email: {\n    bounce: {\n      unsubThreshold: 'five',\n    },\n  },\n};\n", "email.bounce.unsubThreshold", 4},
		{"datasource url in js", "src/datasources/db.datasource.local.js", "module.exports = {\n\n  url: 'mongodb://x',\n};\n", "url", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, deployment(t, map[string]string{tc.file: tc.content}), "", nil)
			ps := problems(t, err)
			if len(ps) != 1 || ps[0].Path != tc.path || ps[0].Line != tc.line {
				t.Fatalf("problems = %v, want %s at line %d", ps, tc.path, tc.line)
			}
			if !strings.Contains(err.Error(), filepath.Base(tc.file)+":"+strconv.Itoa(tc.line)+": "+tc.path) {
				t.Fatalf("error text %q lacks file:line: path", err)
			}
		})
	}
}

func TestCustomFilterFunctionSignatures(t *testing.T) {
	cases := []struct {
		name    string
		sig     string
		want    []config.ArgSignature
		problem string
	}{
		{"numeric codes as the original writes them", `[{types: [2]}, {types: [3, 7]}]`, []config.ArgSignature{{Types: []int{2}}, {Types: []int{3, 7}}}, ""},
		{"type names", `[{types: ['string']}, {types: ['array[number]'], variadic: true}]`, []config.ArgSignature{{Types: []int{2}}, {Types: []int{8}, Variadic: true}}, ""},
		{"no signature", `undefined`, nil, ""},
		{"unknown code", `[{types: [42]}]`, nil, "notification.broadcastCustomFilterFunctions.f._signature.0.types"},
		{"not an array", `'string'`, nil, "notification.broadcastCustomFilterFunctions.f._signature"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js := "module.exports = {notification: {broadcastCustomFilterFunctions: {f: {_func: function (a) { return a[0]; }, _signature: " + tc.sig + "}}}};"
			c, err := load(t, deployment(t, map[string]string{"src/config.local.js": js}), "", nil)
			if tc.problem != "" {
				ps := problems(t, err)
				if len(ps) != 1 || ps[0].Path != tc.problem {
					t.Fatalf("problems = %v, want one at %s", ps, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f := c.Notification.BroadcastCustomFilterFunctions["f"]
			if !reflect.DeepEqual(f.Signature, tc.want) {
				t.Fatalf("signature = %+v, want %+v", f.Signature, tc.want)
			}
			if got, err := f.Func(context.Background(), []any{"x"}); err != nil || got != "x" {
				t.Fatalf("call = %v, %v", got, err)
			}
		})
	}
}

func TestServiceSubscriptionConfigMergesOverTheStaticOne(t *testing.T) {
	c := mustLoad(t, deployment(t, map[string]string{"src/config.local.json": `{"subscription": {"detectDuplicatedSubscription": true}}`}), "", nil)
	static := c.Raw()["subscription"].(map[string]any)
	dynamic := map[string]any{
		"confirmationAcknowledgements":       map[string]any{"redirectUrl": "https://myapp/ack"},
		"confirmationRequest":                map[string]any{"email": map[string]any{"textBody": "Code {confirmation_code}"}},
		"anonymousUnsubscription":            map[string]any{"acknowledgements": map[string]any{"notification": nil}},
		"duplicatedSubscriptionNotification": map[string]any{"sms": nil},
	}
	s, ps := config.DecodeSubscription(config.Merge(static, dynamic))
	if len(ps) != 0 {
		t.Fatal(ps)
	}
	if !s.DetectDuplicatedSubscription {
		t.Error("static value lost")
	}
	if s.ConfirmationAcknowledgements.RedirectURL != "https://myapp/ack" || s.ConfirmationAcknowledgements.SuccessMessage != "You have been subscribed." {
		t.Errorf("acks = %+v", s.ConfirmationAcknowledgements)
	}
	email := s.ConfirmationRequest["email"]
	if email.TextBody != "Code {confirmation_code}" || email.Subject != "Subscription confirmation" || !email.SendRequest || email.ConfirmationCodeRegex != `\d{5}` {
		t.Errorf("email confirmation = %+v", email)
	}
	if s.AnonymousUnsubscription.Acknowledgements.Notification != nil {
		t.Errorf("notification: null must disable the acknowledgement, got %+v", s.AnonymousUnsubscription.Acknowledgements.Notification)
	}
	if tpl, ok := s.DuplicatedSubscriptionNotification["sms"]; !ok || tpl != nil {
		t.Errorf("a null channel must be present and nil, got %v %v", tpl, ok)
	}
	if c.Subscription.ConfirmationAcknowledgements.RedirectURL != "" {
		t.Error("merging changed the static config")
	}
	_, ps = config.DecodeSubscription(map[string]any{"confirmationRequest": map[string]any{"email": map[string]any{"sendRequest": "yes"}}})
	if len(ps) != 1 || ps[0].Path != "subscription.confirmationRequest.email.sendRequest" {
		t.Errorf("problems = %v", ps)
	}
}

func TestMerge(t *testing.T) {
	cases := []struct {
		name     string
		dst, src map[string]any
		want     map[string]any
	}{
		{"objects merge key by key", map[string]any{"a": map[string]any{"x": 1.0, "y": 2.0}}, map[string]any{"a": map[string]any{"y": 3.0}}, map[string]any{"a": map[string]any{"x": 1.0, "y": 3.0}}},
		{"arrays replace", map[string]any{"a": []any{1.0, 2.0}}, map[string]any{"a": []any{3.0}}, map[string]any{"a": []any{3.0}}},
		{"null replaces", map[string]any{"a": map[string]any{"x": 1.0}}, map[string]any{"a": nil}, map[string]any{"a": nil}},
		{"object replaces a scalar", map[string]any{"a": "s"}, map[string]any{"a": map[string]any{"x": 1.0}}, map[string]any{"a": map[string]any{"x": 1.0}}},
		{"scalar replaces an object", map[string]any{"a": map[string]any{"x": 1.0}}, map[string]any{"a": false}, map[string]any{"a": false}},
		{"nil dst", nil, map[string]any{"a": 1.0}, map[string]any{"a": 1.0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := config.Merge(tc.dst, tc.src); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("merged values are copies of src", func(t *testing.T) {
		src := map[string]any{"a": map[string]any{"x": []any{1.0}}}
		got := config.Merge(nil, src)
		src["a"].(map[string]any)["x"].([]any)[0] = 2.0
		if got["a"].(map[string]any)["x"].([]any)[0] != 1.0 {
			t.Fatal("src change showed through")
		}
	})
}

func TestMissingConfigDirectoryIsAWarning(t *testing.T) {
	c, err := config.Load(config.Options{Dir: filepath.Join(t.TempDir(), "nope")})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0].Message, "config directory not found") {
		t.Fatalf("warnings = %v", c.Warnings)
	}
}

func TestNullPortAndHostMeanTheDefaults(t *testing.T) {
	c, err := config.New(map[string]any{"port": nil, "host": nil})
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 3000 || c.Host != "0.0.0.0" {
		t.Fatalf("port %d host %q", c.Port, c.Host)
	}
}

func TestNodeEnvIsVisibleToScripts(t *testing.T) {
	root := deployment(t, map[string]string{"src/config.production.js": `module.exports = {httpHost: process.env.NODE_ENV}`})
	if c := mustLoad(t, root, "production", nil); c.HTTPHost != "production" {
		t.Fatalf("process.env.NODE_ENV = %q", c.HTTPHost)
	}
}

// TestConfigFunctionsFromManyGoroutines calls oidc.isAdmin concurrently
// through the loaded config; run with -race.
func TestConfigFunctionsFromManyGoroutines(t *testing.T) {
	root := deployment(t, map[string]string{"src/config.local.js": `module.exports = {oidc: {isAdmin(u) { return u.roles.includes('admin'); }}};`})
	c := mustLoad(t, root, "", nil)
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				want := (g+i)%3 == 0
				roles := []any{"user"}
				if want {
					roles = append(roles, "admin")
				}
				got, err := c.OIDC.IsAdmin(context.Background(), map[string]any{"roles": roles})
				if err != nil || got != want {
					errs <- fmt.Errorf("goroutine %d call %d: %v %v", g, i, got, err)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEditedDefaultsFilesAreWarnedAbout(t *testing.T) {
	defaultsTS := func(edit func(map[string]any)) string {
		d := config.Defaults()
		edit(d)
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return "import * as fs from 'fs';\nimport path from 'path';\nconst config: Record<string, any> = " + string(b) + ";\n" +
			"for (const e of ['key', 'cert', 'ca']) {\n  const p = path.join(__dirname, `../server/certs/${e}.pem`);\n  if (fs.existsSync(p)) config.tls[e] = fs.readFileSync(p);\n}\nmodule.exports = config;\n"
	}
	cases := []struct {
		name  string
		files map[string]string
		want  []string // warned paths
	}{
		{"an unedited config.ts gives no warning", map[string]string{"src/config.ts": defaultsTS(func(map[string]any) {})}, nil},
		{"an edited value is named", map[string]string{"src/config.ts": defaultsTS(func(d map[string]any) {
			d["email"].(map[string]any)["bounce"].(map[string]any)["unsubThreshold"] = 9.0
		})}, []string{"email.bounce.unsubThreshold"}},
		{"added and removed keys are named", map[string]string{"src/config.ts": defaultsTS(func(d map[string]any) {
			d["httpHost"] = "http://x"
			delete(d, "loggingLevels")
		})}, []string{"httpHost", "loggingLevels"}},
		{"an edited middleware.ts is named", map[string]string{"src/middleware.ts": "module.exports = {all: {compression: {}}, apiOnly: {helmet: {}, morgan: {params: ['x'], enabled: true}}};"},
			[]string{"apiOnly.morgan.enabled", "apiOnly.morgan.params"}},
		{"the original's datasource dbPath is not an edit", map[string]string{"src/datasources/db.datasource.ts": "import path from 'path';\nmodule.exports = { dbPath: path.join(__dirname, '..', '..', 'server/database') };\n"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t, deployment(t, tc.files), "production", nil)
			var got []string
			for _, w := range c.Warnings {
				got = append(got, w.Path)
				if !strings.Contains(w.Message, "not read") || w.Line == 0 && !strings.Contains(tc.name, "removed") {
					t.Errorf("warning %v", w)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("warned %v, want %v", got, tc.want)
			}
			if c.Port != 3000 || c.Email.Bounce.UnsubThreshold != 5 {
				t.Fatal("the defaults file was read")
			}
		})
	}
	t.Run("an older defaults file that cannot run is a warning, not an error", func(t *testing.T) {
		c := mustLoad(t, deployment(t, map[string]string{"src/config.ts": "import {juggler} from '@loopback/repository';\nconst config = {ds: juggler};\nmodule.exports = config;\n"}), "", nil)
		if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0].Message, "could not be compared") {
			t.Fatalf("warnings = %v", c.Warnings)
		}
	})
}

func TestNewFromTrees(t *testing.T) {
	isAdmin := config.Func(func(_ context.Context, args ...any) (any, error) {
		return args[0].(map[string]any)["admin"] == true, nil
	})
	c, err := config.New(
		map[string]any{"adminIps": []any{}, "queue": map[string]any{"connection": nil}},
		map[string]any{"oidc": map[string]any{"discoveryUrl": "http://op", "isAdmin": isAdmin}, "port": 0.0},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.AdminIPs) != 0 || c.Queue.Connection != nil || c.Port != 0 || c.RestAPIRoot != "/api" {
		t.Fatalf("config = %+v", c)
	}
	if got, err := c.OIDC.IsAdmin(context.Background(), map[string]any{"admin": true}); err != nil || got != true {
		t.Fatalf("isAdmin = %v %v", got, err)
	}
	_, err = config.New(map[string]any{"smtp": map[string]any{"host": "h"}})
	ps := problems(t, err)
	if len(ps) != 1 || ps[0].File != "override 1" || ps[0].Path != "smtp" {
		t.Fatalf("problems = %v", ps)
	}
}

// TestRelativeRequireAsTheHelmChartDoes covers the original chart's layout:
// its db.datasource.local.js is `module.exports =
// require('./db.datasource.production.js')`.
func TestRelativeRequireAsTheHelmChartDoes(t *testing.T) {
	root := deployment(t, map[string]string{
		"src/datasources/db.datasource.production.js": "module.exports = {\n  uri: `mongodb://${process.env.MONGODB_USER}:${process.env.MONGODB_PASSWORD}@${process.env.DATABASE_SERVICE_NAME}:${process.env.DB_PORT || 27017}/${process.env.MONGODB_DATABASE}?replicaSet=${process.env.MONGODB_REPLICA_SET_NAME}`\n};\n",
		"src/datasources/db.datasource.local.js":      "module.exports = require('./db.datasource.production.js');\n",
		"src/config.production.js":                    "module.exports = {\n  queue: {connection: {sentinels: [{host: process.env.REDIS_SERVICE_NAME}], name: 'mymaster', password: process.env.REDIS_PASSWORD}},\n};\n",
		"src/config.local.js":                         "const shared = require('./shared');\nconst extra = require('./extra.json');\nmodule.exports = {httpHost: extra.host, oidc: {isAdmin: shared.isAdmin}};\n",
		"src/shared.js":                               "let calls = 0;\nexports.isAdmin = function (u) { calls++; return u.admin === true; };\n",
		"src/extra.json":                              `{"host": "https://notify.example"}`,
	})
	env := map[string]string{
		"MONGODB_USER": "u", "MONGODB_PASSWORD": "p", "DATABASE_SERVICE_NAME": "mongo", "MONGODB_DATABASE": "notify-bc",
		"MONGODB_REPLICA_SET_NAME": "rs0", "REDIS_SERVICE_NAME": "redis", "REDIS_PASSWORD": "rp",
	}
	c := mustLoad(t, root, "production", env)
	if c.Datasource.URI != "mongodb://u:p@mongo:27017/notify-bc?replicaSet=rs0" {
		t.Errorf("uri = %q", c.Datasource.URI)
	}
	q := c.Queue.Connection
	if q == nil || q.Name != "mymaster" || q.Password != "rp" || len(q.Sentinels) != 1 || q.Sentinels[0] != (config.HostPort{Host: "redis", Port: 26379}) {
		t.Errorf("queue = %+v", q)
	}
	if c.HTTPHost != "https://notify.example" {
		t.Errorf("httpHost from a required JSON file = %q", c.HTTPHost)
	}
	for _, admin := range []bool{true, false} {
		if got, err := c.OIDC.IsAdmin(context.Background(), map[string]any{"admin": admin}); err != nil || got != admin {
			t.Errorf("isAdmin from a required module = %v, %v", got, err)
		}
	}
	t.Run("an error in a required file names that file and line", func(t *testing.T) {
		root := deployment(t, map[string]string{
			"src/config.local.js": "module.exports = require('./broken');\n",
			"src/broken.js":       "const a = 1;\n\nthrow new Error('broken on purpose');\n",
		})
		_, err := load(t, root, "", nil)
		ps := problems(t, err)
		if len(ps) != 1 || filepath.Base(ps[0].File) != "broken.js" || ps[0].Line != 3 || !strings.Contains(ps[0].Message, "broken on purpose") {
			t.Fatalf("problems = %v", ps)
		}
	})
}

func TestRedactedHidesSecrets(t *testing.T) {
	c, err := config.New(map[string]any{
		"email": map[string]any{"smtp": map[string]any{"host": "smtp.example", "auth": map[string]any{"user": "u", "pass": "p"}}},
		"sms":   map[string]any{"providerSettings": map[string]any{"twilio": map[string]any{"accountSid": "sid", "authToken": "t"}, "swift": map[string]any{"accountKey": "k", "notifyBCSwiftKey": "sk"}}},
		"queue": map[string]any{"connection": map[string]any{"password": "rp", "sentinelPassword": "sp"}},
		"tls":   map[string]any{"key": "PEM"},
		"oidc":  map[string]any{"isAdmin": config.Func(func(context.Context, ...any) (any, error) { return true, nil })},
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, secret := range []string{`"p"`, `"t"`, `"k"`, `"sk"`, `"rp"`, `"sp"`, `"PEM"`} {
		if strings.Contains(text, secret) {
			t.Errorf("%s visible in %s", secret, text)
		}
	}
	for _, shown := range []string{`"smtp.example"`, `"user":"u"`, `"accountSid":"sid"`, `"isAdmin":"[function]"`, `"restApiRoot":"/api"`} {
		if !strings.Contains(text, shown) {
			t.Errorf("%s missing from %s", shown, text)
		}
	}
}

func TestOutboundRequests(t *testing.T) {
	c, err := config.New(map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.OutboundRequests.Allow) != 0 || !c.OutboundRequests.AllowPrivateNetworks {
		t.Fatalf("defaults %+v", c.OutboundRequests)
	}
	c, err = config.New(map[string]any{"outboundRequests": map[string]any{"allow": []any{"10.0.0.0/8", "feeds.internal"}, "allowPrivateNetworks": false}})
	if err != nil || len(c.OutboundRequests.Allow) != 2 || c.OutboundRequests.AllowPrivateNetworks {
		t.Fatalf("%+v %v", c.OutboundRequests, err)
	}
	_, err = config.New(map[string]any{"outboundRequests": map[string]any{"allow": []any{"localhost", "http://x/"}, "allowPrivateNetworks": "no"}})
	ps := problems(t, err)
	if len(ps) != 2 || ps[0].Path != "outboundRequests.allow.1" || ps[1].Path != "outboundRequests.allowPrivateNetworks" {
		t.Fatalf("problems = %v", ps)
	}
}

func TestFerretDBPostgresURI(t *testing.T) {
	t.Run("read, kept out of the driver options and redacted", func(t *testing.T) {
		root := deployment(t, map[string]string{
			"src/datasources/db.datasource.local.json": `{"uri": "mongodb://ferretdb/notifyBC", "ferretdbPostgresUri": "postgres://ferret:s3cret@pg/ferretdb"}`,
		})
		c := mustLoad(t, root, "", nil)
		if got := c.Datasource.FerretDBPostgresURI; got != "postgres://ferret:s3cret@pg/ferretdb" {
			t.Errorf("FerretDBPostgresURI = %q", got)
		}
		if _, ok := c.Datasource.Options["ferretdbPostgresUri"]; ok {
			t.Error("ferretdbPostgresUri is passed to the MongoDB driver")
		}
		for _, w := range c.Warnings {
			if strings.Contains(w.String(), "ferretdbPostgresUri") {
				t.Errorf("warned: %s", w)
			}
		}
		b, _ := json.Marshal(config.Redact(c.RawDatasource()))
		if strings.Contains(string(b), "s3cret") {
			t.Errorf("the password shows in %s", b)
		}
	})
	t.Run("not a postgres URL is refused without quoting it", func(t *testing.T) {
		root := deployment(t, map[string]string{
			"src/datasources/db.datasource.local.json": `{"uri": "mongodb://ferretdb/notifyBC", "ferretdbPostgresUri": "mysql://u:s3cret@db/x"}`,
		})
		_, err := load(t, root, "", nil)
		ps := problems(t, err)
		if len(ps) != 1 || ps[0].Path != "ferretdbPostgresUri" || strings.Contains(ps[0].Message, "s3cret") {
			t.Errorf("problems %v", ps)
		}
	})
}
