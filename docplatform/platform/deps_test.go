package platform_test

import (
	"os/exec"
	"strings"
	"testing"
)

// `govkit docplatform serve` runs through this package, so the development
// OpenID provider (which logs anyone in as a demo user) must not be among
// its dependencies: not reachable, not even linkable, from production code.
func TestServeCannotReachTheDevelopmentProvider(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not installed; cannot list dependencies")
	}
	out, err := exec.Command(gotool, "list", "-deps", "github.com/govkit/govkit/docplatform/platform").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("implausible dependency list: %q", deps)
	}
	for _, d := range deps {
		if d == "github.com/govkit/govkit/docplatform/devidp" || d == "github.com/govkit/govkit/docplatform/dev" || strings.HasPrefix(d, "github.com/zitadel/oidc/v3/pkg/op") {
			t.Errorf("docplatform/platform depends on %s", d)
		}
	}
}
