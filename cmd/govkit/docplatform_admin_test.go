package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/internal/testsvc"
)

func TestGrantAdmin(t *testing.T) {
	backends := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "p.db") }},
		{"postgres", func(t *testing.T) string { return testsvc.RequirePostgres(t) }},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			url := b.url(t)
			st, err := sqlstore.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for _, u := range []docplatform.User{{ID: "sub-ada", Email: "Ada@Example.org"}, {ID: "sub-x", Email: "shared@example.org"}, {ID: "sub-y", Email: "shared@example.org"}} {
				if _, err := st.UpsertUser(ctx, u); err != nil {
					t.Fatal(err)
				}
			}
			getenv := func(k string) string {
				if k == "DATABASE_URL" {
					return url
				}
				return ""
			}
			cases := []struct {
				name    string
				args    []string
				code    int
				admin   string
				message string
			}{
				{"by email, ignoring case", []string{"--email", "ada@example.org"}, 0, "sub-ada", "sub-ada"},
				{"by subject of a user who never signed in", []string{"--sub", "sub-new"}, 0, "sub-new", "sub-new"},
				{"an unknown email is exit 1", []string{"--email", "nobody@example.org"}, 1, "", "no user with email"},
				{"a shared email is exit 1", []string{"--email", "shared@example.org"}, 1, "", "use --sub"},
				{"both flags is a usage error", []string{"--email", "a@b", "--sub", "x"}, 2, "", "exactly one"},
				{"neither flag is a usage error", nil, 2, "", "exactly one"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					var out, errb bytes.Buffer
					code := grantAdmin(ctx, tc.args, getenv, stdio{out: &out, err: &errb})
					if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.message) {
						t.Fatalf("exit %d, out %q, err %q", code, out.String(), errb.String())
					}
					if tc.admin != "" {
						admin, _, err := st.UserAccess(ctx, tc.admin)
						if err != nil || !admin {
							t.Fatalf("%s not admin (%v)", tc.admin, err)
						}
					}
				})
			}
			if admin, _, _ := st.UserAccess(ctx, "sub-x"); admin {
				t.Fatal("a refused grant changed a user")
			}
		})
	}
}

func TestGrantAdminIsWired(t *testing.T) {
	if _, ok := subcommands["docplatform"]["grant-admin"]; !ok {
		t.Fatal("govkit docplatform grant-admin is not registered")
	}
}
