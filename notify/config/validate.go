package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Renamed is a key an older major version used and version 6 does not read.
// A config file that still has it is refused, naming the replacement and the
// upgrade step that rewrites it.
type Renamed struct {
	Path string // dotted key path in the old file
	To   string // what it became
	From int    // the major version whose upgrade to From+1 rewrites it
	Note string // extra advice, if any
}

// RenamedKeys lists every config key the seed's v1→v6 history renamed or
// moved.
var RenamedKeys = []Renamed{
	{Path: "notification.logSuccessfulBroadcastDispatches", To: "notification.guaranteedBroadcastPushDispatchProcessing", From: 2, Note: "its default is now true"},
	{Path: "smtp", To: "email.smtp", From: 3},
	{Path: "inboundSmtpServer", To: "email.inboundSmtpServer", From: 3},
	{Path: "email.inboundSmtpServer.bounce", To: "email.bounce", From: 3},
	{Path: "notification.handleBounce", To: "email.bounce.enabled", From: 3},
	{Path: "notification.handleListUnsubscribeByEmail", To: "email.listUnsubscribeByEmail.enabled", From: 3},
	{Path: "smsServiceProvider", To: "sms.provider", From: 3},
	{Path: "sms.twilio", To: "sms.providerSettings.twilio", From: 3},
	{Path: "sms.swift", To: "sms.providerSettings.swift", From: 3},
	{Path: "subscription.unsubscriptionEmailDomain", To: "email.inboundSmtpServer.domain", From: 3, Note: "the key was removed"},
	{Path: "email.throttle.minTime", To: "email.throttle.max and email.throttle.duration (minTime = duration / max)", From: 5},
	{Path: "sms.throttle.minTime", To: "sms.throttle.max and sms.throttle.duration (minTime = duration / max)", From: 5},
	{Path: "email.throttle.clientOptions", To: "queue.connection", From: 5},
	{Path: "sms.throttle.clientOptions", To: "queue.connection", From: 5},
	{Path: "email.throttle.datastore", To: "queue.connection", From: 5, Note: "the queue backend (Redis) is required"},
	{Path: "sms.throttle.datastore", To: "queue.connection", From: 5, Note: "the queue backend (Redis) is required"},
}

// deprecated keys are accepted with a warning and ignored.
var deprecated = map[string]string{
	"notification.broadcastSubRequestBatchSize": "deprecated in version 6: accepted and ignored; remove it",
	"email.defaultSmtp":                         "removed in version 6: without email.smtp, `govkit dev` uses its mail catcher and `serve` the public test mail service; ignored",
	"defaultSmtp":                               "removed in version 6: without email.smtp, `govkit dev` uses its mail catcher and `serve` the public test mail service; ignored",
}

func deprecatedKeys() map[string]any {
	m := make(map[string]any, len(deprecated))
	for k := range deprecated {
		m[k] = nil
	}
	return m
}

// bottleneckKeys are throttle options of the Bottleneck library of
// version 5 that version 6 dropped without replacement.
var bottleneckKeys = []string{"id", "maxConcurrent", "jobExpiration", "highWater", "strategy", "penalty",
	"reservoir", "reservoirRefreshInterval", "reservoirRefreshAmount", "reservoirIncreaseInterval",
	"reservoirIncreaseAmount", "reservoirIncreaseMaximum", "trackDoneStatus", "clearDatastore", "timeout", "Redis", "Promise"}

// open marks a key whose value is free-form (driver options, templates,
// functions): nothing below it is checked.
type open struct{}

