package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/access"
	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/cron"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/embeddedmongo"
	"github.com/govkit/govkit/notify/jmesfilter"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/subscription"
)

// AppOptions assemble a complete service from its configuration.
type AppOptions struct {
	Config *config.Config
	// Role is the node role (NOTIFYBC_NODE_ROLE): the primary or a single
	// node creates indexes and the RSA key pair.
	Role config.NodeRole
	// DataDir holds the embedded store's files when the datasource has no
	// uri ("" keeps them in memory: tests only).
	DataDir string
	// StoreURI overrides the datasource uri (tests share one embedded
	// store); Database overrides the database name.
	StoreURI string
	// Database overrides the database name (else the datasource's dbName,
	// else the uri's, else notifyBC).
	Database string
	// Channel overrides the senders built from config (tests, govkit dev
	// pass senders to a mail catcher); ChannelOptions adjust the built ones.
	Channel        *channel.Sender
	ChannelOptions channel.Options
	// RSABits is the size of a newly generated key pair (0: 4096).
	RSABits int
	// Queue is pinged by the health endpoint.
	Queue  Pinger
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Cron runs the scheduled jobs on this node; the caller decides, from
	// the node role and NODE_ENV (see CronOptions).
	Cron        bool
	CronOptions CronOptions
	// Attempts keeps the counters of wrong codes and failed log-ins (see
	// subscription.AttemptLimits and LoginFailureLimit); nil keeps them in
	// this process's memory. Several nodes need a shared store
	// (ratelimit.NewRedis on the queue's Redis).
	Attempts ratelimit.Store
}

// App is an assembled service: storage, senders, domain services and the
// HTTP server.
type App struct {
	Server        *Server
	Store         *mongostore.Store
	Channel       *channel.Sender
	Subscriptions *subscription.Service
	// Warnings are start-up findings for the log (test-mail use, SMS
	// credentials missing, …).
	Warnings []string

	embedded   *embeddedmongo.Server
	ownChannel bool
	cron       *cron.Service
	// attempts is the in-process counter store made when
	// AppOptions.Attempts is nil.
	attempts *ratelimit.Memory
}

// OpenApp connects to storage (starting the embedded store when no uri is
// configured), prepares it on the primary, and builds the server.
func OpenApp(ctx context.Context, o AppOptions) (_ *App, err error) {
	cfg := o.Config
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	app := &App{}
	defer func() {
		if err != nil {
			_ = app.Close(context.Background())
		}
	}()
	uri := o.StoreURI
	if uri == "" {
		uri = cfg.Datasource.URI
	}
	if uri == "" {
		dir := ""
		if o.DataDir != "" {
			dir = filepath.Join(o.DataDir, "notify-db")
		}
		app.embedded, err = embeddedmongo.Start(ctx, embeddedmongo.Config{Dir: dir})
		if err != nil {
			return nil, fmt.Errorf("embedded store: %w", err)
		}
		uri = app.embedded.URI()
	}
	db := o.Database
	if db == "" {
		db, _ = cfg.Datasource.Options["dbName"].(string)
	}
	app.Store, err = mongostore.Open(ctx, uri, mongostore.Options{Database: db, Client: clientOptions(cfg), Logger: log})
	if err != nil {
		return nil, err
	}
	if o.Role.RunsCron() {
		if _, err := app.Store.EnsureIndexes(ctx); err != nil {
			return nil, err
		}
	}
	app.Channel = o.Channel
	if app.Channel == nil {
		co := o.ChannelOptions
		if co.TestMail == nil {
			co.TestMail = testMailStore{app.Store}
		}
		if co.Logger == nil {
			co.Logger = log
		}
		var w []string
		app.Channel, w, err = channel.FromConfig(cfg, co)
		if err != nil {
			return nil, err
		}
		app.ownChannel = true
		app.Warnings = append(app.Warnings, w...)
	}
	filters, err := jmesfilter.New(jmesfilter.FromConfig(cfg.Notification.BroadcastCustomFilterFunctions))
	if err != nil {
		return nil, fmt.Errorf("notification.broadcastCustomFilterFunctions: %w", err)
	}
	attempts := o.Attempts
	if attempts == nil {
		app.attempts = ratelimit.NewMemory(time.Minute)
		attempts = app.attempts
	}
	app.Subscriptions = subscription.New(subscription.Options{Config: cfg, Store: app.Store, Channel: app.Channel, Filters: filters, Attempts: attempts, Logger: log})
	if o.Role.RunsCron() {
		if err := app.Subscriptions.EnsureRSAKey(ctx, o.RSABits); err != nil {
			return nil, err
		}
	}
	ident, err := access.New(access.Options{
		AdminIPs:                  cfg.AdminIPs,
		SiteMinderReverseProxyIPs: cfg.SiteMinderReverseProxyIPs,
		TrustedReverseProxyIPs:    cfg.TrustedReverseProxyIPs,
		Tokens:                    app.Store.AccessTokens(),
		OIDC:                      oidcFromConfig(cfg),
		Logger:                    log,
	})
	if err != nil {
		return nil, err
	}
	app.Server = New(Options{
		Config: cfg, Store: app.Store, Identifier: ident, Channel: app.Channel, Filters: filters,
		Subscriptions: app.Subscriptions, Queue: o.Queue, Logger: log, MaxBodyBytes: o.MaxBodyBytes, Attempts: attempts,
	})
	if o.Cron {
		if err := app.startCron(cfg, o.CronOptions, log); err != nil {
			return nil, err
		}
	}
	return app, nil
}

