package testsvc

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
)

func TestRequirePostgresGivesAFreshDatabaseDroppedAfterwards(t *testing.T) {
	var url string
	t.Run("use", func(t *testing.T) {
		url = RequirePostgres(t)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var tables int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Fatalf("fresh database has %d tables", tables)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE probe (id int)`); err != nil {
			t.Fatal(err)
		}
	})
	if t.Skipped() || url == "" {
		return
	}
	// After the subtest's cleanup the database must be gone.
	ctx := context.Background()
	if conn, err := pgx.Connect(ctx, url); err == nil {
		conn.Close(ctx)
		t.Fatalf("database %s still exists after the test ended", url)
	}
}

func TestRequirePostgresIsolatesTests(t *testing.T) {
	a, b := RequirePostgres(t), RequirePostgres(t)
	if a == b {
		t.Fatalf("two calls returned the same database %s", a)
	}
}

func TestRequireRedisIsolatesAndCleansKeys(t *testing.T) {
	var prefix string
	var other Redis
	t.Run("use", func(t *testing.T) {
		r := RequireRedis(t)
		prefix = r.Prefix
		ctx := context.Background()
		if err := r.Client.Set(ctx, r.Prefix+"k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := r.Client.Get(ctx, r.Prefix+"k").Val(); got != "v" {
			t.Fatalf("got %q", got)
		}
	})
	if prefix == "" {
		return
	}
	other = RequireRedis(t)
	if other.Prefix == prefix {
		t.Fatal("two tests share a key prefix")
	}
	n, err := other.Client.Exists(context.Background(), prefix+"k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("key %sk survived its test", prefix)
	}
}

// .ci/install-deps builds the tool versions this package looks for.
func TestInstallDepsBuildsTheVersionsLookedFor(t *testing.T) {
	script, err := os.ReadFile("../../.ci/install-deps")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"build_tool versitygw " + S3ServerModule + " " + S3ServerVersion,
		"build_tool helm " + HelmModule + " " + HelmVersion,
	} {
		if !strings.Contains(string(script), want) {
			t.Errorf(".ci/install-deps lacks %q", want)
		}
	}
	if !strings.Contains(string(HelmPath()), HelmVersion) || !strings.Contains(S3ServerPath(), S3ServerVersion) {
		t.Error("cache paths are not keyed by version")
	}
}

// Each test gets an empty bucket of its own on the S3 server.
func TestRequireS3(t *testing.T) {
	a := RequireS3(t)
	var b S3
	t.Run("another", func(t *testing.T) { b = RequireS3(t) })
	if a.Bucket == b.Bucket || a.Endpoint != b.Endpoint {
		t.Fatalf("buckets %s and %s at %s and %s: want two buckets on one server", a.Bucket, b.Bucket, a.Endpoint, b.Endpoint)
	}
	ctx := context.Background()
	if ok, err := a.Client.BucketExists(ctx, b.Bucket); err != nil || ok {
		t.Fatalf("the subtest's bucket outlived it: %v %v", ok, err)
	}
	n := 0
	for range a.Client.ListObjects(ctx, a.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		n++
	}
	if n != 0 {
		t.Fatalf("a new bucket holds %d objects", n)
	}
}