// schema is the tree of keys version 6 knows; unknown keys are warned about.
var schema = map[string]any{
	"restApiRoot": open{}, "host": open{}, "port": open{}, "rest": open{},
	"adminIps": open{}, "defaultAdminIps": open{}, "siteMinderReverseProxyIps": open{},
	"trustedReverseProxyIps": open{}, "httpHost": open{}, "internalHttpHost": open{},
	"loggingLevels": open{},
	// ours (Guard)
	"allowedHosts": open{}, "loginTokenTtlHours": open{},
	"email": map[string]any{
		"smtp": open{},
		"inboundSmtpServer": map[string]any{
			"enabled": open{}, "domain": open{}, "listeningSmtpPort": open{}, "options": open{},
		},
		"bounce": map[string]any{
			"enabled": open{}, "unsubThreshold": open{}, "subjectRegex": open{},
			"smtpStatusCodeRegex": open{}, "failedRecipientRegex": open{},
		},
		"listUnsubscribeByEmail": map[string]any{"enabled": open{}},
		"throttle":               map[string]any{"enabled": open{}, "max": open{}, "duration": open{}},
	},
	"sms": map[string]any{
		"provider":           open{},
		"providerSettings":   map[string]any{"twilio": open{}, "swift": open{}, "vonage": open{}},
		"allowedNumberRegex": open{},
		"throttle":           map[string]any{"enabled": open{}, "max": open{}, "duration": open{}},
	},
	"subscription": map[string]any{
		"detectDuplicatedSubscription": open{}, "duplicatedSubscriptionNotification": open{},
		"confirmationRequest": open{}, "confirmationAcknowledgements": open{},
		"anonymousUnsubscription": open{}, "anonymousUndoUnsubscription": open{},
		"creationLimit": open{}, "confirmationRequestLimit": open{},
	},
	"notification": map[string]any{
		"broadcastSubscriberChunkSize": open{}, "guaranteedBroadcastPushDispatchProcessing": open{},
		"logSkippedBroadcastPushDispatches": open{}, "broadcastCustomFilterFunctions": open{},
	},
	"cron": map[string]any{
		"purgeData": open{}, "dispatchLiveNotifications": open{}, "checkRssConfigUpdates": open{},
		"deleteBounces": open{}, "reDispatchBroadcastPushNotifications": open{}, "clearRedisDatastore": open{},
	},
	"tls": map[string]any{
		"enabled": open{}, "clientCertificateEnabled": open{}, "key": open{}, "cert": open{}, "ca": open{},
	},
	"queue": map[string]any{"connection": open{}},
	// ours
	"outboundRequests": map[string]any{"allow": open{}, "allowPrivateNetworks": open{}},
	"oidc": map[string]any{
		"discoveryUrl": open{}, "clientId": open{}, "isAdmin": open{}, "isAuthorizedUser": open{}, "jwtVerifyOptions": open{},
	},
}

