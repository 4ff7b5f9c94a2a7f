package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/testsvc"
	"github.com/govkit/govkit/notify/httpapi"
)

// TestAdminCommandIsTheWayIn runs `govkit notify admin` against the store
// of a running service that trusts no address (adminIps empty), on the
// embedded store and on a MongoDB-protocol server: the administrator it
// adds signs in over HTTP, set-password revokes the tokens of the old
// password, remove locks the administrator out, and the API's rules hold
// (password complexity, emails unique ignoring case).
func TestAdminCommandIsTheWayIn(t *testing.T) {
	stores := []struct {
		name       string
		datasource func(t *testing.T) string
	}{
		{"embedded store", func(*testing.T) string { return "" }},
		{"MongoDB protocol server", func(t *testing.T) string {
			return fmt.Sprintf(`{"uri": %q}`, strings.TrimSuffix(testsvc.RequireFerretDB(t), "/")+"/notify")
		}},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{
				"src/config.local.json": `{"host": "127.0.0.1", "port": 0, "adminIps": [], "siteMinderReverseProxyIps": [],
					"queue": {"connection": null}, "email": {"inboundSmtpServer": {"enabled": false}}}`,
			}
			if ds := s.datasource(t); ds != "" {
				files["src/datasources/db.datasource.local.json"] = ds
			}
			dir := deployment(t, files)
			data := t.TempDir()
			admin := func(stdin string, args ...string) (int, string, string) {
				var out, errOut bytes.Buffer
				loc := []string{"--dir", dir, "--data-dir", data}
				code := httpapi.AdminMain(context.Background(), append(append(args[:1:1], loc...), args[1:]...), map[string]string{},
					strings.NewReader(stdin), &out, &errOut)
				return code, out.String(), errOut.String()
			}

			// Before serve ever ran: the command prepares the store itself.
			if code, out, errOut := admin("Passw0rd!long\n", "add", "--email", "Ops@Example.org", "--username", "ops"); code != 0 {
				t.Fatalf("add: exit %d\n%s%s", code, out, errOut)
			}

			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan string, 1)
			done := make(chan error, 1)
			logs := &syncBuffer{}
			go func() {
				done <- httpapi.Run(ctx, httpapi.RunOptions{Dir: dir, DataDir: data, Env: map[string]string{}, Log: logs, RSABits: 2048,
					Ready: func(addr string) { ready <- addr }})
			}()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			var url string
			select {
			case url = <-ready:
			case err := <-done:
				t.Fatalf("Run: %v\n%s", err, logs.String())
			case <-time.After(60 * time.Second):
				t.Fatal("not ready")
			}
			login := func(email, password string) (int, string) {
				b, _ := json.Marshal(map[string]string{"email": email, "password": password})
				resp, err := http.Post(url+"/api/administrators/login", "application/json", bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var body struct{ Token string }
				_ = json.NewDecoder(resp.Body).Decode(&body)
				return resp.StatusCode, body.Token
			}
			role := func(token string) string {
				req, _ := http.NewRequest("GET", url+"/api/administrators/whoami", nil)
				req.Header.Set("Authorization", token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var p struct{ Role string }
				_ = json.NewDecoder(resp.Body).Decode(&p)
				return p.Role
			}

			if role("") != "Anonymous" {
				t.Fatal("the test's own address is trusted: adminIps did not apply")
			}
			status, token := login("ops@EXAMPLE.org", "Passw0rd!long")
			if status != 200 || role(token) != "Admin" {
				t.Fatalf("sign-in of the added administrator: %d, role %q", status, role(token))
			}

			// While serve runs, on the same store.
			if code, out, errOut := admin("", "add", "--email", "second@example.org", "--password", "An0ther#one"); code != 0 {
				t.Fatalf("add while serving: exit %d\n%s%s", code, out, errOut)
			}
			if status, tok := login("second@example.org", "An0ther#one"); status != 200 || role(tok) != "Admin" {
				t.Fatalf("sign-in of an administrator added while serving: %d", status)
			}

			refusals := []struct {
				name, stdin string
				args        []string
				mention     string
			}{
				{"an email that differs only by case is taken", "Passw0rd!long\n", []string{"add", "--email", "OPS@example.ORG"}, "exists"},
				{"a weak password is refused with the rule", "password\n", []string{"add", "--email", "third@example.org"}, "upper-case"},
				{"an address without @ is refused", "Passw0rd!long\n", []string{"add", "--email", "nobody"}, "email"},
				{"an unknown administrator cannot get a password", "Passw0rd!long\n", []string{"set-password", "--email", "ghost@example.org"}, "no administrator"},
			}
			for _, c := range refusals {
				if code, _, errOut := admin(c.stdin, c.args...); code != 1 || !strings.Contains(errOut, c.mention) {
					t.Errorf("%s: exit %d, %s", c.name, code, errOut)
				}
			}
			if code, _, errOut := admin("", "add", "--email", "x@example.org"); code != 2 || !strings.Contains(errOut, "standard input") {
				t.Errorf("no password anywhere: exit %d, %s", code, errOut)
			}

			code, out, errOut := admin("N3w-pass_word\n", "set-password", "--email", "OPS@example.org")
			if code != 0 || !strings.Contains(out, "1 access tokens revoked") {
				t.Fatalf("set-password: exit %d\n%s%s", code, out, errOut)
			}
			if role(token) != "Anonymous" {
				t.Fatal("a token of the old password still works after set-password")
			}
			if status, _ := login("ops@example.org", "Passw0rd!long"); status != 401 {
				t.Fatalf("old password: %d", status)
			}
			if status, _ := login("ops@example.org", "N3w-pass_word"); status != 200 {
				t.Fatalf("new password: %d", status)
			}

			code, out, _ = admin("", "list")
			if code != 0 || !strings.Contains(out, "Ops@Example.org") || !strings.Contains(out, "second@example.org") || !strings.Contains(out, "yes") {
				t.Fatalf("list: exit %d\n%s", code, out)
			}

			if code, out, errOut := admin("", "remove", "--email", "second@EXAMPLE.org"); code != 0 {
				t.Fatalf("remove: exit %d\n%s%s", code, out, errOut)
			}
			if status, _ := login("second@example.org", "An0ther#one"); status != 401 {
				t.Fatalf("a removed administrator signs in: %d", status)
			}
			if _, out, _ := admin("", "list"); strings.Contains(out, "second@") {
				t.Fatalf("list after remove:\n%s", out)
			}
		})
	}
}

func TestAdminCommandUsage(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		code int
		say  string
	}{
		{"no command is a usage error", nil, 2, "govkit notify admin: which command? add, set-password, list, remove\nrun 'govkit help notify admin'\n"},
		{"an unknown command is a usage error", []string{"promote"}, 2, "unknown command"},
		{"help lists the commands", []string{"-h"}, 0, "set-password"},
		{"--email is required", []string{"remove", "--dir", t.TempDir()}, 2, "--email is required"},
		{"a missing config directory is refused", []string{"list", "--config-dir", "/nonexistent/govkit"}, 2, "does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := httpapi.AdminMain(context.Background(), c.args, nil, strings.NewReader(""), &out, &errOut)
			if code != c.code || !strings.Contains(out.String()+errOut.String(), c.say) {
				t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
			}
		})
	}
}
