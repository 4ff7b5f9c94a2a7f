package preflight

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"a password is left out, the user kept", "postgres://govkit:s3cret@db:5432/govkit?sslmode=disable", "postgres://govkit@db:5432/govkit?sslmode=disable"},
		{"a Redis password without a user is left out", "redis://:s3cret@redis:6379/0", "redis://redis:6379/0"},
		{"several MongoDB hosts are kept with the replica set", "mongodb://notify:p%40ss@m0:27017,m1:27017/notify-bc?replicaSet=rs0&authSource=admin", "mongodb://notify@m0:27017,m1:27017/notify-bc?authSource=admin&replicaSet=rs0"},
		{"query parameters that may hold secrets are left out", "mongodb://m0/db?tlsCertificateKeyFilePassword=x&password=y&tls=true", "mongodb://m0/db?tls=true"},
		{"an @ in the password does not leak its tail", "redis://u:a@b@host:1/0", "redis://u@host:1/0"},
		{"a fragment is left out", "https://sso.example.org/realms/x#secret", "https://sso.example.org/realms/x"},
		{"a file path is kept", "/var/lib/govkit/docplatform.db", "/var/lib/govkit/docplatform.db"},
		{"an unparseable query keeps only the address", "mongodb://m0/db?a=%zz", "mongodb://m0/db"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := RedactURL(c.in); got != c.want {
				t.Fatalf("RedactURL(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestRunAndPrint(t *testing.T) {
	parts := []Part{
		{Name: "store", Kind: "mongodb", Addr: "mongodb://m0/db", From: FromFile("/app/src/datasources/db.datasource.local.js"),
			Check: func(context.Context) (string, error) { return "ping answered", nil }},
		{Name: "queue", Kind: "redis", Addr: "redis:6379", From: Default,
			Check: func(context.Context) (string, error) { return "", errors.New("connection refused") }},
		{Name: "inbound SMTP", Kind: "disabled", From: FromVariable("X")},
	}
	res := Run(context.Background(), parts)
	var out bytes.Buffer
	if Print(&out, res) {
		t.Fatal("Print reported success with a failed check")
	}
	want := []string{
		"ok    store         mongodb mongodb://m0/db (file /app/src/datasources/db.datasource.local.js): ping answered",
		"FAIL  queue         redis redis:6379 (default): connection refused",
		"ok    inbound SMTP  disabled (variable X)",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("printed\n%s\nwant\n%s", out.String(), strings.Join(want, "\n"))
	}
	out.Reset()
	if !Print(&out, Run(context.Background(), parts[:1])) {
		t.Fatal("Print reported failure when every check passed")
	}
}

func TestLogLinesNameEveryPart(t *testing.T) {
	var b bytes.Buffer
	Log(slog.New(slog.NewJSONHandler(&b, nil)), []Part{{Name: "store", Kind: "embedded", Addr: "/data/notify-db", From: Default}})
	if !strings.Contains(b.String(), `"msg":"uses","part":"store","kind":"embedded","addr":"/data/notify-db","from":"default"`) {
		t.Fatalf("log line %s", b.String())
	}
}
