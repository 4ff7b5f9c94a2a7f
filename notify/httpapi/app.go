package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/access"
	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/cron"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/embeddedmongo"
	"github.com/govkit/govkit/notify/ferretpg"
	"github.com/govkit/govkit/notify/jmesfilter"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/outbound"
	"github.com/govkit/govkit/notify/queue"
	"github.com/govkit/govkit/notify/sms"
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
	// Dispatch adjusts the dispatcher (tests: shorter leases, small
	// batches); Settings, Store, Backend, senders and filters are always
	// the app's.
	Dispatch dispatch.Options
	// RSAWait is how often a secondary looks for the key pair the primary
	// makes (0: every second).
	RSAWait time.Duration
	Logger  *slog.Logger
	// MaxBodyBytes bounds request bodies (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Cron runs the scheduled jobs on this node; the caller decides, from
	// the node role and NODE_ENV (see CronOptions).
	Cron        bool
	CronOptions CronOptions
	// Attempts keeps the counters of wrong codes and failed log-ins (see
	// subscription.AttemptLimits and LoginFailureLimit); nil keeps them in
	// the queue's Redis, shared by every node (in this process's memory on
	// the embedded queue, where there is one node).
	Attempts ratelimit.Store
	// Outbound sends every request to a URL someone configured (feeds,
	// callbacks, SMS providers, the OIDC provider); nil builds one from
	// config outboundRequests (see notify/outbound).
	Outbound *outbound.Transport
	// FerretDBPostgresURL overrides the datasource's ferretdbPostgresUri
	// (tests).
	FerretDBPostgresURL string
	// Embedded is the embedded store StoreURI points at when the caller
	// started it (tests share one): the app reads its files for the
	// lookups FerretDB would answer by scanning, as it does with an
	// embedded store of its own (see mongostore.Store.SetFieldIndex).
	Embedded *embeddedmongo.Server
}