// lookup finds a dotted path in a tree; a numeric segment indexes an array
// ("queue.connection.sentinels.0.host").
func lookup(tree map[string]any, path string) (any, bool) {
	var cur any = tree
	for _, k := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func upgradeAdvice(from int) string {
	return fmt.Sprintf("run `govkit notify upgrade --from %d --to %d`", from, from+1)
}

// checkConfigKeys refuses renamed keys and warns about deprecated and
// unknown ones, for one config file.
func (l *loader) checkConfigKeys(f *layerFile) {
	handled := map[string]bool{}
	for _, r := range RenamedKeys {
		if _, ok := lookup(f.tree, r.Path); !ok {
			continue
		}
		msg := fmt.Sprintf("renamed before version 6: now %s", r.To)
		if r.Note != "" {
			msg += " (" + r.Note + ")"
		}
		l.problem(Problem{File: f.path, Path: r.Path, Message: msg + "; " + upgradeAdvice(r.From)})
		handled[r.Path] = true
	}
	for _, p := range sortedKeys(deprecatedKeys()) {
		if _, ok := lookup(f.tree, p); ok {
			l.warn(Problem{File: f.path, Path: p, Message: deprecated[p]})
			handled[p] = true
		}
	}
	for _, ch := range []string{"email", "sms"} {
		for _, k := range bottleneckKeys {
			p := ch + ".throttle." + k
			if _, ok := lookup(f.tree, p); ok {
				l.warn(Problem{File: f.path, Path: p, Message: "a throttle option of version 5 (Bottleneck) that version 6 dropped; ignored"})
				handled[p] = true
			}
		}
	}
	var unknown []string
	walkUnknown(f.tree, schema, "", handled, &unknown)
	sort.Strings(unknown)
	for _, p := range unknown {
		l.warn(Problem{File: f.path, Path: p, Message: "unknown key, ignored"})
	}
}

func walkUnknown(tree map[string]any, sch map[string]any, prefix string, handled map[string]bool, out *[]string) {
	for k, v := range tree {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if handled[p] {
			continue
		}
		s, known := sch[k]
		if !known {
			if !coveredBy(p, handled) {
				*out = append(*out, p)
			}
			continue
		}
		sub, isMap := s.(map[string]any)
		child, childIsMap := v.(map[string]any)
		if isMap && childIsMap {
			walkUnknown(child, sub, p, handled, out)
		}
	}
}

// coveredBy reports whether a handled key lies below p (a renamed key inside
// an unknown object is reported once, as renamed).
func coveredBy(p string, handled map[string]bool) bool {
	for h := range handled {
		if strings.HasPrefix(h, p+".") {
			return true
		}
	}
	return false
}

// knownMiddleware are the middleware the original ships and govkit
// implements natively.
var knownMiddleware = map[string]bool{"compression": true, "helmet": true, "morgan": true}

func (l *loader) checkMiddlewareKeys(f *layerFile) {
	keys := sortedKeys(f.tree)
	for _, k := range keys {
		switch k {
		case "all", "apiOnly":
			group, ok := f.tree[k].(map[string]any)
			if !ok {
				if f.tree[k] != nil {
					l.problem(Problem{File: f.path, Path: k, Message: "must be an object of middleware settings"})
				}
				continue
			}
			for _, name := range sortedKeys(group) {
				p := k + "." + name
				entry, ok := group[name].(map[string]any)
				if !ok {
					if group[name] != nil {
						l.problem(Problem{File: f.path, Path: p, Message: "must be an object {params, enabled}"})
					}
					continue
				}
				if !knownMiddleware[name] {
					l.warn(Problem{File: f.path, Path: p, Message: "govkit cannot load Node.js middleware; only compression, helmet and morgan are available; ignored"})
				}
				if params, ok := entry["params"]; ok && params != nil {
					if _, ok := params.([]any); !ok {
						l.problem(Problem{File: f.path, Path: p + ".params", Message: "must be an array"})
					}
				}
				if en, ok := entry["enabled"]; ok && en != nil {
					if _, ok := en.(bool); !ok {
						l.problem(Problem{File: f.path, Path: p + ".enabled", Message: "must be true or false"})
					}
				}
			}
		case "initial":
			l.problem(Problem{File: f.path, Path: k, Message: "a version 1 middleware phase: now all; " + upgradeAdvice(1)})
		case "routes:before":
			l.problem(Problem{File: f.path, Path: k, Message: "a version 1 middleware phase: now apiOnly; " + upgradeAdvice(1)})
		default:
			l.warn(Problem{File: f.path, Path: k, Message: "unknown key (middleware files hold all and apiOnly), ignored"})
		}
	}
}

// datasourceDriverOptions are the connection options of the original's
// datasource file (mongoose) that carry over to the MongoDB driver.
var datasourceDriverOptions = map[string]bool{
	"uri": true, "user": true, "pass": true, "dbName": true, "authSource": true, "replicaSet": true,
	"maxPoolSize": true, "minPoolSize": true, "serverSelectionTimeoutMS": true, "connectTimeoutMS": true,
	"socketTimeoutMS": true, "heartbeatFrequencyMS": true, "tls": true, "ssl": true, "tlsCAFile": true,
	"tlsCertificateKeyFile": true, "tlsAllowInvalidCertificates": true, "tlsAllowInvalidHostnames": true,
	"directConnection": true, "readPreference": true, "retryWrites": true, "retryReads": true,
	"appName": true, "compressors": true, "w": true, "wtimeoutMS": true, "journal": true,
	"maxIdleTimeMS": true, "localThresholdMS": true, "loadBalanced": true, "authMechanism": true,
	"authMechanismProperties": true, "family": true, "autoIndex": true, "autoCreate": true,
	"bufferCommands": true,
	// ours: see Datasource.APITimeout and FerretDBPostgresURI
	"apiTimeoutMS": true, "ferretdbPostgresUri": true,
}

func (l *loader) checkDatasourceKeys(f *layerFile) {
	for _, k := range sortedKeys(f.tree) {
		switch k {
		case "url":
			l.problem(Problem{File: f.path, Path: k, Message: "version 5 renamed it to uri (a MongoDB connection string); " + upgradeAdvice(4)})
		case "host", "port", "database":
			l.problem(Problem{File: f.path, Path: k, Message: "not supported since version 5: put the address and database in uri (mongodb://host:port/database); " + upgradeAdvice(4)})
		case "name", "connector":
			l.warn(Problem{File: f.path, Path: k, Message: "dropped in version 5 (there is only the MongoDB connector); ignored"})
		case "dbPath":
			l.warn(Problem{File: f.path, Path: k, Message: "the original's in-memory database directory; without uri govkit keeps its embedded store in the data directory (--data-dir); ignored"})
		default:
			if !datasourceDriverOptions[k] {
				l.warn(Problem{File: f.path, Path: k, Message: "unknown datasource option, ignored"})
			}
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
