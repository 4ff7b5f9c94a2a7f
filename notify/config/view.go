package config

import (
	"time"

	"github.com/govkit/govkit/notify/jsrt"
)

// Func is a function of a JavaScript config file, callable from any
// goroutine. See package jsrt.
type Func = jsrt.Func

// Config is the loaded configuration: a typed view of the keys the service
// reads, plus the merged tree for everything else (Get, Raw).
type Config struct {
	RestAPIRoot               string   // restApiRoot
	Host                      string   // host
	Port                      int      // port
	AdminIPs                  []string // adminIps, or the legacy defaultAdminIps when adminIps is absent
	SiteMinderReverseProxyIPs []string // siteMinderReverseProxyIps
	TrustedReverseProxyIPs    []string // trustedReverseProxyIps
	HTTPHost                  string   // httpHost ("" when not set)
	InternalHTTPHost          string   // internalHttpHost ("" when not set)
	LoggingLevels             []string // loggingLevels

	Email        Email
	SMS          SMS
	Subscription Subscription
	Notification Notification
	Cron         Cron
	Queue        Queue
	OIDC         *OIDC // nil when the oidc key is absent
	TLS          TLS
	// OutboundRequests is ours: what requests to configured URLs may
	// reach (see notify/outbound).
	OutboundRequests OutboundRequests

	// Guard holds the keys of ours that close attacks NotifyBC leaves
	// open (allowedHosts, loginTokenTtlHours, subscription.creationLimit,
	// subscription.confirmationRequestLimit, sms.allowedNumberRegex).
	Guard Guard

	Middleware Middleware
	Datasource Datasource

	// Dir and NodeEnv are the Options Load was given ("src" filled in).
	Dir     string
	NodeEnv string
	// Files are the files that were read, in ascending precedence.
	Files []string
	// Warnings are unknown, deprecated and ignored keys.
	Warnings []Problem

	tree           map[string]any
	middlewareTree map[string]any
	datasourceTree map[string]any
	pool           *jsrt.Pool
	layers         []*layerFile // the files that were read, for Origin
}

// Email is config key email.
type Email struct {
	SMTP                   *SMTP // email.smtp; nil when not configured
	InboundSMTPServer      InboundSMTPServer
	Bounce                 Bounce
	ListUnsubscribeByEmail struct{ Enabled bool }
	Throttle               Throttle
}

// SMTP is email.smtp: nodemailer's SMTP transport options. The common ones
// are typed; Raw keeps everything as written.
type SMTP struct {
	Host              string
	Port              int // 0: the transport's default (587, or 465 when Secure)
	Secure            bool
	IgnoreTLS         bool
	RequireTLS        bool
	Name              string // client host name for EHLO
	Auth              SMTPAuth
	Pool              bool
	MaxConnections    int // pool size; 0: nodemailer's default of 5
	MaxMessages       int // messages per connection; 0: nodemailer's default of 100
	ConnectionTimeout time.Duration
	GreetingTimeout   time.Duration
	SocketTimeout     time.Duration
	TLS               map[string]any // tls options, e.g. rejectUnauthorized
	Raw               map[string]any
}

// SMTPAuth is email.smtp.auth. Secret: never log it.
type SMTPAuth struct {
	User string
	Pass string
}

// InboundSMTPServer is email.inboundSmtpServer.
type InboundSMTPServer struct {
	Enabled           bool
	Domain            string   // as written: one domain or a comma-separated list
	Domains           []string // Domain split on commas, trimmed
	ListeningSMTPPort int      // 0: a free port
	Options           map[string]any
}

// Bounce is email.bounce.
type Bounce struct {
	Enabled              bool
	UnsubThreshold       int
	SubjectRegex         string
	SMTPStatusCodeRegex  string
	FailedRecipientRegex string
}

// Throttle is email.throttle or sms.throttle: at most Max sends per
// Duration milliseconds.
type Throttle struct {
	Enabled  bool
	Max      int
	Duration int // milliseconds, as in the config file
}

// Period is Duration as a time.Duration.
func (t Throttle) Period() time.Duration { return time.Duration(t.Duration) * time.Millisecond }

// SMS is config key sms.
type SMS struct {
	Provider         string // twilio, swift or vonage
	ProviderSettings SMSProviderSettings
	Throttle         Throttle
}

// SMSProviderSettings is sms.providerSettings. Secrets: never log them.
type SMSProviderSettings struct {
	Twilio struct{ AccountSid, AuthToken, FromNumber string }
	Swift  struct{ APIURLPrefix, AccountKey, NotifyBCSwiftKey string }
	Vonage struct{ From, APIKey, APISecret string }
}

// Notification is config key notification.
type Notification struct {
	BroadcastSubscriberChunkSize              int
	GuaranteedBroadcastPushDispatchProcessing bool
	LogSkippedBroadcastPushDispatches         bool
	// BroadcastCustomFilterFunctions are the JMESPath functions of
	// notification.broadcastCustomFilterFunctions, by name.
	BroadcastCustomFilterFunctions map[string]FilterFunction
}