// App is an assembled service: storage, senders, domain services and the
// HTTP server.
type App struct {
	Server        *Server
	Store         *mongostore.Store
	Channel       *channel.Sender
	Subscriptions *subscription.Service
	Dispatcher    *dispatch.Dispatcher
	// Queue is the queue backend (queue.connection, or the embedded
	// Redis). Redis is its client, shared by everything the nodes must
	// agree on; keys go under RedisPrefix (add a name of your own:
	// RedisPrefix + "codes:").
	Queue       *queue.Backend
	Redis       redis.UniversalClient
	RedisPrefix string
	// Warnings are start-up findings for the log (test-mail use, SMS
	// credentials missing, …).
	Warnings []string

	embedded   *embeddedmongo.Server
	lookup     io.Closer // the store's field index (see openStore)
	outbound   *outbound.Transport
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
	m := newMetrics()
	defer func() {
		if err != nil {
			_ = app.Close(context.Background())
		}
	}()
	app.Store, app.embedded, app.lookup, err = openStore(ctx, storeOptions{
		Config: cfg, DataDir: o.DataDir, URI: o.StoreURI, Database: o.Database, Embedded: o.Embedded,
		FerretDBPostgresURL: o.FerretDBPostgresURL,
		Prepare:             o.Role.RunsCron(), Logger: log,
	})
	if err != nil {
		return nil, err
	}
	if w := storeWarning(cfg, app.Store, app.embedded != nil || o.Embedded != nil, app.lookup != nil); w != "" {
		app.Warnings = append(app.Warnings, w)
	}
	if err := app.openQueue(ctx, cfg, log); err != nil {
		return nil, err
	}
	app.outbound = o.Outbound
	if app.outbound == nil {
		if app.outbound, err = outbound.New(outbound.Policy{
			Allow: cfg.OutboundRequests.Allow, AllowPrivateNetworks: cfg.OutboundRequests.AllowPrivateNetworks,
		}); err != nil {
			return nil, err
		}
	}
	app.Channel = o.Channel
	if app.Channel == nil {
		co := o.ChannelOptions
		if co.HTTPClient == nil {
			co.HTTPClient = app.outbound.Client(sms.DefaultTimeout)
		}
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
	app.Channel.Observe(m.countSend) // before Throttle: sends that reached the server
	app.Channel.Throttle(app.throttle("email", cfg.Email.Throttle), app.throttle("sms", cfg.SMS.Throttle))
	filters, err := jmesfilter.New(jmesfilter.FromConfig(cfg.Notification.BroadcastCustomFilterFunctions))
	if err != nil {
		return nil, fmt.Errorf("notification.broadcastCustomFilterFunctions: %w", err)
	}
	attempts := o.Attempts
	switch {
	case attempts != nil:
	case !app.Queue.Embedded():
		// shared by every node, in the queue's Redis
		attempts = ratelimit.NewRedis(app.Redis, app.RedisPrefix+"attempts:")
	default:
		app.attempts = ratelimit.NewMemory(time.Minute)
		attempts = app.attempts
	}
	app.Subscriptions = subscription.New(subscription.Options{Config: cfg, Store: app.Store, Channel: app.Channel, Filters: filters, Attempts: attempts, Logger: log})
	if o.Role.RunsCron() {
		if err := app.Subscriptions.EnsureRSAKey(ctx, o.RSABits); err != nil {
			return nil, err
		}
		if err := app.Store.RecordSchemaVersion(ctx); err != nil {
			return nil, err
		}
	} else if err := waitForRSAKey(ctx, app.Store, o.RSAWait, log); err != nil {
		return nil, err
	}
	if n := cfg.Notification.BroadcastSubscriberChunkSize; n > dispatch.MaxChunkSize {
		app.Warnings = append(app.Warnings, fmt.Sprintf("notification.broadcastSubscriberChunkSize %d is above %d: chunks of %d are used (a chunk is one queue job and one result document)", n, dispatch.MaxChunkSize, dispatch.MaxChunkSize))
	}
	do := o.Dispatch
	do.Settings = dispatch.SettingsFromConfig(cfg)
	do.Store = dispatch.FromMongo(app.Store)
	do.Backend = app.Queue
	do.Email, do.SMS = app.Channel.Email, app.Channel.SMS
	do.Filters = filters
	do.Logger = log
	if do.HTTPClient == nil {
		do.HTTPClient = app.outbound.Client(30 * time.Second)
	}
	if app.Dispatcher, err = dispatch.New(do); err != nil {
		return nil, err
	}
	if o.Role.RunsWorkers() {
		app.Dispatcher.StartWorkers()
	}
	if app.Queue.Embedded() && o.Role == config.RoleAll {
		app.resumeBroadcasts(ctx, log)
	}
	ident, err := access.New(access.Options{
		AdminIPs:                  cfg.AdminIPs,
		SiteMinderReverseProxyIPs: cfg.SiteMinderReverseProxyIPs,
		TrustedReverseProxyIPs:    cfg.TrustedReverseProxyIPs,
		Tokens:                    app.Store.AccessTokens(),
		OIDC:                      oidcFromConfig(cfg, app.outbound.Client(10*time.Second)),
		Hosts:                     access.NewHosts(cfg.HTTPHost, cfg.Host, cfg.Guard.AllowedHosts),
		Logger:                    log,
	})
	if err != nil {
		return nil, err
	}
	app.Server = New(Options{
		Config: cfg, Store: app.Store, Identifier: ident, Channel: app.Channel, Filters: filters,
		Subscriptions: app.Subscriptions, Queue: app.Queue, Dispatcher: app.Dispatcher, Logger: log, MaxBodyBytes: o.MaxBodyBytes, Attempts: attempts,
		metrics: m,
	})
	m.reg.MustRegister(&workCollector{store: app.Store, pending: app.Dispatcher.Pending})
	if o.Cron {
		if err := app.startCron(cfg, o.CronOptions, log); err != nil {
			return nil, err
		}
	}
	return app, nil
}

// storeOptions configure openStore.
type storeOptions struct {
	Config  *config.Config
	DataDir string // the embedded store's files go in DataDir/notify-db ("": in memory)
	// URI and Database override the datasource's (tests).
	URI, Database string
	// Embedded is an embedded store URI points at (tests share one).
	Embedded *embeddedmongo.Server
	// FerretDBPostgresURL overrides the datasource's ferretdbPostgresUri
	// (tests).
	FerretDBPostgresURL string
	// Prepare creates the indexes, as the primary (or a single node) does
	// at start.
	Prepare bool
	Logger  *slog.Logger
}

// openStore connects to the store of the datasource (starting the
// embedded one in the data directory when it has no uri) and, with
// Prepare, creates the indexes. It returns the embedded server it started
// and the lookup it attached, which the caller closes after the store.
func openStore(ctx context.Context, o storeOptions) (store *mongostore.Store, started *embeddedmongo.Server, index io.Closer, err error) {
	cfg := o.Config
	defer func() {
		if err != nil {
			if store != nil {
				_ = store.Close(context.WithoutCancel(ctx))
			}
			if index != nil {
				_ = index.Close()
			}
			if started != nil {
				_ = started.Stop(context.WithoutCancel(ctx))
			}
			store, started, index = nil, nil, nil
		}
	}()
	uri := o.URI
	if uri == "" {
		uri = cfg.Datasource.URI
	}
	if uri == "" {
		dir := ""
		if o.DataDir != "" {
			dir = embeddedStoreDir(o.DataDir)
		}
		started, err = embeddedmongo.Start(ctx, embeddedmongo.Config{Dir: dir})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("embedded store: %w", err)
		}
		uri = started.URI()
	}
	db := o.Database
	if db == "" {
		db, _ = cfg.Datasource.Options["dbName"].(string)
	}
	store, err = mongostore.Open(ctx, uri, mongostore.Options{Database: db, Client: clientOptions(cfg), Logger: o.Logger})
	if err != nil {
		return nil, started, nil, err
	}
	embedded := started
	if embedded == nil {
		embedded = o.Embedded
	}
	pgURL := o.FerretDBPostgresURL
	if pgURL == "" {
		pgURL = cfg.Datasource.FerretDBPostgresURI
	}
	switch {
	case embedded != nil:
		// nil in memory: no file to read, every query goes to FerretDB
		if lookup := embedded.Lookup(store.Database()); lookup != nil {
			store.SetFieldIndex(lookup)
			index = lookup
		}
	case pgURL != "" && store.FerretDB():
		fi, err := ferretpg.Open(ctx, pgURL, store.Database())
		if err != nil {
			return store, started, nil, fmt.Errorf("datasource ferretdbPostgresUri: %w", err)
		}
		store.SetFieldIndex(fi)
		index = fi
	}
	if o.Prepare {
		if _, err := store.EnsureIndexes(ctx); err != nil {
			return store, started, index, err
		}
		if embedded != nil {
			if err := embedded.IndexIDs(ctx, store.Database()); err != nil {
				return store, started, index, err
			}
		}
		if err := store.EnsureFieldIndexes(ctx); err != nil {
			return store, started, index, err
		}
	}
	return store, started, index, nil
}

