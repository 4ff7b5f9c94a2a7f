package upgrade

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Without --from the version is taken from the files when their layout and
// keys show exactly one; otherwise --from is required.
func TestVersionIsDetectedOnlyWhenTheFilesShowIt(t *testing.T) {
	tests := []struct {
		name     string
		dir      string
		wantCode int
		want     string
	}{
		{"server/ files are v1", "v1-json/before", ExitOK, "Detected v1"},
		{"server/ js files are v1", "v1-js/before", ExitOK, "Detected v1"},
		{"logSuccessfulBroadcastDispatches in src/ is v2", "v2-js/before", ExitOK, "Detected v2"},
		{"guaranteed processing beside v3 keys and an environment file is v3", "v3-js/before", ExitOK, "Detected v3"},
		{"v3 keys alone could be v2 or v3", "v3-json/before", ExitUsage, "fit v2 to v3"},
		{"datasource host beside sms.provider is v4", "v4-js/before", ExitOK, "Detected v4"},
		{"datasource url beside email.smtp is v4", "v4-json/before", ExitOK, "Detected v4"},
		{"minTime beside a datasource uri is v5", "v5-js/before", ExitOK, "Detected v5"},
		{"minTime alone could be v2 to v5", "v5-json/before", ExitUsage, "fit v2 to v5"},
		{"v6 files need nothing", "v5-js/after", ExitOK, "the latest: nothing to upgrade"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("testdata/steps", tt.dir))
			code, out, errOut := runMain(t, map[string]string{"NODE_ENV": "production"}, "--dir", dir, "--dry-run")
			if code != tt.wantCode || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\n%s%s", code, tt.wantCode, tt.want, out, errOut)
			}
		})
	}
}

func TestToAloneMustBeTheNextVersionOfTheDetectedOne(t *testing.T) {
	dir := copyTree(t, "testdata/steps/v4-js/before")
	code, _, errOut := runMain(t, nil, "--dir", dir, "--to", "6")
	if code != ExitUsage || !strings.Contains(errOut, "--from 4 --to 5\n  govkit notify upgrade --from 5 --to 6") {
		t.Errorf("exit %d:\n%s", code, errOut)
	}
	code, out, errOut := runMain(t, nil, "--dir", dir, "--to", "5")
	if code != ExitOK || !strings.Contains(out, "from v4 to v5") {
		t.Errorf("exit %d:\n%s%s", code, out, errOut)
	}
}

// The node role step of v5 → v6 depends on the variable's current value.
func TestNodeRoleStepIsTailoredToTheEnvironment(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"slave becomes secondary", map[string]string{"NOTIFYBC_NODE_ROLE": "slave"}, "is `slave`: set it to `secondary`"},
		{"master is removed", map[string]string{"NOTIFYBC_NODE_ROLE": "master"}, `is "master": remove the variable`},
		{"an empty value is removed", map[string]string{"NOTIFYBC_NODE_ROLE": ""}, `is "": remove the variable`},
		{"unset needs nothing here", map[string]string{}, "is not set here: nothing to change"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyTree(t, "testdata/steps/v5-json/before")
			code, out, errOut := runMain(t, tt.env, "--dir", dir, "--from", "5", "--to", "6", "--dry-run")
			if code != ExitOK || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, output lacks %q:\n%s%s", code, tt.want, out, errOut)
			}
		})
	}
}

// Every step's checklist is numbered and starts with the database backup,
// and names the items of its version.
func TestChecklistsNameEachVersionsManualSteps(t *testing.T) {
	tests := []struct {
		fixture string
		args    []string
		want    []string
	}{
		{"v1-json", nil, []string{" 1. Back up the database", "UserCredential", "repeated form"}},
		{"v2-js", nil, []string{" 1. Back up the database", "dispatch.failed", "db.notification.updateMany", "is true in src/config.local.js"}},
		{"v3-js", []string{"--env", "production"}, []string{" 1. Back up the database", "redis.auth.password"}},
		{"v4-json", nil, []string{" 1. Back up the database", "replica set", "inq, nin → $in, $nin", `[["serviceName","asc"]]`, "mongodb.auth.passwords", "differ by more than case"}},
		{"v5-js", nil, []string{" 1. Back up the database", `setFeatureCompatibilityVersion: "7.0"`, "NOTIFYBC_NODE_ROLE", "queue.connection"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("testdata/steps", tt.fixture, "before"))
			from := tt.fixture[1:2]
			code, out, errOut := runMain(t, nil, append([]string{"--dir", dir, "--from", from, "--dry-run"}, tt.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("checklist lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestServerRefusalsAreToldApartFromDataErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"command not found", mongo.CommandError{Code: 59, Message: "no such command"}, true},
		{"not implemented", mongo.CommandError{Code: 238}, true},
		{"a duplicate key is a data error", mongo.CommandError{Code: 11000}, false},
		{"an unsupported update operator", mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 9}}}, true},
		{"a plain error", errors.New("connection reset"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unsupported(tt.err); got != tt.want {
				t.Errorf("unsupported(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
