package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/internal/preflight"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/embeddedmongo"
	"github.com/govkit/govkit/notify/ferretpg"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/queue"
)

// CheckProduction refuses, with NODE_ENV=production, what must not run in
// production whatever the rest says: mail without an SMTP server of the
// deployment's own (the seed: "production must configure its own SMTP";
// outside production the public test-mail service stays, with a warning).
func CheckProduction(cfg *config.Config, nodeEnv string) error {
	if nodeEnv != "production" {
		return nil
	}
	if cfg.Email.SMTP == nil || cfg.Email.SMTP.Host == "" {
		return errors.New("email.smtp: NODE_ENV=production needs an SMTP server of your own: set email.smtp.host (and port, secure, auth.user, auth.pass) in a config file such as config.production.js or config.local.js; the public test-mail service is used only outside production")
	}
	return nil
}

// embeddedStoreDir is where the embedded store keeps its files in a data
// directory.
func embeddedStoreDir(dataDir string) string { return filepath.Join(dataDir, "notify-db") }

// Parts lists the external parts a node of this configuration uses — the
// document store, the queue's Redis, the SMTP server, the inbound SMTP
// listener and, when configured, the OpenID provider — with where each is
// and which file set it, for the start-up log and for check-config. The
// checks connect as serve would and change nothing.
func Parts(cfg *config.Config, dataDir string) []preflight.Part {
	var parts []preflight.Part

	store := preflight.Part{Name: "store", From: preflight.FromFile(cfg.DatasourceOrigin("uri"))}
	if cfg.Datasource.URI != "" {
		store.Kind, store.Addr = "mongodb", preflight.RedactURL(cfg.Datasource.URI)
		uri := cfg.Datasource.URI
		store.Check = func(ctx context.Context) (string, error) { return checkStore(ctx, cfg, uri, false) }
	} else {
		dir := embeddedStoreDir(dataDir)
		store.Kind, store.Addr = "embedded", dir
		store.Check = func(ctx context.Context) (string, error) {
			e, err := embeddedmongo.Start(ctx, embeddedmongo.Config{Dir: dir})
			if err != nil {
				return "", err
			}
			defer func() { _ = e.Stop(context.WithoutCancel(ctx)) }()
			return checkStore(ctx, cfg, e.URI(), true)
		}
	}
	parts = append(parts, store)

	q := preflight.Part{Name: "queue", From: preflight.FromFile(firstOrigin(cfg, "queue.connection.host", "queue.connection.sentinels", "queue.connection.path", "queue.connection"))}
	if conn := cfg.Queue.Connection; conn != nil {
		q.Kind = "redis"
		addr, err := queue.Addr(conn)
		q.Addr = addr
		q.Check = func(ctx context.Context) (string, error) {
			if err != nil {
				return "", err
			}
			b, err := queue.Open(conn)
			if err != nil {
				return "", err
			}
			defer b.Close()
			if err := b.Ping(ctx); err != nil {
				return "", fmt.Errorf("PING: %w", err)
			}
			return "PING answered", nil
		}
	} else {
		q.Kind, q.Addr = "embedded", "in this process (queue.connection is null: one node only)"
	}
	parts = append(parts, q)

	mail := preflight.Part{Name: "SMTP", From: preflight.FromFile(cfg.Origin("email.smtp.host"))}
	if s := cfg.Email.SMTP; s != nil && s.Host != "" {
		sc, _, err := email.ParseSMTP(s.Raw)
		mail.Kind = "smtp"
		if err == nil {
			mail.Addr = net.JoinHostPort(sc.Host, strconv.Itoa(smtpPort(sc)))
			if sc.Secure {
				mail.Addr += " (TLS)"
			}
			if sc.User != "" {
				mail.Addr += " as " + sc.User
			}
		}
		mail.Check = func(ctx context.Context) (string, error) {
			if err != nil {
				return "", err
			}
			sender, err := email.New(sc, email.Addressing{})
			if err != nil {
				return "", err
			}
			defer sender.Close()
			if err := sender.Check(ctx); err != nil {
				return "", err
			}
			if sc.User != "" {
				return "connected and signed in (no mail sent)", nil
			}
			return "connected (no mail sent)", nil
		}
	} else {
		mail.Kind, mail.Addr = "test-mail", "the public test-mail service ethereal.email (mail never reaches recipients)"
		mail.Check = func(context.Context) (string, error) {
			if err := CheckProduction(cfg, cfg.NodeEnv); err != nil {
				return "", err
			}
			return "outside production only (not checked)", nil
		}
	}
	parts = append(parts, mail)

	in := cfg.Email.InboundSMTPServer
	inbound := preflight.Part{Name: "inbound SMTP", From: preflight.FromFile(firstOrigin(cfg, "email.inboundSmtpServer.listeningSmtpPort", "email.inboundSmtpServer.enabled"))}
	if in.Enabled {
		addr := inboundAddr(cfg.Host, in.ListeningSMTPPort)
		inbound.Kind, inbound.Addr = "listener", addr
		if len(in.Domains) > 0 {
			inbound.Addr += " for " + strings.Join(in.Domains, ", ")
		} else {
			inbound.Addr += " (no email.inboundSmtpServer.domain: no list-unsubscribe or bounce addresses in mail)"
		}
		inbound.Check = func(ctx context.Context) (string, error) { return checkListener(ctx, addr) }
	} else {
		inbound.Kind = "disabled"
	}
	parts = append(parts, inbound)

	if cfg.OIDC != nil && cfg.OIDC.DiscoveryURL != "" {
		u := cfg.OIDC.DiscoveryURL
		parts = append(parts, preflight.Part{Name: "identity provider", Kind: "oidc", Addr: preflight.RedactURL(u),
			From:  preflight.FromFile(cfg.Origin("oidc.discoveryUrl")),
			Check: func(ctx context.Context) (string, error) { return checkDiscovery(ctx, u) }})
	}
	return parts
}

