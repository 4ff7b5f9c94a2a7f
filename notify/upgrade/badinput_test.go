package upgrade

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMain lets a test run the command in a child process as another user
// (see runAsNobody).
func TestMain(m *testing.M) {
	if args := os.Getenv("GOVKIT_UPGRADE_HELPER_ARGS"); args != "" {
		var a []string
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			panic(err)
		}
		os.Exit(Main(context.Background(), a, os.Stdout, os.Stderr, func(string) (string, bool) { return "", false }))
	}
	os.Exit(m.Run())
}

// Bad input is refused with a message naming the file (and line where
// there is one), exit code 1 or 2, and the directory stays byte for byte
// as it was.
func TestBadInputChangesNothing(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		args     []string
		env      map[string]string
		wantCode int
		wantErr  []string
	}{
		{"an unparsable JSON file names its line and column",
			map[string]string{"src/config.local.json": "{\n  \"notification\": {\n    \"logSuccessfulBroadcastDispatches\": true,\n  }\n}\n"},
			[]string{"--from", "2", "--to", "3"}, nil, ExitProblems,
			[]string{"src/config.local.json:4:", "cannot parse as JSON"}},
		{"an unparsable JavaScript file names its line",
			map[string]string{"src/config.local.js": "module.exports = {\n  smtp: { host: 'x' \n  port: 25 },\n};\n"},
			[]string{"--from", "3", "--to", "4"}, nil, ExitProblems,
			[]string{"src/config.local.js:3:", "cannot parse as JavaScript"}},
		{"a JavaScript file of another shape asks for module.exports = { … }",
			map[string]string{"src/datasources/db.datasource.local.js": "module.exports = require('./db.datasource.production.js');\n"},
			[]string{"--from", "4", "--to", "5"}, nil, ExitProblems,
			[]string{"src/datasources/db.datasource.local.js", "module.exports = { … }"}},
		{"a later assignment to module.exports is refused",
			map[string]string{"src/config.local.js": "module.exports = {};\nmodule.exports.smtp = {host: 'x'};\n"},
			[]string{"--from", "3", "--to", "4"}, nil, ExitProblems,
			[]string{"src/config.local.js:2", "module.exports = { … }"}},
		{"a file of an older version than --from says which steps to run first",
			map[string]string{"src/config.local.js": "module.exports = {\n  notification: { logSuccessfulBroadcastDispatches: true },\n};\n"},
			[]string{"--from", "4", "--to", "5"}, nil, ExitProblems,
			[]string{"wrong version", "src/config.local.js:2 has notification.logSuccessfulBroadcastDispatches", "--from 2 --to 3", "--from 3 --to 4"}},
		{"a file of a newer version than the step is refused",
			map[string]string{"src/datasources/db.datasource.local.json": "{\"uri\": \"mongodb://h/db\"}\n", "src/config.local.json": "{\"queue\": {\"connection\": {\"host\": \"r\"}}}\n"},
			[]string{"--from", "2", "--to", "3"}, nil, ExitProblems,
			[]string{"wrong version", "queue.connection", "already at v6"}},
		{"v1 files in server/ when --from says v3",
			map[string]string{"server/config.local.json": "{}\n"},
			[]string{"--from", "3", "--to", "4"}, nil, ExitProblems,
			[]string{"wrong version", "server/config.local.json is in the v1 layout", "--from 1 --to 2", "--from 2 --to 3"}},
		{"a v4 deployment with an environment file is not merged again",
			map[string]string{"src/config.local.js": "module.exports = { email: { smtp: { host: 'local' } } };\n", "src/config.production.js": "module.exports = { email: { smtp: { host: 'prod' } } };\n"},
			[]string{"--from", "3", "--to", "4", "--env", "production"}, nil, ExitProblems,
			[]string{"wrong version", "has email.smtp", "must not be merged", "run --from 4"}},
		{"several environment files and none chosen",
			map[string]string{"src/config.local.js": "module.exports = {};\n", "src/config.dev.js": "module.exports = {};\n", "src/config.production.json": "{}\n"},
			[]string{"--from", "3", "--to", "4"}, nil, ExitProblems,
			[]string{"dev, production", "--env NAME"}},
		{"the same setting under its old and new name with different values",
			map[string]string{"src/config.local.js": "module.exports = {\n  smtp: {host: 'a'},\n  email: {smtp: {host: 'b'}},\n};\n"},
			[]string{"--from", "3", "--to", "4"}, nil, ExitProblems,
			[]string{"src/config.local.js:2", "both smtp", "email.smtp"}},
		{"two throttles with different Redis connections",
			map[string]string{"src/config.local.json": `{"email": {"throttle": {"clientOptions": {"host": "a"}}}, "sms": {"throttle": {"clientOptions": {"host": "b"}}}}`},
			[]string{"--from", "5", "--to", "6"}, nil, ExitProblems,
			[]string{"email.throttle.clientOptions and sms.throttle.clientOptions", "differ"}},
		{"a minTime that is not a number literal",
			map[string]string{"src/config.local.js": "module.exports = { sms: { throttle: { minTime: Number(process.env.MIN_TIME) } } };\n"},
			[]string{"--from", "5", "--to", "6"}, nil, ExitProblems,
			[]string{"src/config.local.js:1", "sms.throttle.minTime", "set max and duration by hand"}},
		{"a TypeScript file with type annotations asks for plain JavaScript",
			map[string]string{"src/config.local.ts": "const port: number = 3000;\nmodule.exports = { port, sms: { throttle: { minTime: 500 } } };\n"},
			[]string{"--from", "5", "--to", "6"}, nil, ExitProblems,
			[]string{"src/config.local.ts:1:", "TypeScript files are edited as JavaScript"}},
		{"skipping a major version lists the steps in order",
			map[string]string{"src/config.local.json": "{}\n"},
			[]string{"--from", "3", "--to", "5"}, nil, ExitUsage,
			[]string{"one major version at a time", "--from 3 --to 4\n  govkit notify upgrade --from 4 --to 5"}},
		{"a downgrade is refused",
			map[string]string{"src/config.local.json": "{}\n"},
			[]string{"--from", "4", "--to", "3"}, nil, ExitUsage,
			[]string{"only upgrades"}},
		{"a version out of range",
			map[string]string{"src/config.local.json": "{}\n"},
			[]string{"--from", "6", "--to", "7"}, nil, ExitUsage,
			[]string{"--from 6"}},
		{"a version the files do not show must be given",
			map[string]string{"src/config.local.json": "{\"port\": 3000}\n"},
			nil, nil, ExitUsage,
			[]string{"cannot tell the deployment's version", "give --from"}},
		{"a database URI without a database name",
			map[string]string{"src/config.local.json": "{}\n"},
			[]string{"--from", "4", "--to", "5", "--database", "mongodb://127.0.0.1:1"}, nil, ExitUsage,
			[]string{"must name the database"}},
		{"a directory without deployment files",
			map[string]string{"README": "x"},
			nil, nil, ExitUsage,
			[]string{"no config, middleware or datasource files"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tt.files)
			before := snapshot(t, dir)
			code, out, errOut := runMain(t, tt.env, append([]string{"--dir", dir}, tt.args...)...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			diffTrees(t, snapshot(t, dir), before)
		})
	}
}

