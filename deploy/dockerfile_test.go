package deploy_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// instruction is one Dockerfile instruction: its keyword and the rest of
// its (continued) line.
type instruction struct {
	cmd, args string
	line      int
}

// parseDockerfile reads the instructions, joining continued lines and
// dropping comments, as BuildKit's parser does for the subset we use.
func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args), start})
		cur.Reset()
	}
	return out
}

// stages splits the instructions at each FROM.
func stages(ins []instruction) [][]instruction {
	var out [][]instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			out = append(out, nil)
		}
		if len(out) > 0 {
			out[len(out)-1] = append(out[len(out)-1], in)
		}
	}
	return out
}

func execForm(t *testing.T, in instruction, args string) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		t.Errorf("line %d: %s is not in exec (JSON) form: %v", in.line, in.cmd, err)
	}
	return v
}

// The image recipe follows the rules a Dockerfile linter (hadolint) and
// the issue set: multi-stage, pinned bases, a static binary, a non-root
// user in an image without a shell, a health check by the binary itself.
func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t, "../Dockerfile")
	st := stages(ins)
	if len(st) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(st))
	}
	for _, s := range st {
		from := strings.Fields(s[0].args)
		if !pinned(from[0]) {
			t.Errorf("line %d: base image %s is not pinned to a version", s[0].line, from[0])
		}
	}
	final := st[len(st)-1]
	base := strings.Fields(final[0].args)[0]
	if base != "scratch" && !strings.HasPrefix(base, "gcr.io/distroless/static") {
		t.Errorf("runtime base %s: want distroless static or scratch (no shell)", base)
	}
	var user, healthcheck, entrypoint *instruction
	for i, in := range final {
		switch in.cmd {
		case "USER":
			user = &final[i]
		case "HEALTHCHECK":
			healthcheck = &final[i]
		case "ENTRYPOINT":
			entrypoint = &final[i]
		case "RUN":
			t.Errorf("line %d: RUN in the runtime stage needs a shell the image must not have", in.line)
		case "ADD":
			t.Errorf("line %d: use COPY, not ADD", in.line)
		}
	}
	if user == nil {
		t.Fatal("the runtime stage sets no USER: it would run as root")
	}
	if u := strings.Split(user.args, ":")[0]; u == "root" || u == "0" || u == "" {
		t.Errorf("USER %s is root", user.args)
	}
	if entrypoint == nil || execForm(t, *entrypoint, entrypoint.args)[0] != "/usr/local/bin/govkit" {
		t.Error("ENTRYPOINT must run /usr/local/bin/govkit in exec form")
	}
	if healthcheck == nil {
		t.Fatal("no HEALTHCHECK")
	}
	_, cmd, ok := strings.Cut(healthcheck.args, "CMD ")
	hc := execForm(t, *healthcheck, cmd)
	if !ok || len(hc) != 3 || hc[0] != "/usr/local/bin/govkit" || hc[1] != "healthcheck" || !strings.HasSuffix(hc[2], "/api/health") {
		t.Errorf("HEALTHCHECK %q: want the binary's healthcheck of a /api/health URL, in exec form", healthcheck.args)
	}

	// The build stage's command makes a static binary, and it works: run
	// it as written (into a temporary file) and use the result.
	var build *instruction
	for i, in := range st[0] {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			build = &st[0][i]
		}
	}
	if build == nil || !strings.Contains(build.args, "CGO_ENABLED=0") {
		t.Fatal("the build stage has no `CGO_ENABLED=0 go build`")
	}
	bin := runBuild(t, build.args)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, _ := f.ImportedLibraries()
	if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) || len(libs) > 0 {
		t.Fatalf("the binary is dynamically linked (%v): it would not run FROM distroless static", libs)
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.Contains(string(out), "govkit test-build") {
		t.Errorf("version: %s %v", out, err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/health" {
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	if out, err := exec.Command(bin, "healthcheck", srv.URL+"/api/health").CombinedOutput(); err != nil {
		t.Errorf("the image's health check command fails on a healthy server: %s %v", out, err)
	}
	if err := exec.Command(bin, "healthcheck", srv.URL+"/nothing").Run(); err == nil {
		t.Error("the image's health check command passes on a 404")
	}
}

// runBuild runs a Dockerfile `RUN VAR=v … go build … -o OUT PKG` line from
// the repository root, with ${VERSION} as test-build and OUT in a
// temporary directory, and returns the binary's path.
func runBuild(t *testing.T, line string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "govkit")
	if err := buildAs(line, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// buildAs runs the Dockerfile's go build line with the binary going to
// out.
func buildAs(line, out string) error {
	words := shellWords(strings.ReplaceAll(line, "${VERSION}", "test-build"))
	var env, args []string
	for len(words) > 0 && strings.Contains(words[0], "=") {
		env, words = append(env, words[0]), words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		return fmt.Errorf("not a go build command: %q", line)
	}
	for i := 2; i < len(words); i++ {
		if words[i] == "-o" && i+1 < len(words) {
			words[i+1] = out
		}
		args = append(args, words[i])
	}
	cmd := exec.Command("go", append([]string{"build"}, args[:]...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v\n%s", line, err, stderr.String())
	}
	return nil
}

// built is the binary the recipe tests run, made once per test binary by
// the Dockerfile's own build command (so TestDockerfile's build and this
// one are the same to Go's build cache).
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// govkitBinary returns the path of the binary the recipes run.
func govkitBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		var line string
		for _, in := range parseDockerfile(t, "../Dockerfile") {
			if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
				line = in.args
			}
		}
		if built.dir, built.err = os.MkdirTemp("", "govkit-deploy-test-"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "govkit")
		built.err = buildAs(line, built.path)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// shellWords splits a command line on spaces, keeping double-quoted parts
// (quotes removed) together: enough for the build line.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote, inWord = !inQuote, true
		case r == ' ' && !inQuote:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