// firstOrigin is the origin of the first of paths that some file set.
func firstOrigin(cfg *config.Config, paths ...string) string {
	for _, p := range paths {
		if o := cfg.Origin(p); o != "" {
			return o
		}
	}
	return ""
}

func smtpPort(c email.SMTPConfig) int {
	switch {
	case c.Port != 0:
		return c.Port
	case c.Secure:
		return 465
	}
	return 587
}

// checkStore connects, reads the administrators collection (which needs
// the rights serve needs, not just a ping) and says whether transactions
// are available.
func checkStore(ctx context.Context, cfg *config.Config, uri string, embedded bool) (string, error) {
	db, _ := cfg.Datasource.Options["dbName"].(string)
	s, err := mongostore.Open(ctx, uri, mongostore.Options{Database: db, Client: clientOptions(cfg)})
	if err != nil {
		return "", err
	}
	defer func() { _ = s.Close(context.WithoutCancel(ctx)) }()
	n, err := s.Administrators().Count(ctx, bson.D{})
	if err != nil {
		return "", fmt.Errorf("read administrators: %w", err)
	}
	txn := "no transactions (not a replica set)"
	if s.SupportsTransactions() {
		txn = "transactions available"
	}
	note := fmt.Sprintf("database %s, %d administrators, %s", s.Database(), n, txn)
	switch pg := cfg.Datasource.FerretDBPostgresURI; {
	case embedded || !s.FerretDB():
		if pg != "" && !embedded {
			note += "; ferretdbPostgresUri ignored: the server is not FerretDB"
		}
	case pg != "":
		fi, err := ferretpg.Open(ctx, pg, s.Database())
		if err != nil {
			return "", fmt.Errorf("datasource ferretdbPostgresUri: %w", err)
		}
		_ = fi.Close()
		note += "; FerretDB: lists, counts and the console's stats answered from indexes of ours in its PostgreSQL (ferretdbPostgresUri)"
	default:
		note += "; FerretDB without datasource ferretdbPostgresUri: every list, count and the console's stats read the whole collection"
	}
	return note, nil
}

// checkListener reports whether the inbound SMTP address is usable: free
// to listen on (serve is not running), or answered by an SMTP server's
// 220 greeting (serve is already running there).
func checkListener(ctx context.Context, addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		ln.Close()
		return "free to listen on", nil
	}
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	d := net.Dialer{Timeout: 5 * time.Second}
	c, derr := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
	if derr != nil {
		return "", fmt.Errorf("cannot listen (%v)", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, rerr := bufio.NewReader(c).ReadString('\n')
	if rerr != nil || !strings.HasPrefix(line, "220") {
		return "", fmt.Errorf("the port is taken by something that is not an SMTP server (%v)", err)
	}
	return "an SMTP server answers there (notify already running?)", nil
}

// checkDiscovery fetches the provider's discovery document.
func checkDiscovery(ctx context.Context, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("discovery document: HTTP %d", resp.StatusCode)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&doc); err != nil || doc.Issuer == "" || doc.JWKSURI == "" {
		return "", errors.New("discovery document: not an OpenID configuration (no issuer or jwks_uri)")
	}
	return "issuer " + doc.Issuer, nil
}
