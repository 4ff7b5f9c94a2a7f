package platform_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/govkit/govkit/docplatform/platform"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/docplatform/sso/ssotest"
	"github.com/govkit/govkit/internal/testsvc"
)

// TestCheckConfig runs `govkit docplatform check-config` against real
// parts — PostgreSQL, Redis, the S3 server, an OpenID provider — then with
// each one gone, and on the one-machine defaults.
func TestCheckConfig(t *testing.T) {
	idp := ssotest.New(t)
	pg := testsvc.RequirePostgres(t)
	rd := testsvc.RequireRedis(t)
	s3 := testsvc.RequireS3(t)
	base := map[string]string{
		"SSO_AUTH_SERVER_URL": idp.Issuer + "/protocol/openid-connect", "SSO_REALM": "ignored",
		"SSO_CLIENT_ID": idp.ClientID, "SSO_CLIENT_SECRET": idp.ClientSecret,
		"SSO_REDIRECT_URI": "https://docs.example.org/api/auth/callback", "FRONTEND_URL": "https://docs.example.org",
		"COOKIE_SECRET": strings.Repeat("k", 40),
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	check := func(t *testing.T, vars map[string]string, dataDir string) (int, string) {
		var out, errOut bytes.Buffer
		code := platform.CheckConfig(context.Background(), []string{"--data-dir", dataDir}, env(vars), &out, &errOut)
		return code, out.String() + errOut.String()
	}
	production := with(map[string]string{
		"DATABASE_URL": pg, "REDIS_URL": "redis://" + rd.Addr + "/0",
		"DOCUMENT_STORAGE": "s3://" + s3.Bucket + "/check", "AWS_ENDPOINT_URL": s3.Endpoint, "AWS_REGION": s3.Region,
		"AWS_ACCESS_KEY_ID": s3.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3.SecretAccessKey,
	})

	t.Run("every part answers: exit 0 and nothing left behind", func(t *testing.T) {
		code, out := check(t, production, t.TempDir())
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		for _, want := range []string{
			"ok    database           postgresql", "(variable DATABASE_URL)", "schema version 0; serve migrates it to",
			"ok    redis              redis redis://" + rd.Addr + "/0 (variable REDIS_URL): PING answered",
			"ok    document storage   s3 s3://" + s3.Bucket + "/check at " + s3.Endpoint, "written and discarded",
			"ok    identity provider  oidc " + idp.Issuer,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q\n%s", want, out)
			}
		}
		if strings.Contains(out, s3.SecretAccessKey) {
			t.Fatal("a secret reached the output")
		}
		mc, err := minio.New(strings.TrimPrefix(s3.Endpoint, "http://"), &minio.Options{Creds: credentials.NewStaticV4(s3.AccessKeyID, s3.SecretAccessKey, ""), Region: s3.Region})
		if err != nil {
			t.Fatal(err)
		}
		for o := range mc.ListObjects(context.Background(), s3.Bucket, minio.ListObjectsOptions{Prefix: "check", Recursive: true}) {
			t.Fatalf("check-config left object %s", o.Key)
		}
		for u := range mc.ListIncompleteUploads(context.Background(), s3.Bucket, "check", true) {
			t.Fatalf("check-config left an upload of %s", u.Key)
		}
	})

	t.Run("after serve migrated, the schema is current", func(t *testing.T) {
		st, err := sqlstore.Open(context.Background(), pg)
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		code, out := check(t, production, t.TempDir())
		if code != 0 || !strings.Contains(out, fmt.Sprintf("schema version %d (current)", sqlstore.SchemaVersion())) {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})

	t.Run("every part gone: exit 1 and a FAIL line each", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		gone := fmt.Sprintf("127.0.0.1:%d", port)
		vars := with(map[string]string{
			"SSO_AUTH_SERVER_URL": "http://" + gone + "/auth",
			"DATABASE_URL":        "postgres://govkit:hunter2@" + gone + "/govkit?sslmode=disable&connect_timeout=2",
			"REDIS_URL":           "redis://:hunter2@" + gone + "/0",
			"DOCUMENT_STORAGE":    "s3://no-such-bucket/x", "AWS_ENDPOINT_URL": s3.Endpoint, "AWS_REGION": s3.Region,
			"AWS_ACCESS_KEY_ID": s3.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3.SecretAccessKey,
		})
		code, out := check(t, vars, t.TempDir())
		if code != 1 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		for _, part := range []string{"database", "redis", "document storage", "identity provider"} {
			if !strings.Contains(out, "FAIL  "+part+" ") {
				t.Errorf("no FAIL line for %s\n%s", part, out)
			}
		}
		if strings.Contains(out, "hunter2") {
			t.Fatalf("a password reached the output\n%s", out)
		}
		if !strings.Contains(out, "no-such-bucket does not exist") {
			t.Errorf("the missing bucket is not named\n%s", out)
		}
	})

	t.Run("one machine on the defaults: nothing created, and plain-HTTP cookies warned about", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		code, out := check(t, with(map[string]string{"FRONTEND_URL": "http://docs.example.org"}), data)
		if code != 0 || !strings.Contains(out, "serve creates") || !strings.Contains(out, "warn  config") || !strings.Contains(out, "in this process") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("check-config created the data directory: %v", err)
		}
	})

	t.Run("missing variables fail the config line", func(t *testing.T) {
		code, out := check(t, map[string]string{}, t.TempDir())
		if code != 1 || !strings.Contains(out, "FAIL  config") || !strings.Contains(out, "SSO_CLIENT_ID: required") {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})
}
