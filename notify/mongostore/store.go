// Package mongostore keeps the notification service's records in MongoDB
// through the official Go driver, in the original's collections and field
// names so that an existing deployment's data is used in place:
// subscription, notification, configuration, administrator,
// UserCredential, AccessToken, bounce and rss, plus three collections of
// ours for broadcasts — notificationBroadcast, notificationBroadcastChunk
// and notificationBroadcastResult: a broadcast's plan, its chunks of
// subscribers and their results, all read and written by _id (see
// [Store.PlanChunks]), and shown by the API as dispatch.* within
// [DefaultDispatchListLimit] entries per list, with complete counts;
// and lock and cronClaim (ours) for the named locks of [Store.Lock] and
// the claims of [Store.Claim].
//
// Each collection is a [Collection] of its notify record type, with CRUD by
// filter document (as the API's filter parser produces them) and by id. An
// unknown or malformed id is [notify.ErrNotFound]; a unique index
// violation is [notify.ErrDuplicate].
//
// # Servers
//
// The same code talks to MongoDB (4.2 or later, a replica set in
// production), to the embedded FerretDB of notify/embeddedmongo (v1 on
// SQLite) and to FerretDB v1 over PostgreSQL, so it uses only what all
// offer: no $expr, $lookup, TTL or collation indexes, change streams or
// distinct, and transactions only where the server has them
// ([Store.WithTransaction] runs the function plainly otherwise).
//
// # Reads at scale
//
// Lists, counts and the console's groups are counted and sorted by
// indexes, never by loading documents into this process.
//
// On MongoDB the schemas' indexes ([Store.EnsureIndexes]: the original's,
// and ours — the same composites as below) serve the console's sorts and
// filters.
//
// FerretDB v1 answers little from an index: on SQLite only _id equality;
// on PostgreSQL it pushes equality down as _jsonb->'f' @> value, which a
// B-tree cannot serve, and sorts and counts by fetching every document.
// So on the embedded store, and on FerretDB over PostgreSQL given the
// PostgreSQL URL behind it (datasource ferretdbPostgresUri), a
// [FieldIndex] of ours reads FerretDB's tables directly
// ([Store.SetFieldIndex]: embeddedmongo.Lookup on SQLite, notify/ferretpg
// on PostgreSQL), from expression indexes of ours the primary makes at
// start ([Store.EnsureFieldIndexes]). Without that URL, FerretDB over
// PostgreSQL scans, and the start log says so. A field index answers:
//
//   - lookups: queries on a subscription's userId or address, or on _id
//     with other conditions, from candidates it finds, with FerretDB's
//     own verdict on each;
//   - lists and counts: a filter that is a conjunction of equality, $ne,
//     $in, $nin and range conditions on a schema's indexed fields, and of
//     $ors of such conjunctions, sorted on one of them. A count is an
//     index count. A page is the rows of an index range or walk in sort
//     order, which reads index entries, not documents: the range of a
//     composite whose leading fields the equalities fix and whose next
//     field is the sort field; or else a composite that starts with the
//     sort field and holds the filter fields, walked past the entries
//     that do not match, unless the count says so few match that sorting
//     them costs less. The page's documents are then read in bulk and
//     decoded from FerretDB's stored format into the bytes FerretDB
//     would send (embeddedmongo.Lookup.FindDocs on SQLite,
//     ferretpg.Index.FindDocs on PostgreSQL, with the same decoder; a
//     document it cannot decode, or a projection with dotted paths, is
//     read through FerretDB by _id), and such a list returns every match
//     up to [MaxIndexList] records;
//   - the console's subscription groups: on SQLite, counts that triggers
//     of ours keep exact as documents are written
//     (embeddedmongo.Lookup.KeepGroupCounts); otherwise one GROUP BY over
//     a composite index.
//
// Some fields have no index of their own (a notification's validTill,
// invalidBefore and deletedBy, an array of user ids compared with
// MongoDB's array semantics): a query naming them, or holding an $or, is
// answered only when the database's plan finds the documents through
// indexes (checked with EXPLAIN), never by reading the table. So a
// signed-in user's own notification list — in-app, broadcast or addressed
// to them ($or of isBroadcast, userChannelId, userId), valid now, not
// deleted by them — is found by three indexes and sorted from the few
// matches. The indexes compare what FerretDB stores as MongoDB does for
// strings, dates and booleans; a collection where some document holds
// another type in those fields (found by a partial index that holds only
// such documents) is left to FerretDB.
//
// A read made with [WithScanLimit] (the API's lists and counts) that none
// of this answers is refused with an [UnindexedError] (400) when the
// collection holds more than the limit, instead of a scan whose cost
// grows with the collection.
package mongostore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/connstring"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/govkit/govkit/notify"
)

