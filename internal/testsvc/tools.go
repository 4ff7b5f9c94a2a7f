package testsvc

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// EnvHelm names the helm binary the chart tests run. Unset, the helper
// takes the one .ci/install-deps builds (HelmPath), then helm on PATH.
const EnvHelm = "GOVKIT_TEST_HELM"

// The helm that .ci/install-deps builds from its Go module, so that CI
// needs no download but the module proxy.
const (
	HelmModule  = "helm.sh/helm/v3/cmd/helm"
	HelmVersion = "v3.22.0"
)

// HelmPath is where .ci/install-deps puts helm:
// $HOME/.cache/govkit-tools/helm-<version>/helm.
func HelmPath() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "govkit-tools", "helm-"+HelmVersion, "helm")
}

// RequireHelm returns the path of a helm binary for the chart tests.
func RequireHelm(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvHelm); p != "" {
		if _, err := os.Stat(p); err != nil {
			missing(t, "%s=%s: %v", EnvHelm, p, err)
		}
		return p
	}
	if p := HelmPath(); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	missing(t, "helm not found: set %s, or run .ci/install-deps (it builds %s@%s into %s)", EnvHelm, HelmModule, HelmVersion, HelmPath())
	return ""
}
