// Package testsvc gives tests the real services they need — PostgreSQL,
// Redis, a Chromium binary — each isolated per test, and applies the
// project's skip-or-fail rule:
//
//   - when the variable naming a service is unset, the test is skipped with a
//     message that names the variable to set;
//   - when GOVKIT_TEST_REQUIRE_SERVICES=1 (as in .ci/run), that skip becomes
//     a failure, so CI can never pass by skipping.
//
// Variables: GOVKIT_TEST_POSTGRES_URL (an administrative connection URL; each
// test gets a fresh database created through it and dropped afterwards),
// GOVKIT_TEST_REDIS_ADDR (host:port; each test gets its own key prefix, and
// its keys are deleted afterwards), GOVKIT_TEST_S3 (an S3-compatible
// server: a versitygw binary the helper starts, or a running server's URL;
// each test gets its own bucket, see RequireS3), GOVKIT_TEST_MONGODB_URI
// (optional everywhere: tests that use it skip without failing CI).
// RequireFerretDB builds a MongoDB-protocol server for several processes
// on the PostgreSQL one.
package testsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

const (
	EnvPostgresURL     = "GOVKIT_TEST_POSTGRES_URL"
	EnvRedisAddr       = "GOVKIT_TEST_REDIS_ADDR"
	EnvMongoURI        = "GOVKIT_TEST_MONGODB_URI"
	EnvRequireServices = "GOVKIT_TEST_REQUIRE_SERVICES"
)

// Required reports whether missing services fail tests instead of skipping them.
func Required() bool { return os.Getenv(EnvRequireServices) == "1" }

// missing skips the test, or fails it when services are required.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf(format+" ("+EnvRequireServices+"=1 makes this a failure)", args...)
	}
	t.Skipf(format, args...)
}

// RequirePostgres creates a fresh, empty database for this test and returns
// its connection URL. The database is dropped when the test ends.
func RequirePostgres(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvPostgresURL)
	if admin == "" {
		missing(t, "PostgreSQL not configured: set %s (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)", EnvPostgresURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		missing(t, "PostgreSQL at %s unreachable: %v", EnvPostgresURL, err)
	}
	defer conn.Close(ctx)

	name := "govkit_test_" + randomHex(8)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testsvc: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("testsvc: drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("testsvc: drop database %s: %v", name, err)
		}
	})

	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("testsvc: %s is not a URL: %v", EnvPostgresURL, err)
	}
	u.Path = "/" + name
	return u.String()
}

// Redis is a test's share of the Redis server: every key the test writes
// must start with Prefix.
type Redis struct {
	Addr   string
	Prefix string
	Client *redis.Client
}

// RequireRedis returns a client of the test Redis and a key prefix unique to
// this test. Keys under the prefix are deleted when the test ends.
func RequireRedis(t testing.TB) Redis {
	t.Helper()
	addr := os.Getenv(EnvRedisAddr)
	if addr == "" {
		missing(t, "Redis not configured: set %s (e.g. 127.0.0.1:6379)", EnvRedisAddr)
	}
	client := redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		missing(t, "Redis at %s unreachable: %v", EnvRedisAddr, err)
	}
	r := Redis{Addr: addr, Prefix: "govkit-test:" + randomHex(8) + ":", Client: client}
	t.Cleanup(func() {
		defer client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := client.Scan(ctx, 0, r.Prefix+"*", 500).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("testsvc: clean Redis prefix %s: %v", r.Prefix, err)
		}
	})
	return r
}

// MongoURI returns GOVKIT_TEST_MONGODB_URI, or skips the test when it is
// unset. No MongoDB server is available to CI, so this never fails.
func MongoURI(t testing.TB) string {
	t.Helper()
	uri := os.Getenv(EnvMongoURI)
	if uri == "" {
		t.Skipf("MongoDB not configured: set %s to also run this test against a MongoDB server", EnvMongoURI)
	}
	return uri
}

// RequireChromium returns the path of a Chromium binary for browser tests
// (Debian package chromium; .ci/run installs it).
func RequireChromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "Chromium not found on PATH: install the Debian package chromium (.ci/run does)")
	return ""
}

// Unique returns a short random name, for anything else a test must not share.
func Unique(prefix string) string {
	return strings.TrimSuffix(prefix, "_") + "_" + randomHex(6)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// RequireAxe returns the source of axe-core (the accessibility rules the
// browser tests run), from ui/node_modules where `npm ci` in ui/ puts it
// at the version ui/package-lock.json pins (.ci/install-deps runs it).
func RequireAxe(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
	src, err := os.ReadFile(filepath.Join(dir, "ui", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		missing(t, "axe-core not installed: run npm ci in ui/ (.ci/install-deps does): %v", err)
	}
	return string(src)
}
