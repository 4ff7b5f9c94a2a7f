package platform

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/govkit/govkit/docplatform/config"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/docplatform/sso"
	"github.com/govkit/govkit/internal/cliflags"
	"github.com/govkit/govkit/internal/preflight"
)

// Parts lists the external parts the platform of cfg uses — the
// database, Redis, the document storage and the OpenID provider — with
// where each is and which variable set it, for the start-up log and for
// check-config. getenv tells a variable from a default.
func Parts(cfg config.Config, getenv func(string) string) []preflight.Part {
	from := func(name string) string {
		if strings.TrimSpace(getenv(name)) == "" {
			return preflight.Default
		}
		return preflight.FromVariable(name)
	}
	db := preflight.Part{Name: "database", Kind: "sqlite", Addr: cfg.DatabaseURL, From: from("DATABASE_URL")}
	if isPostgres(cfg.DatabaseURL) {
		db.Kind, db.Addr = "postgresql", preflight.RedactURL(cfg.DatabaseURL)
	}
	db.Check = func(ctx context.Context) (string, error) { return sqlstore.Check(ctx, cfg.DatabaseURL) }

	rd := preflight.Part{Name: "redis", From: from("REDIS_URL")}
	if cfg.RedisURL != "" {
		rd.Kind, rd.Addr = "redis", preflight.RedactURL(cfg.RedisURL)
		rd.Check = func(ctx context.Context) (string, error) {
			opt, err := redis.ParseURL(cfg.RedisURL)
			if err != nil {
				return "", errors.New("REDIS_URL cannot be parsed")
			}
			opt.MaxRetries = -1
			c := redis.NewClient(opt)
			defer c.Close()
			if err := c.Ping(ctx).Err(); err != nil {
				return "", fmt.Errorf("PING: %w", err)
			}
			return "PING answered", nil
		}
	} else {
		rd.Kind, rd.Addr = "none", "rate-limit counters in this process (one replica only)"
	}

	docs := preflight.Part{Name: "document storage", Kind: "directory", Addr: cfg.DocumentStorage, From: from("DOCUMENT_STORAGE")}
	if cfg.S3 != nil {
		docs.Kind, docs.Addr = "s3", cfg.DocumentStorage
		if cfg.S3.Endpoint != "" {
			docs.Addr += " at " + cfg.S3.Endpoint
		}
	}
	docs.Check = func(ctx context.Context) (string, error) { return checkDocumentStorage(ctx, cfg) }

	idp := preflight.Part{Name: "identity provider", Kind: "oidc", Addr: cfg.Issuer, From: "variables SSO_AUTH_SERVER_URL, SSO_REALM"}
	idp.Check = func(ctx context.Context) (string, error) {
		oc, err := sso.New(sso.Config{Issuer: cfg.Issuer, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURI})
		if err != nil {
			return "", err
		}
		if err := oc.Discover(ctx); err != nil {
			return "", err
		}
		return "discovery document read (client " + cfg.ClientID + ")", nil
	}
	return []preflight.Part{db, rd, docs, idp}
}

// checkDocumentStorage opens the storage as serve does and stages a
// one-byte upload that it then discards: the credentials may write, and
// nothing is left behind (an aborted multipart upload, a removed
// temporary file).
func checkDocumentStorage(ctx context.Context, cfg config.Config) (string, error) {
	if cfg.S3 == nil {
		if err := preflight.WritableDir(cfg.DocumentStorage); err != nil {
			return "", err
		}
		if _, err := os.Stat(cfg.DocumentStorage); errors.Is(err, fs.ErrNotExist) {
			// Not created here: check-config may run as another user
			// (root) than serve, which would then not own it.
			return "no directory yet: serve creates it", nil
		}
	}
	files, err := openDocumentStorage(ctx, cfg)
	if err != nil {
		return "", err
	}
	up, err := files.Stage(ctx, strings.NewReader("."), 1)
	if err != nil {
		return "", fmt.Errorf("a test upload failed: %w", err)
	}
	up.Abort()
	return "a test upload was written and discarded", nil
}

// CheckConfig is `govkit docplatform check-config`: it reads the
// environment serve would (with the same --data-dir), then connects to
// each part it names — the database (its schema version against this
// binary's, changing nothing), Redis (PING), the document storage (a test
// upload, discarded) and the OpenID provider (discovery) — and prints one
// line per part. Exit 0 when everything works, 1 when something does not,
// 2 on bad usage.
func CheckConfig(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("govkit docplatform check-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "./data", "directory for the default SQLite database and documents (as serve's)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: govkit docplatform check-config [--data-dir DIR]")
		fmt.Fprintln(w, "\nReads the variables `govkit docplatform serve` would, connects to every part they name")
		fmt.Fprintln(w, "and prints what works; exit 0 only when all do.\n\nFlags:")
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args, stdout); !ok {
		return code
	}
	conf := preflight.Result{Part: preflight.Part{Name: "config", Kind: "environment"}}
	cfg, err := config.Load(getenv, *dataDir)
	if err != nil {
		conf.Err = err
		preflight.Print(stdout, []preflight.Result{conf})
		return 1
	}
	conf.Note = fmt.Sprintf("NODE_ENV=%q, public URL %s", cfg.NodeEnv, cfg.FrontendURL)
	if !cfg.SecureCookies {
		conf.Warnings = append(conf.Warnings, "cookies are not Secure (NODE_ENV is development or test): never in production")
	}
	if u, err := url.Parse(cfg.FrontendURL); err == nil && u.Scheme != "https" && cfg.SecureCookies {
		conf.Warnings = append(conf.Warnings, "FRONTEND_URL is not https: browsers do not send the Secure cookies back over plain HTTP")
	}
	results := append([]preflight.Result{conf}, preflight.Run(ctx, Parts(cfg, getenv))...)
	if !preflight.Print(stdout, results) {
		return 1
	}
	return 0
}
