package upgrade

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected results in testdata/steps/*/after")

// readTree returns every file under dir by slash path, leaving out the
// backups when skipBackups is set.
func readTree(t *testing.T, dir string, skipBackups bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipBackups && rel == BackupDir {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[rel] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// snapshot is every file and directory under dir with its content and
// permissions, to prove that a run changed nothing at all.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			out[key+"/"] = info.Mode().String()
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[key] = info.Mode().String() + " " + string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func copyTree(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, readTree(t, from, false))
	return dir
}

func diffTrees(t *testing.T, got, want map[string]string) {
	t.Helper()
	var names []string
	for k := range got {
		names = append(names, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		g, gok := got[k]
		w, wok := want[k]
		switch {
		case !gok:
			t.Errorf("missing file %s", k)
		case !wok:
			t.Errorf("unexpected file %s:\n%s", k, g)
		case g != w:
			t.Errorf("%s differs from the expected result:\n%s", k, unifiedDiff(k, []byte(w), []byte(g)))
		}
	}
}

type stepCase struct {
	name string
	from int
	args []string
	env  map[string]string
}

func stepCases(t *testing.T) []stepCase {
	t.Helper()
	entries, err := os.ReadDir("testdata/steps")
	if err != nil {
		t.Fatal(err)
	}
	var cases []stepCase
	for _, e := range entries {
		c := stepCase{name: e.Name(), env: map[string]string{}}
		c.from, err = strconv.Atoi(strings.TrimPrefix(strings.SplitN(e.Name(), "-", 2)[0], "v"))
		if err != nil {
			t.Fatalf("case %s: name must start with v<N>-", e.Name())
		}
		if data, err := os.ReadFile(filepath.Join("testdata/steps", e.Name(), "args")); err == nil {
			c.args = strings.Fields(string(data))
		}
		if data, err := os.ReadFile(filepath.Join("testdata/steps", e.Name(), "environ")); err == nil {
			for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				k, v, _ := strings.Cut(l, "=")
				c.env[k] = v
			}
		}
		cases = append(cases, c)
	}
	return cases
}

func runMain(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	return code, out.String(), errb.String()
}

// Each step turns the fixture deployment of version N (before/) into the
// expected files of version N+1 (after/), keeps a backup of every file it
// changed or removed, and changes nothing when run again.
func TestStepsRewriteFixturesToTheNextVersion(t *testing.T) {
	for _, c := range stepCases(t) {
		t.Run(c.name, func(t *testing.T) {
			base := filepath.Join("testdata/steps", c.name)
			before := readTree(t, filepath.Join(base, "before"), false)
			dir := copyTree(t, filepath.Join(base, "before"))
			args := append([]string{"--dir", dir, "--from", strconv.Itoa(c.from), "--to", strconv.Itoa(c.from + 1)}, c.args...)
			code, out, errOut := runMain(t, c.env, args...)
			if code != ExitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			got := readTree(t, dir, true)
			if *update {
				os.RemoveAll(filepath.Join(base, "after"))
				writeTree(t, filepath.Join(base, "after"), got)
				os.WriteFile(filepath.Join(base, "output.txt"), []byte(strings.ReplaceAll(out, dir, "<dir>")), 0o644)
			}
			diffTrees(t, got, readTree(t, filepath.Join(base, "after"), false))
			wantOut, _ := os.ReadFile(filepath.Join(base, "output.txt"))
			if gotOut := strings.ReplaceAll(out, dir, "<dir>"); gotOut != string(wantOut) {
				t.Errorf("output differs from output.txt:\n%s", unifiedDiff("output.txt", wantOut, []byte(gotOut)))
			}

			// Every changed or removed file is in the backup as it was.
			backup := filepath.Join(dir, BackupDir, "v"+strconv.Itoa(c.from)+"-to-v"+strconv.Itoa(c.from+1))
			saved := readTree(t, backup, false)
			for rel, old := range before {
				if now, ok := got[rel]; ok && now == old {
					if _, ok := saved[rel]; ok {
						t.Errorf("%s did not change but was backed up", rel)
					}
					continue
				}
				if saved[rel] != old {
					t.Errorf("backup of %s: got %q, want the original", rel, saved[rel])
				}
			}
			if !strings.Contains(out, "Manual steps for v"+strconv.Itoa(c.from)) || !strings.Contains(out, " 1. Back up the database") {
				t.Errorf("output lacks the checklist starting with the database backup:\n%s", out)
			}

			// A second run changes nothing and says so.
			all := snapshot(t, dir)
			code, out, errOut = runMain(t, c.env, args...)
			if code != ExitOK {
				t.Fatalf("second run: exit %d\n%s%s", code, out, errOut)
			}
			if !strings.Contains(out, "Nothing to change") {
				t.Errorf("second run does not say that nothing changed:\n%s", out)
			}
			diffTrees(t, snapshot(t, dir), all)
		})
	}
}

// A dry run prints a diff that turns the old files into the new ones and
// leaves the directory as it was.
func TestDryRunPrintsTheDiffAndChangesNothing(t *testing.T) {
	for _, c := range stepCases(t) {
		t.Run(c.name, func(t *testing.T) {
			base := filepath.Join("testdata/steps", c.name)
			dir := copyTree(t, filepath.Join(base, "before"))
			before := snapshot(t, dir)
			args := append([]string{"--dir", dir, "--from", strconv.Itoa(c.from), "--to", strconv.Itoa(c.from + 1), "--dry-run"}, c.args...)
			code, out, errOut := runMain(t, c.env, args...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			diffTrees(t, snapshot(t, dir), before)
			patched, err := applyUnified(readTree(t, dir, false), out)
			if err != nil {
				t.Fatalf("the printed diff does not apply: %v\n%s", err, out)
			}
			diffTrees(t, patched, readTree(t, filepath.Join(base, "after"), false))
		})
	}
}