// Close stops background work and releases storage and senders.
func (a *App) Close(ctx context.Context) error {
	var errs []error
	if a.cron != nil {
		errs = append(errs, a.cron.Stop(ctx))
	}
	if a.Server != nil {
		errs = append(errs, a.Server.Shutdown(ctx))
	}
	if a.ownChannel && a.Channel != nil {
		errs = append(errs, a.Channel.Close())
	}
	if a.Store != nil {
		errs = append(errs, a.Store.Close(ctx))
	}
	if a.embedded != nil {
		errs = append(errs, a.embedded.Stop(ctx))
	}
	if a.attempts != nil {
		errs = append(errs, a.attempts.Close())
	}
	return errors.Join(errs...)
}

func oidcFromConfig(cfg *config.Config) *access.OIDC {
	if cfg.OIDC == nil || cfg.OIDC.DiscoveryURL == "" {
		return nil
	}
	o := access.OIDCOptions{DiscoveryURL: cfg.OIDC.DiscoveryURL, VerifyOptions: cfg.OIDC.JWTVerifyOptions}
	wrap := func(f config.Func) func(map[string]any) (bool, error) {
		if f == nil {
			return nil
		}
		return func(claims map[string]any) (bool, error) {
			// The config runtime's call timeout bounds the call.
			v, err := f(context.Background(), claims)
			if err != nil {
				return false, err
			}
			return truthy(v), nil
		}
	}
	o.IsAdmin = wrap(cfg.OIDC.IsAdmin)
	o.IsAuthorizedUser = wrap(cfg.OIDC.IsAuthorizedUser)
	return access.NewOIDC(o)
}

// truthy is JavaScript's truthiness of an exported value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0 && x == x
	case int64:
		return x != 0
	case int:
		return x != 0
	case string:
		return x != ""
	}
	return true
}

// testMailStore keeps the public test-mail account in
// configuration{name:'etherealAccount'}, where the original keeps it.
type testMailStore struct{ s *mongostore.Store }

func (t testMailStore) LoadTestAccount(ctx context.Context) (email.TestAccount, bool, error) {
	rec, err := t.s.Configurations().FindOne(ctx, mongostore.Query{Filter: bson.D{{Key: "name", Value: "etherealAccount"}}})
	if errors.Is(err, notify.ErrNotFound) {
		return email.TestAccount{}, false, nil
	}
	if err != nil {
		return email.TestAccount{}, false, err
	}
	b, err := json.Marshal(rec.Value)
	if err != nil {
		return email.TestAccount{}, false, err
	}
	var acct email.TestAccount
	if err := json.Unmarshal(b, &acct); err != nil {
		return email.TestAccount{}, false, err
	}
	return acct, acct.User != "", nil
}

func (t testMailStore) SaveTestAccount(ctx context.Context, acct email.TestAccount) error {
	b, err := json.Marshal(acct)
	if err != nil {
		return err
	}
	v, err := notify.DecodeJSONValue(b)
	if err != nil {
		return err
	}
	return t.s.Configurations().Insert(ctx, &notify.Configuration{Name: "etherealAccount", Value: v})
}

// clientOptions turns the datasource file's driver options into the Go
// driver's: user/pass (mongoose's names) or auth {username, password},
// authSource, replicaSet. dbName picks the database (see databaseName).
func clientOptions(cfg *config.Config) *options.ClientOptions {
	opts := cfg.Datasource.Options
	if len(opts) == 0 {
		return nil
	}
	co := options.Client()
	user, _ := opts["user"].(string)
	pass, _ := opts["pass"].(string)
	if a, ok := opts["auth"].(map[string]any); ok {
		if u, ok := a["username"].(string); ok {
			user = u
		}
		if p, ok := a["password"].(string); ok {
			pass = p
		}
	}
	if user != "" {
		cred := options.Credential{Username: user, Password: pass}
		if src, ok := opts["authSource"].(string); ok {
			cred.AuthSource = src
		}
		co.SetAuth(cred)
	}
	if rs, ok := opts["replicaSet"].(string); ok {
		co.SetReplicaSet(rs)
	}
	return co
}
