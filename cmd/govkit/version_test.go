package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionText(t *testing.T) {
	stamped := []debug.BuildSetting{
		{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "4f9c2e1a7b3d5e6f708192a3b4c5d6e7f8091a2b"},
		{Key: "vcs.time", Value: "2026-05-01T10:00:00Z"}, {Key: "vcs.modified", Value: "false"},
	}
	tests := []struct {
		name     string
		bi       *debug.BuildInfo
		override string
		want     string
	}{
		{"an installed release names its version and revision",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: stamped}, "",
			"govkit v1.2.0 (revision 4f9c2e1a7b3d, 2026-05-01T10:00:00Z) go1.26.8 linux/amd64"},
		{"a build from a checkout with local changes says so",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
				Settings: append(stamped[:5:5], debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "",
			"govkit (devel) (revision 4f9c2e1a7b3d, 2026-05-01T10:00:00Z, modified) go1.26.8 linux/amd64"},
		{"a build without VCS stamping says the revision is unknown",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: stamped[:2]}, "",
			"govkit (devel) (revision unknown: built without VCS stamping) go1.26.8 linux/amd64"},
		{"-ldflags -X main.version replaces the module version",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: stamped}, "2.0.0-rc1",
			"govkit 2.0.0-rc1 (revision 4f9c2e1a7b3d, 2026-05-01T10:00:00Z) go1.26.8 linux/amd64"},
		{"no build information at all",
			nil, "", "govkit (devel) (revision unknown: built without VCS stamping)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionText(tt.bi, tt.override); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// A binary built from the git checkout with VCS stamping on prints the
// checkout's revision. (The machine's GOFLAGS may turn stamping off;
// -buildvcs=true turns it back on, as a plain `go build` has it.)
func TestVersionOfABuildFromTheCheckout(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed; the revision cannot be stamped")
	}
	head, err := exec.Command(git, "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("the source is not a git checkout (%v); the revision cannot be stamped", err)
	}
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		// The go command looks for a .git directory; a worktree has a
		// .git file, and its builds are not stamped.
		t.Skip("a git worktree: the go command stamps the revision only where .git is a directory")
	}
	bin := filepath.Join(t.TempDir(), "govkit")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildvcs=true", "-o", bin, "./cmd/govkit")
	build.Dir = root
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	rev := strings.TrimSpace(string(head))[:12]
	if !strings.HasPrefix(string(out), "govkit ") || !strings.Contains(string(out), "(revision "+rev) {
		t.Fatalf("govkit version printed %q, want revision %s", out, rev)
	}
}
