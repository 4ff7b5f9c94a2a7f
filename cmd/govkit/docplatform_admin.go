package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/internal/cliflags"
)

func init() {
	subcommands["docplatform"]["grant-admin"] = command{summary: "make a user a system admin (--email or --sub), e.g. the first one", run: runDocplatformGrantAdmin}
}

func runDocplatformGrantAdmin(ctx context.Context, args []string, io stdio) int {
	return grantAdmin(ctx, args, os.Getenv, io)
}

// grantAdmin is `govkit docplatform grant-admin --email E | --sub S`: it
// opens the database serve would (DATABASE_URL, else the SQLite file under
// --data-dir, as config.Load defaults it), runs the migrations, and sets
// the user's system-admin flag. Exit 1 when no such user (or an email two
// users share), 2 on bad usage or an unreachable database.
func grantAdmin(ctx context.Context, args []string, getenv func(string) string, io stdio) int {
	fs := flag.NewFlagSet("govkit docplatform grant-admin", flag.ContinueOnError)
	fs.SetOutput(io.err)
	email := fs.String("email", "", "email address of a user who has signed in")
	sub := fs.String("sub", "", "the provider's subject (user id); the user need not have signed in yet")
	dataDir := fs.String("data-dir", "./data", "data directory holding the default SQLite database")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: govkit docplatform grant-admin (--email ADDRESS | --sub SUBJECT) [--data-dir DIR]")
		fmt.Fprintln(fs.Output(), "\nMakes a user a system admin in the database named by DATABASE_URL")
		fmt.Fprintln(fs.Output(), "(unset: the SQLite database under --data-dir, as serve's).\n\nFlags:")
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args, io.out); !ok {
		return code
	}
	if (*email == "") == (*sub == "") {
		return cliflags.Usagef(fs, "give exactly one of --email and --sub")
	}
	dbURL := strings.TrimSpace(getenv("DATABASE_URL"))
	if dbURL == "" {
		dbURL = filepath.Join(*dataDir, "docplatform.db")
	}
	st, err := sqlstore.Open(ctx, dbURL)
	if err != nil {
		fmt.Fprintf(io.err, "govkit docplatform grant-admin: %v\n", err)
		return 2
	}
	defer st.Close()
	u, err := st.GrantAdmin(ctx, *email, *sub)
	switch {
	case errors.Is(err, docplatform.ErrNotFound):
		fmt.Fprintf(io.err, "govkit docplatform grant-admin: no user with email %q; they must sign in once, or use --sub\n", *email)
		return 1
	case errors.Is(err, docplatform.ErrConflict):
		fmt.Fprintf(io.err, "govkit docplatform grant-admin: several users have email %q; use --sub\n", *email)
		return 1
	case err != nil:
		fmt.Fprintf(io.err, "govkit docplatform grant-admin: %v\n", err)
		return 2
	}
	fmt.Fprintf(io.out, "%s (%s) is now a system admin\n", u.ID, u.Email)
	return 0
}
