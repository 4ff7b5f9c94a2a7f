package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLicensesNameEveryBundledPackage(t *testing.T) {
	ui := t.TempDir()
	for _, p := range []string{"preact", "@scope/lib"} {
		dir := filepath.Join(ui, "node_modules", filepath.FromSlash(p))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "LICENSE"), []byte("licence of "+p), 0o644)
		os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"version":"1.2.3"}`), 0o644)
	}
	meta := `{"inputs":{"src/a.tsx":{},"node_modules/preact/dist/preact.mjs":{},"node_modules/preact/hooks/dist/hooks.mjs":{},"node_modules/@scope/lib/index.js":{}}}`
	got, err := licenses(ui, meta)
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if !strings.Contains(s, "== @scope/lib 1.2.3 ==\n\nlicence of @scope/lib") || !strings.Contains(s, "== preact 1.2.3 ==\n\nlicence of preact") || strings.Count(s, "== preact") != 1 {
		t.Errorf("licences:\n%s", s)
	}
	if strings.Index(s, "@scope/lib") > strings.Index(s, "preact 1.2.3") {
		t.Error("licences not sorted by package")
	}

	os.Remove(filepath.Join(ui, "node_modules", "preact", "LICENSE"))
	if _, err := licenses(ui, meta); err == nil {
		t.Error("a bundled package without a licence file was accepted")
	}
}

func TestWriteOutReplacesOnlyADistDirectory(t *testing.T) {
	root := t.TempDir()
	if err := writeOut(filepath.Join(root, "src"), map[string][]byte{"a": nil}); err == nil {
		t.Fatal("wrote into a directory not called dist")
	}
	dist := filepath.Join(root, "dist")
	os.MkdirAll(filepath.Join(dist, "assets"), 0o755)
	os.WriteFile(filepath.Join(dist, "assets", "main-OLD.js"), []byte("old"), 0o644)
	if err := writeOut(dist, map[string][]byte{"index.html": []byte("page"), "assets/main-NEW.js": []byte("new")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dist, "assets", "main-OLD.js")); err == nil {
		t.Error("a stale bundle survived the rebuild")
	}
	if b, _ := os.ReadFile(filepath.Join(dist, "assets", "main-NEW.js")); string(b) != "new" {
		t.Errorf("new bundle %q", b)
	}
}