// storeWarning is the start-up warning about the store's reads, or "":
// on FerretDB over PostgreSQL without ferretdbPostgresUri every list,
// count and the console's stats read the whole collection into FerretDB.
func storeWarning(cfg *config.Config, store *mongostore.Store, embedded, fieldIndex bool) string {
	switch {
	case cfg.Datasource.FerretDBPostgresURI != "" && !store.FerretDB():
		return "datasource ferretdbPostgresUri is set but the server is not FerretDB: ignored"
	case store.FerretDB() && !embedded && !fieldIndex:
		return "the store is FerretDB: without datasource ferretdbPostgresUri (the PostgreSQL database behind FerretDB) " +
			"every list, count and the console's stats read the whole collection into FerretDB"
	}
	return ""
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
	if a.Dispatcher != nil {
		errs = append(errs, a.Dispatcher.Close(ctx))
	}
	if a.ownChannel && a.Channel != nil {
		errs = append(errs, a.Channel.Close())
	}
	if a.Store != nil {
		errs = append(errs, a.Store.Close(ctx))
	}
	if a.lookup != nil {
		errs = append(errs, a.lookup.Close())
	}
	if a.embedded != nil {
		errs = append(errs, a.embedded.Stop(ctx))
	}
	if a.attempts != nil {
		errs = append(errs, a.attempts.Close())
	}
	if a.outbound != nil {
		a.outbound.CloseIdleConnections()
	}
	if a.Queue != nil {
		errs = append(errs, a.Queue.Close())
	}
	return errors.Join(errs...)
}