// FilterFunction is one custom JMESPath function: {_func, _signature} in
// the original's (jmespath.js) form. Func receives one argument, the array
// of resolved arguments, and may be async.
type FilterFunction struct {
	Func      Func
	Signature []ArgSignature
}

// ArgSignature is one entry of _signature. Types are jmespath.js type
// constants: 0 number, 1 any, 2 string, 3 array, 4 object, 5 boolean,
// 6 expression, 7 null, 8 array of numbers, 9 array of strings; the names
// ("string", "array[number]", …) are accepted in config files too.
type ArgSignature struct {
	Types    []int
	Optional bool
	Variadic bool
}

// Cron is config key cron. Time specs have an optional leading seconds
// field, as the original's cron library reads them.
type Cron struct {
	PurgeData                            PurgeData
	DispatchLiveNotifications            CronJob
	CheckRssConfigUpdates                CronJob
	DeleteBounces                        DeleteBounces
	ReDispatchBroadcastPushNotifications CronJob
	ClearRedisDatastore                  CronJob // kept for compatibility; unused in version 6
}

// CronJob is a job with only a time spec.
type CronJob struct{ TimeSpec string }

// PurgeData is cron.purgeData; each retention already falls back to
// defaultRetentionDays when absent, as the original does.
type PurgeData struct {
	TimeSpec                              string
	PushNotificationRetentionDays         float64
	ExpiredInAppNotificationRetentionDays float64
	NonConfirmedSubscriptionRetentionDays float64
	DeletedBounceRetentionDays            float64
	ExpiredAccessTokenRetentionDays       float64
	DefaultRetentionDays                  float64
}

// DeleteBounces is cron.deleteBounces.
type DeleteBounces struct {
	TimeSpec                                   string
	MinLapsedHoursSinceLatestNotificationEnded float64
}

// Queue is config key queue.
type Queue struct {
	// Connection is queue.connection; nil when it is null, which means the
	// embedded in-process queue backend.
	Connection *QueueConnection
}

// QueueConnection is queue.connection: ioredis options. The common ones are
// typed; Raw keeps everything as written. With Sentinels, Host and Port
// (which keep their defaults, as the original's merge does) are not used.
type QueueConnection struct {
	Host             string // default 127.0.0.1 when absent
	Port             int    // default 6379 when absent
	Username         string
	Password         string // secret
	DB               int
	TLS              bool // tls present and not false
	Sentinels        []HostPort
	Name             string // sentinel master name
	SentinelPassword string // secret
	Raw              map[string]any
}

// HostPort is one address of a list.
type HostPort struct {
	Host string
	Port int
}

// OIDC is config key oidc.
type OIDC struct {
	DiscoveryURL     string
	ClientID         string
	IsAdmin          Func // nil when absent
	IsAuthorizedUser Func // nil when absent: every authenticated user is authorized
	JWTVerifyOptions map[string]any
}

// OutboundRequests is config key outboundRequests (ours, not NotifyBC's):
// the policy of the checked client that fetches RSS feeds and posts
// callbacks (notify/outbound).
type OutboundRequests struct {
	// Allow admits networks (CIDR), addresses and host names that the
	// rules would refuse (outboundRequests.allow; default none).
	Allow []string
	// AllowPrivateNetworks admits the private ranges
	// (outboundRequests.allowPrivateNetworks; default true).
	AllowPrivateNetworks bool
}

// TLS is config key tls, filled from server/certs/{key,cert,ca}.pem as the
// original does and overridable by config files.
type TLS struct {
	Enabled                  bool
	ClientCertificateEnabled bool
	Key, Cert, CA            []byte // PEM; Key is secret
}

// Middleware is the merged middleware configuration.
type Middleware struct {
	All     map[string]MiddlewareEntry
	APIOnly map[string]MiddlewareEntry
}

// MiddlewareEntry is one middleware's settings.
type MiddlewareEntry struct {
	Enabled bool  // false only when enabled is false
	Params  []any // arguments of the middleware factory
}

// Datasource is the merged datasource configuration.
type Datasource struct {
	// URI is the MongoDB connection string; "" means the embedded store.
	URI string
	// Options are the other keys (driver options such as user, pass,
	// dbName, authSource), as written. Secrets: never log them.
	Options map[string]any
	// APITimeout is apiTimeoutMS, a key of ours: how long one database
	// operation of an API call may take, server selection included,
	// before the call is answered 503 (default DefaultAPITimeout).
	// Broadcasts and cron jobs are not bound by it.
	APITimeout time.Duration
	// FerretDBPostgresURI is ferretdbPostgresUri, a key of ours: when the
	// server at URI is FerretDB on PostgreSQL, the URL of that PostgreSQL
	// database, which the service reads directly to answer lists, counts
	// and the console's stats from indexes of its own (notify/ferretpg);
	// "" leaves them to FerretDB, which reads the whole collection for
	// each. Secret: never log it.
	FerretDBPostgresURI string
}

// DefaultAPITimeout is datasource apiTimeoutMS's default: a database that
// is down or does not answer fails an API call in 5 s, not after the
// MongoDB driver's 30 s server-selection wait (or never).
const DefaultAPITimeout = 5 * time.Second
