package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The units parse, run the binary's serve commands, and keep the
// hardening options; systemd-analyze verifies them where systemd is
// installed (its absence is not a failure: CI machines may lack it).
func TestSystemdUnits(t *testing.T) {
	units, _ := filepath.Glob("systemd/*.service")
	if len(units) != 2 {
		t.Fatalf("units %v, want the platform's and notify's", units)
	}
	for _, u := range units {
		data, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for _, want := range []string{"ExecStart=/usr/local/bin/govkit ", "DynamicUser=yes", "User=govkit-", "NoNewPrivileges=yes", "ProtectSystem=strict", "KillSignal=SIGTERM", "Restart=on-failure",
			"MemoryMax=", "TasksMax=", "EnvironmentFile=/etc/govkit/", "UMask=0077"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %s", u, want)
			}
		}
		if analyze, err := exec.LookPath("systemd-analyze"); err == nil {
			// verify checks that ExecStart's binary exists: point it at one.
			dir := t.TempDir()
			unit := filepath.Join(dir, filepath.Base(u))
			os.WriteFile(unit, []byte(strings.ReplaceAll(text, "/usr/local/bin/govkit", "/bin/true")), 0o644)
			out, err := exec.Command(analyze, "verify", "--man=no", unit).CombinedOutput()
			if err != nil || strings.Contains(string(out), filepath.Base(u)) {
				t.Errorf("systemd-analyze verify %s: %v\n%s", u, err, out)
			}
		}
	}
}
