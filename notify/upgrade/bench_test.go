package upgrade

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkChainV1ToV6 runs the five steps (real runs: backups, temporary
// files, renames) on a copy of the v1 chain fixture.
func BenchmarkChainV1ToV6(b *testing.B) {
	src := map[string][]byte{}
	filepath.WalkDir("testdata/chain/v1", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel("testdata/chain/v1", p)
			src[rel], _ = os.ReadFile(p)
		}
		return nil
	})
	getenv := func(k string) (string, bool) {
		if k == "NODE_ENV" {
			return "production", true
		}
		return "", false
	}
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		for rel, data := range src {
			os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755)
			os.WriteFile(filepath.Join(dir, rel), data, 0o644)
		}
		b.StartTimer()
		for from := 1; from <= 5; from++ {
			if code := Main(context.Background(), []string{"--dir", dir, "--from", strconv.Itoa(from), "--to", strconv.Itoa(from + 1)}, io.Discard, io.Discard, getenv); code != 0 {
				b.Fatalf("step %d: exit %d", from, code)
			}
		}
	}
}

// BenchmarkDryRunV3ToV4 is the heaviest single step: it parses, merges the
// environment's files, renames keys and prints the diff.
func BenchmarkDryRunV3ToV4(b *testing.B) {
	dir := "testdata/steps/v3-js/before"
	for b.Loop() {
		if code := Main(context.Background(), []string{"--dir", dir, "--from", "3", "--to", "4", "--env", "production", "--dry-run"}, io.Discard, io.Discard, func(string) (string, bool) { return "", false }); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}