// DefaultDatabase is used when neither the uri nor Options.Database names a
// database: "test", as mongoose (and so the original) does, so that a
// deployment whose uri has no database finds its data where it left it.
const DefaultDatabase = "test"

// Options configure [Open].
type Options struct {
	// Database overrides the database named in the uri (the datasource
	// file's mongoose option dbName).
	Database string
	// Client holds further driver options (from the datasource config);
	// the uri is applied over them.
	Client *options.ClientOptions
	// Logger receives index decisions and warnings; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock for created/updated stamps; nil means notify.Now.
	Now func() time.Time
	// DispatchListLimit bounds each list of dispatch the API shows
	// (candidates, successful, failed, skipped); 0 means
	// DefaultDispatchListLimit. dispatch.counts always has the full counts.
	DispatchListLimit int
}

// DefaultDispatchListLimit is the longest dispatch list the API shows: a
// broadcast of any size answers in bounded time and memory, and lists as
// long as the original's documents could hold are shown whole.
const DefaultDispatchListLimit = 100000

// Store is the notification service's MongoDB storage. It is safe for
// concurrent use.
type Store struct {
	client *mongo.Client
	db     *mongo.Database
	log    *slog.Logger
	now    func() time.Time
	txn    bool
	// idOnlyQueries: the server answers queries from an index only for
	// _id equality (FerretDB v1 on SQLite scans for everything else), so
	// batch lookups are better made as point reads.
	idOnlyQueries bool
	// ferretDB: the server is FerretDB (v1), which has no text indexes.
	ferretDB  bool
	listLimit int
	// fieldIndex answers lookups the server would scan for (the
	// embedded store, FerretDB over PostgreSQL); nil: none.
	fieldIndex FieldIndex
}

// Open connects to uri and checks the server answers. It does not create
// indexes: the primary calls [Store.EnsureIndexes] at start.
func Open(ctx context.Context, uri string, opts Options) (*Store, error) {
	cs, err := connstring.ParseAndValidate(uri)
	if err != nil {
		return nil, fmt.Errorf("mongostore: uri: %w", err)
	}
	dbName := opts.Database
	if dbName == "" {
		dbName = cs.Database
	}
	if dbName == "" {
		dbName = DefaultDatabase
	}
	co := options.Client()
	if opts.Client != nil {
		co = opts.Client
	}
	co.ApplyURI(uri)
	client, err := mongo.Connect(co)
	if err != nil {
		return nil, fmt.Errorf("mongostore: connect: %w", err)
	}
	s := &Store{client: client, db: client.Database(dbName), log: opts.Logger, now: opts.Now, listLimit: opts.DispatchListLimit}
	if s.listLimit <= 0 {
		s.listLimit = DefaultDispatchListLimit
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = notify.Now
	}
	if err := s.Ping(ctx); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, err
	}
	if s.txn, err = s.detectTransactions(ctx); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, err
	}
	var info bson.M
	if err := s.db.RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		_ = client.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("mongostore: buildInfo: %w", err)
	}
	_, s.ferretDB = info["ferretdbVersion"]
	s.idOnlyQueries = s.ferretDB
	return s, nil
}

// detectTransactions asks the server whether it is a replica set member or
// a mongos with sessions: only those run multi-document transactions.
// FerretDB v1 reports neither.
func (s *Store) detectTransactions(ctx context.Context) (bool, error) {
	var hello bson.M
	if err := s.db.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		return false, fmt.Errorf("mongostore: hello: %w", err)
	}
	if _, ok := hello["logicalSessionTimeoutMinutes"]; !ok {
		return false, nil
	}
	if _, ok := hello["setName"]; ok {
		return true, nil
	}
	msg, _ := hello["msg"].(string)
	return msg == "isdbgrid", nil
}

// Close disconnects.
func (s *Store) Close(ctx context.Context) error { return s.client.Disconnect(ctx) }

// Ping checks the server answers, for the health endpoint.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := call(ctx)
	defer cancel()
	if err := s.db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		return fmt.Errorf("mongostore: ping: %w", mapErr(err))
	}
	return nil
}

// Database returns the database name in use.
func (s *Store) Database() string { return s.db.Name() }

// FerretDB reports whether the server is FerretDB (v1).
func (s *Store) FerretDB() bool { return s.ferretDB }

// SupportsTransactions reports whether the server runs multi-document
// transactions (a replica set or sharded cluster; not the embedded store).
func (s *Store) SupportsTransactions() bool { return s.txn }