// openQueue connects to the queue backend. A configured Redis that does
// not answer is logged, naming queue.connection, and /api/health reports
// it; the node still starts, and works once Redis is back.
func (a *App) openQueue(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	var err error
	if a.Queue, err = queue.Open(cfg.Queue.Connection); err != nil {
		return err
	}
	a.Redis, a.RedisPrefix = a.Queue.Client, a.Queue.Prefix
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.Queue.Ping(pctx); err != nil {
		log.Error("queue backend unreachable: check queue.connection; broadcasts and throttled sends wait for it, and /api/health answers 503",
			"setting", "queue.connection", "addr", a.Queue.Addr, "err", err)
	} else {
		log.Info("queue backend", "addr", a.Queue.Addr, "embedded", a.Queue.Embedded(), "prefix", a.Queue.Prefix)
	}
	return nil
}

// throttle is the cluster-wide limiter of email.throttle or sms.throttle,
// nil when disabled.
func (a *App) throttle(name string, t config.Throttle) channel.Limiter {
	if !t.Enabled {
		return nil
	}
	return queue.NewThrottle(a.Queue, name, t.Max, t.Period())
}

// waitForRSAKey is a secondary waiting for the key pair the primary makes
// at its first start, as the original's secondaries do (they look every
// 5 s; we look every second).
func waitForRSAKey(ctx context.Context, s *mongostore.Store, every time.Duration, log *slog.Logger) error {
	if every <= 0 {
		every = time.Second
	}
	for said := false; ; said = true {
		n, err := s.Configurations().Count(ctx, bson.D{{Key: "name", Value: "rsa"}})
		if err == nil && n > 0 {
			return nil
		}
		if !said {
			log.Info("waiting for the primary to create the RSA key pair (configuration rsa)")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the RSA key pair: %w", ctx.Err())
		case <-time.After(every):
		}
	}
}

// resumeBroadcasts takes up, at the start of a single node on the embedded
// queue, the broadcasts its previous run left in state sending: that
// queue's state went with the process. (With Redis the queue keeps them,
// and the stale-broadcast cron job covers the rest.)
func (a *App) resumeBroadcasts(ctx context.Context, log *slog.Logger) {
	left, err := a.Store.Notifications().Find(ctx, mongostore.Query{
		Filter:     bson.D{{Key: "state", Value: notify.StateSending}, {Key: "isBroadcast", Value: true}},
		Projection: bson.D{{Key: "_id", Value: 1}},
	})
	if err != nil {
		log.Error("broadcasts left in state sending not resumed", "err", err)
		return
	}
	for _, n := range left {
		if err := a.Dispatcher.Redispatch(ctx, n.ID); err != nil {
			log.Error("broadcast not resumed", "notification", n.ID.Hex(), "err", err)
			continue
		}
		log.Info("broadcast left in state sending resumed", "notification", n.ID.Hex())
	}
}

func oidcFromConfig(cfg *config.Config, client *http.Client) *access.OIDC {
	if cfg.OIDC == nil || cfg.OIDC.DiscoveryURL == "" {
		return nil
	}
	o := access.OIDCOptions{DiscoveryURL: cfg.OIDC.DiscoveryURL, VerifyOptions: cfg.OIDC.JWTVerifyOptions, Client: client}
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
// authSource, replicaSet, and the waits serverSelectionTimeoutMS,
// connectTimeoutMS and heartbeatFrequencyMS (the uri's own settings win).
// dbName picks the database (see databaseName).
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
	for key, set := range map[string]func(time.Duration) *options.ClientOptions{
		"serverSelectionTimeoutMS": co.SetServerSelectionTimeout,
		"connectTimeoutMS":         co.SetConnectTimeout,
		"heartbeatFrequencyMS":     co.SetHeartbeatInterval,
	} {
		if ms, ok := opts[key].(float64); ok && ms > 0 {
			set(time.Duration(ms * float64(time.Millisecond)))
		}
	}
	return co
}
