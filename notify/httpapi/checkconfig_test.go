package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/httpapi"
	"github.com/govkit/govkit/notify/mailcatcher"
)

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestCheckConfig runs `govkit notify check-config` against real parts:
// a MongoDB-protocol server, the test Redis, an SMTP server; then against
// the same settings with each part gone or wrong.
func TestCheckConfig(t *testing.T) {
	redis := testsvc.RequireRedis(t)
	ferret, pg := testsvc.RequireFerretDBOnPostgres(t)
	mongo := strings.TrimSuffix(ferret, "/") + "/notify"
	catcher := mailcatcher.New(mailcatcher.Options{})
	smtpAddr, stop, err := catcher.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop(context.Background()) })
	rhost, rport, _ := net.SplitHostPort(redis.Addr)
	shost, sport, _ := net.SplitHostPort(smtpAddr)

	check := func(t *testing.T, env map[string]string, files map[string]string) (int, string) {
		t.Helper()
		dir := deployment(t, files)
		var out, errOut bytes.Buffer
		code := httpapi.CheckMain(context.Background(), []string{"--dir", dir, "--data-dir", t.TempDir()}, env, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	good := fmt.Sprintf(`{"host": "127.0.0.1", "email": {"smtp": {"host": %q, "port": %s, "ignoreTLS": true},
		"inboundSmtpServer": {"listeningSmtpPort": 0, "domain": "notify.example.org"}},
		"queue": {"connection": {"host": %q, "port": %s, "keyPrefix": %q}}}`, shost, sport, rhost, rport, redis.Prefix)

	t.Run("every part answers: exit 0, one ok line each, no mail sent", func(t *testing.T) {
		code, out := check(t, map[string]string{"NODE_ENV": "production"}, map[string]string{
			"src/config.local.json":                    good,
			"src/datasources/db.datasource.local.json": fmt.Sprintf(`{"uri": %q}`, mongo),
		})
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		for _, want := range []string{
			"ok    config ", `NODE_ENV="production"`,
			"ok    store         mongodb " + mongo, "administrators",
			"ok    queue         redis " + redis.Addr, "PING answered",
			"ok    SMTP          smtp " + smtpAddr, "connected (no mail sent)",
			"ok    inbound SMTP  listener 127.0.0.1:0 for notify.example.org", "free to listen on",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q\n%s", want, out)
			}
		}
		if n := len(catcher.Mails()); n != 0 {
			t.Fatalf("check-config sent %d mails", n)
		}
	})

	t.Run("on FerretDB the store line says whether its reads use indexes of ours, never the URL's password", func(t *testing.T) {
		withPassword, err := url.Parse(pg)
		if err != nil {
			t.Fatal(err)
		}
		withPassword.User = url.UserPassword(withPassword.User.Username(), "s3cret-pg")
		for _, c := range []struct{ datasource, want string }{
			{fmt.Sprintf(`{"uri": %q}`, mongo), "without datasource ferretdbPostgresUri"},
			{fmt.Sprintf(`{"uri": %q, "ferretdbPostgresUri": %q}`, mongo, withPassword.String()), "answered from indexes of ours"},
		} {
			code, out := check(t, map[string]string{"NODE_ENV": "production"}, map[string]string{
				"src/config.local.json":                    good,
				"src/datasources/db.datasource.local.json": c.datasource,
			})
			if code != 0 || !strings.Contains(out, c.want) || strings.Contains(out, "s3cret-pg") {
				t.Errorf("exit %d, want %q and no password\n%s", code, c.want, out)
			}
		}
	})

	t.Run("every part gone: exit 1, a FAIL line naming each", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		go func() { // a listener that is not an SMTP server
			for {
				c, err := taken.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
				c.Close()
			}
		}()
		code, out := check(t, map[string]string{}, map[string]string{
			"src/config.local.json": fmt.Sprintf(`{"host": "127.0.0.1", "email": {"smtp": {"host": "127.0.0.1", "port": %d, "connectionTimeout": 2000},
				"inboundSmtpServer": {"listeningSmtpPort": %d}},
				"queue": {"connection": {"host": "127.0.0.1", "port": %d, "connectTimeout": 1000}}}`,
				closedPort(t), taken.Addr().(*net.TCPAddr).Port, closedPort(t)),
			"src/datasources/db.datasource.local.json": fmt.Sprintf(`{"uri": "mongodb://127.0.0.1:%d/notify?serverSelectionTimeoutMS=1000&connectTimeoutMS=1000"}`, closedPort(t)),
		})
		if code != 1 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		for _, part := range []string{"store", "queue", "SMTP", "inbound SMTP"} {
			if !strings.Contains(out, "FAIL  "+part+" ") {
				t.Errorf("no FAIL line for %s\n%s", part, out)
			}
		}
		if !strings.Contains(out, "not an SMTP server") {
			t.Errorf("the taken inbound port is not explained\n%s", out)
		}
	})

	t.Run("production on the test-mail service fails the SMTP line", func(t *testing.T) {
		code, out := check(t, map[string]string{"NODE_ENV": "production"}, map[string]string{
			"src/config.local.json": `{"queue": {"connection": null}, "email": {"inboundSmtpServer": {"enabled": false}}}`,
		})
		if code != 1 || !strings.Contains(out, "FAIL  SMTP") || !strings.Contains(out, "email.smtp.host") || !strings.Contains(out, "ok    store         embedded") {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})

	t.Run("a config that does not load fails the config line", func(t *testing.T) {
		code, out := check(t, nil, map[string]string{"src/config.local.json": `{"port": "x"}`})
		if code != 1 || !strings.Contains(out, "FAIL  config") || !strings.Contains(out, "port") {
			t.Fatalf("exit %d\n%s", code, out)
		}
	})
}