// WithTransaction runs fn in a transaction when the server supports them,
// retrying on transient errors as the driver advises; otherwise it runs fn
// once, plainly. fn must do its store calls with the ctx it is given.
func (s *Store) WithTransaction(ctx context.Context, fn func(ctx context.Context) error) error {
	if !s.txn {
		return fn(ctx)
	}
	sess, err := s.client.StartSession()
	if err != nil {
		return fmt.Errorf("mongostore: start session: %w", err)
	}
	defer sess.EndSession(context.WithoutCancel(ctx))
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		return nil, fn(ctx)
	})
	return err
}

// Subscriptions is the subscription collection.
func (s *Store) Subscriptions() *Collection[notify.Subscription, *notify.Subscription] {
	return newCollection[notify.Subscription](s, subscriptionSchema)
}

// Notifications is the notification collection.
func (s *Store) Notifications() *Collection[notify.Notification, *notify.Notification] {
	return newCollection[notify.Notification](s, notificationSchema)
}

// Configurations is the configuration collection.
func (s *Store) Configurations() *Collection[notify.Configuration, *notify.Configuration] {
	return newCollection[notify.Configuration](s, configurationSchema)
}

// Administrators is the administrator collection.
func (s *Store) Administrators() *Collection[notify.Administrator, *notify.Administrator] {
	return newCollection[notify.Administrator](s, administratorSchema)
}

// UserCredentials is the UserCredential collection.
func (s *Store) UserCredentials() *Collection[notify.UserCredential, *notify.UserCredential] {
	return newCollection[notify.UserCredential](s, userCredentialSchema)
}

// AccessTokens is the AccessToken collection.
func (s *Store) AccessTokens() *Collection[notify.AccessToken, *notify.AccessToken] {
	return newCollection[notify.AccessToken](s, accessTokenSchema)
}

// Bounces is the bounce collection.
func (s *Store) Bounces() *Collection[notify.Bounce, *notify.Bounce] {
	return newCollection[notify.Bounce](s, bounceSchema)
}

// Rss is the rss collection.
func (s *Store) Rss() *Collection[notify.Rss, *notify.Rss] {
	return newCollection[notify.Rss](s, rssSchema)
}

// FindAdministratorByEmail finds an administrator by email, ignoring case.
func (s *Store) FindAdministratorByEmail(ctx context.Context, email string) (*notify.Administrator, error) {
	return s.Administrators().FindOne(ctx, Query{Filter: bson.D{{Key: emailKeyField, Value: notify.EmailKey(email)}}})
}

// mapErr turns driver errors into the domain's sentinels.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, mongo.ErrNoDocuments):
		return notify.ErrNotFound
	case unreachable(err):
		return &notify.UnavailableError{Part: "database", Err: err}
	case mongo.IsDuplicateKeyError(err):
		return fmt.Errorf("%w: %v", notify.ErrDuplicate, err)
	case isEmbeddedUniqueViolation(err):
		// Keep SQLite's sentence, not FerretDB's internal call trace.
		msg := err.Error()
		return fmt.Errorf("%w: %s", notify.ErrDuplicate, msg[strings.Index(msg, "UNIQUE constraint failed"):])
	}
	return err
}

// unreachable reports whether err says that the server could not be
// reached or did not answer in time (no server selected, a network error,
// a timeout — ours of WithCallTimeout included), as opposed to refusing
// an operation. A caller that went away (context.Canceled) is not the
// server's failure.
func unreachable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var sse topology.ServerSelectionError
	return errors.As(err, &sse) || mongo.IsNetworkError(err) || mongo.IsTimeout(err) ||
		errors.Is(err, mongo.ErrClientDisconnected) || errors.Is(err, context.DeadlineExceeded)
}

// WithCallTimeout returns ctx marked so that each operation of the store
// made with it may take at most d, server selection included (0: no
// bound). The API marks its requests' contexts with it, so that a
// database that is down or does not answer fails a call in d, as a 503,
// instead of after the driver's 30 s server-selection wait or never;
// background work (broadcasts, cron) keeps the driver's patience, which
// rides out a replica set's election.
func WithCallTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, callTimeoutKey{}, d)
}

type callTimeoutKey struct{}

// call bounds one operation by ctx's WithCallTimeout, if any.
func call(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, _ := ctx.Value(callTimeoutKey{}).(time.Duration); d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return ctx, func() {}
}

// isEmbeddedUniqueViolation recognises FerretDB v1's answer to an update
// that breaks a unique index: an InternalError carrying SQLite's message
// instead of MongoDB's code 11000.
func isEmbeddedUniqueViolation(err error) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// DropDatabase drops the whole database: for tests and throw-away
// development data, never called by the service.
func (s *Store) DropDatabase(ctx context.Context) error { return s.db.Drop(ctx) }