// runAsNobody runs the command in a child process whose user cannot write
// what is read-only: as root, permission bits do not stop writes, so the
// child drops to uid 65534.
func runAsNobody(t *testing.T, args ...string) (int, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(args)
	var out bytes.Buffer
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		// The child needs a copy of the test binary it may read and run.
		bin := filepath.Join(t.TempDir(), "upgrade.test")
		copyFile(t, exe, bin)
		for d := filepath.Dir(bin); d != "/" && d != "."; d = filepath.Dir(d) {
			os.Chmod(d, 0o755)
		}
		os.Chmod(bin, 0o755)
		cmd = exec.Command(bin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else {
		cmd = exec.Command(exe)
	}
	cmd.Env = []string{"GOVKIT_UPGRADE_HELPER_ARGS=" + string(a)}
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errorsAs(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

func errorsAs(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	o, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(o, in); err != nil {
		t.Fatal(err)
	}
	o.Close()
}

// A deployment directory that cannot be written is refused with a clear
// message and left exactly as it was, whether the whole directory is
// read-only (no backup can be made) or only src/ is (the backups already
// written are taken back).
func TestReadOnlyDirectoryChangesNothing(t *testing.T) {
	for _, readOnly := range []string{".", "src"} {
		t.Run("read-only "+readOnly, func(t *testing.T) {
			dir := copyTree(t, "testdata/steps/v3-js/before")
			for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
				os.Chmod(d, 0o755)
			}
			var locked []string
			filepath.Walk(filepath.Join(dir, readOnly), func(p string, info os.FileInfo, err error) error {
				if err == nil && info.IsDir() {
					locked = append(locked, p)
				}
				return nil
			})
			if readOnly == "src" {
				// The parent stays writable for nobody, so the backups can be made.
				os.Chmod(dir, 0o777)
			}
			for _, d := range locked {
				os.Chmod(d, 0o555)
			}
			t.Cleanup(func() {
				for _, d := range locked {
					os.Chmod(d, 0o755)
				}
			})
			before := snapshot(t, dir)
			code, out := runAsNobody(t, "--dir", dir, "--from", "3", "--to", "4", "--env", "production")
			if code != ExitProblems {
				t.Errorf("exit %d, want %d:\n%s", code, ExitProblems, out)
			}
			for _, w := range []string{"cannot write the deployment directory", "permission denied", "nothing was changed"} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			diffTrees(t, snapshot(t, dir), before)
		})
	}
}

// A symbolic link in place of a config file is refused rather than
// replaced by a copy.
func TestSymlinkedConfigFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"shared/config.local.json": "{\"smtp\": {\"host\": \"x\"}}\n", "src/.keep": ""})
	if err := os.Symlink(filepath.Join(dir, "shared/config.local.json"), filepath.Join(dir, "src/config.local.json")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	code, _, errOut := runMain(t, nil, "--dir", dir, "--from", "3", "--to", "4")
	if code != ExitProblems || !strings.Contains(errOut, "src/config.local.json is a symbolic link") {
		t.Errorf("exit %d:\n%s", code, errOut)
	}
	diffTrees(t, snapshot(t, dir), before)
}

