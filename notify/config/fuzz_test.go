package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/govkit/govkit/notify/config"
)

// FuzzLoadJSON feeds arbitrary config.local.json content to Load: it must
// either load or return a *config.Error, never panic, and every problem
// must name the file or a key.
func FuzzLoadJSON(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"port": "abc"}`, `{"email": {"smtp": "x"}}`, `{"sms": []}`, `{"rest": 5}`,
		`{"smtp": {"host": "h"}, "notification": {"handleBounce": true}}`,
		`{"notification": {"broadcastCustomFilterFunctions": {"f": {"_signature": [{"types": ["x"]}]}}}}`,
		`{"queue": {"connection": {"sentinels": [1, {"host": 2}]}}}`, `[1]`, `{"a":`, `{"tls": {"enabled": true, "key": 1}}`,
	} {
		f.Add(seed)
	}
	root := f.TempDir()
	dir := filepath.Join(root, "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, content string) {
		if err := os.WriteFile(filepath.Join(dir, "config.local.json"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(config.Options{Dir: dir, JSPoolSize: 1})
		if err == nil {
			if c == nil {
				t.Fatal("nil config without error")
			}
			return
		}
		var ce *config.Error
		if !errors.As(err, &ce) || len(ce.Problems) == 0 {
			t.Fatalf("err = %v", err)
		}
		for _, p := range ce.Problems {
			if p.File == "" && p.Path == "" {
				t.Fatalf("problem without file or key: %v", p)
			}
		}
	})
}