// A byte order mark does not stop a JSON file from being read, as it does
// not in Node.
func TestByteOrderMarkIsIgnored(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"src/config.local.json": "\ufeff{\n  \"notification\": {\n    \"logSuccessfulBroadcastDispatches\": true\n  }\n}\n"})
	code, out, errOut := runMain(t, nil, "--dir", dir, "--from", "2", "--to", "3")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	got := readTree(t, dir, true)["src/config.local.json"]
	if got != "{\n  \"notification\": {\n    \"guaranteedBroadcastPushDispatchProcessing\": true\n  }\n}\n" {
		t.Errorf("got %q", got)
	}
}

// Files written with \r\n line ends keep them.
func TestCRLFLineEndsAreKept(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"src/config.local.js": "module.exports = {\r\n  notification: {\r\n    logSuccessfulBroadcastDispatches: true, // log\r\n  },\r\n};\r\n",
		"src/config.dev.json": "{\r\n  \"notification\": {\r\n    \"logSuccessfulBroadcastDispatches\": false\r\n  }\r\n}\r\n",
	})
	code, out, errOut := runMain(t, nil, "--dir", dir, "--from", "2", "--to", "3")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	got := readTree(t, dir, true)
	want := map[string]string{
		"src/config.local.js": "module.exports = {\r\n  notification: {\r\n    guaranteedBroadcastPushDispatchProcessing: true, // log\r\n  },\r\n};\r\n",
		"src/config.dev.json": "{\r\n  \"notification\": {\r\n    \"guaranteedBroadcastPushDispatchProcessing\": false\r\n  }\r\n}\r\n",
	}
	diffTrees(t, got, want)
}
