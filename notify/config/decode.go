package config

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/notify/outbound"
)

// reader reads typed values out of a tree, collecting a problem for every
// value of the wrong type instead of stopping at the first.
type reader struct {
	tree     map[string]any
	problems []Problem
	origin   func(path string) string // file that set path; nil: unknown
}

func (r *reader) bad(path, msg string) {
	p := Problem{Path: path, Message: msg}
	if r.origin != nil {
		p.File = r.origin(path)
	}
	r.problems = append(r.problems, p)
}

func (r *reader) get(path string) (any, bool) {
	v, ok := lookup(r.tree, path)
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

// str accepts strings, and numbers and booleans as JavaScript would print
// them (an account key or phone number written as a number).
func (r *reader) str(path string) string {
	v, ok := r.get(path)
	if !ok {
		return ""
	}
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return formatNumber(t)
	case bool:
		return strconv.FormatBool(t)
	}
	r.bad(path, "must be a string")
	return ""
}

func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func (r *reader) boolean(path string) bool {
	v, ok := r.get(path)
	if !ok {
		return false
	}
	b, isBool := v.(bool)
	if !isBool {
		r.bad(path, "must be true or false")
	}
	return b
}

// boolDefault is boolean with the value used when the key is absent.
func (r *reader) boolDefault(path string, def bool) bool {
	if _, ok := r.get(path); !ok {
		return def
	}
	return r.boolean(path)
}

func (r *reader) number(path string) float64 {
	v, ok := r.get(path)
	if !ok {
		return 0
	}
	switch t := v.(type) {
	case float64:
		return t
	case string:
		// process.env values are strings; the original's code uses them
		// as numbers without complaint.
		if f, err := strconv.ParseFloat(strings.TrimSpace(t), 64); err == nil {
			return f
		}
	}
	r.bad(path, "must be a number")
	return 0
}

func (r *reader) integer(path string) int {
	v, ok := r.get(path)
	if !ok {
		return 0
	}
	var f float64
	switch t := v.(type) {
	case float64:
		f = t
	case string:
		n, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil {
			r.bad(path, "must be a whole number")
			return 0
		}
		f = n
	default:
		r.bad(path, "must be a whole number")
		return 0
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		r.bad(path, "must be a whole number")
		return 0
	}
	return int(f)
}

func (r *reader) millis(path string) time.Duration {
	return time.Duration(r.number(path) * float64(time.Millisecond))
}

func (r *reader) strings(path string) []string {
	v, ok := r.get(path)
	if !ok {
		return nil
	}
	arr, isArr := v.([]any)
	if !isArr {
		r.bad(path, "must be an array of strings")
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, isStr := e.(string)
		if !isStr {
			r.bad(path+"["+strconv.Itoa(i)+"]", "must be a string")
			continue
		}
		out = append(out, s)
	}
	return out
}

func (r *reader) object(path string) map[string]any {
	v, ok := r.get(path)
	if !ok {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		r.bad(path, "must be an object")
		return nil
	}
	return m
}

func (r *reader) fn(path string) Func {
	v, ok := r.get(path)
	if !ok {
		return nil
	}
	f, isFn := v.(Func)
	if !isFn {
		r.bad(path, "must be a function (in a .js or .ts config file)")
		return nil
	}
	return f
}

// origin finds the last file that set path (or a parent of it).
func (l *loader) origin(path string) string {
	for i := len(l.files) - 1; i >= 0; i-- {
		f := l.files[i]
		if f.kind != kindConfig || f.tree == nil {
			continue
		}
		p := path
		for {
			if _, ok := lookup(f.tree, p); ok {
				return f.path
			}
			j := strings.LastIndexByte(p, '.')
			if j < 0 {
				break
			}
			p = p[:j]
		}
	}
	return ""
}

// decode fills the typed view from the merged trees.
func (l *loader) decode(c *Config) {
	r := &reader{tree: c.tree, origin: l.origin}
	c.RestAPIRoot = r.str("restApiRoot")
	// The original listens on port ?? 3000 and host ?? '0.0.0.0', so a null
	// in a config file means the default, not port 0.
	c.Host = r.str("host")
	if _, ok := r.get("host"); !ok {
		c.Host = "0.0.0.0"
	}
	c.Port = r.integer("port")
	if _, ok := r.get("port"); !ok {
		c.Port = 3000
	}
	if c.Port < 0 || c.Port > 65535 {
		r.bad("port", "must be between 0 and 65535")
	}
	if _, ok := r.get("adminIps"); ok {
		c.AdminIPs = r.strings("adminIps")
	} else {
		c.AdminIPs = r.strings("defaultAdminIps")
	}
	c.SiteMinderReverseProxyIPs = r.strings("siteMinderReverseProxyIps")
	c.TrustedReverseProxyIPs = r.strings("trustedReverseProxyIps")
	c.HTTPHost = r.str("httpHost")
	c.InternalHTTPHost = r.str("internalHttpHost")
	c.LoggingLevels = r.strings("loggingLevels")

	if r.object("email.smtp") != nil {
		s := &SMTP{
			Host:              r.str("email.smtp.host"),
			Port:              r.integer("email.smtp.port"),
			Secure:            r.boolean("email.smtp.secure"),
			IgnoreTLS:         r.boolean("email.smtp.ignoreTLS"),
			RequireTLS:        r.boolean("email.smtp.requireTLS"),
			Name:              r.str("email.smtp.name"),
			Pool:              r.boolean("email.smtp.pool"),
			MaxConnections:    r.integer("email.smtp.maxConnections"),
			MaxMessages:       r.integer("email.smtp.maxMessages"),
			ConnectionTimeout: r.millis("email.smtp.connectionTimeout"),
			GreetingTimeout:   r.millis("email.smtp.greetingTimeout"),
			SocketTimeout:     r.millis("email.smtp.socketTimeout"),
			TLS:               r.object("email.smtp.tls"),
			Raw:               r.object("email.smtp"),
		}
		s.Auth.User = r.str("email.smtp.auth.user")
		s.Auth.Pass = r.str("email.smtp.auth.pass")
		c.Email.SMTP = s
	}
	in := &c.Email.InboundSMTPServer
	in.Enabled = r.boolean("email.inboundSmtpServer.enabled")
	in.Domain = r.str("email.inboundSmtpServer.domain")
	for _, d := range strings.Split(in.Domain, ",") {
		if d = strings.TrimSpace(d); d != "" {
			in.Domains = append(in.Domains, d)
		}
	}
	in.ListeningSMTPPort = r.integer("email.inboundSmtpServer.listeningSmtpPort")
	in.Options = r.object("email.inboundSmtpServer.options")
	b := &c.Email.Bounce
	b.Enabled = r.boolean("email.bounce.enabled")
	b.UnsubThreshold = r.integer("email.bounce.unsubThreshold")
	b.SubjectRegex = r.str("email.bounce.subjectRegex")
	b.SMTPStatusCodeRegex = r.str("email.bounce.smtpStatusCodeRegex")
	b.FailedRecipientRegex = r.str("email.bounce.failedRecipientRegex")
	c.Email.ListUnsubscribeByEmail.Enabled = r.boolean("email.listUnsubscribeByEmail.enabled")
	c.Email.Throttle = r.throttle("email.throttle")

	c.SMS.Provider = r.str("sms.provider")
	switch c.SMS.Provider {
	case "twilio", "swift", "vonage":
	default:
		r.bad("sms.provider", "must be twilio, swift or vonage")
	}
	ps := &c.SMS.ProviderSettings
	ps.Twilio.AccountSid = r.str("sms.providerSettings.twilio.accountSid")
	ps.Twilio.AuthToken = r.str("sms.providerSettings.twilio.authToken")
	ps.Twilio.FromNumber = r.str("sms.providerSettings.twilio.fromNumber")
	ps.Swift.APIURLPrefix = r.str("sms.providerSettings.swift.apiUrlPrefix")
	ps.Swift.AccountKey = r.str("sms.providerSettings.swift.accountKey")
	ps.Swift.NotifyBCSwiftKey = r.str("sms.providerSettings.swift.notifyBCSwiftKey")
	ps.Vonage.From = r.str("sms.providerSettings.vonage.from")
	ps.Vonage.APIKey = r.str("sms.providerSettings.vonage.apiKey")
	ps.Vonage.APISecret = r.str("sms.providerSettings.vonage.apiSecret")
	c.SMS.Throttle = r.throttle("sms.throttle")

	c.Subscription = r.subscription("subscription")
	c.Guard = r.guard()

	n := &c.Notification
	n.BroadcastSubscriberChunkSize = r.integer("notification.broadcastSubscriberChunkSize")
	if n.BroadcastSubscriberChunkSize < 1 {
		r.bad("notification.broadcastSubscriberChunkSize", "must be at least 1")
	}
	n.GuaranteedBroadcastPushDispatchProcessing = r.boolean("notification.guaranteedBroadcastPushDispatchProcessing")
	n.LogSkippedBroadcastPushDispatches = r.boolean("notification.logSkippedBroadcastPushDispatches")
	if fns := r.object("notification.broadcastCustomFilterFunctions"); fns != nil {
		n.BroadcastCustomFilterFunctions = map[string]FilterFunction{}
		for _, name := range sortedKeys(fns) {
			p := "notification.broadcastCustomFilterFunctions." + name
			if r.object(p) == nil {
				continue
			}
			ff := FilterFunction{Func: r.fn(p + "._func")}
			if ff.Func == nil {
				if _, ok := r.get(p + "._func"); !ok {
					r.bad(p+"._func", "missing: a custom filter function needs _func")
				}
				continue
			}
			if sig, ok := r.get(p + "._signature"); ok {
				arr, isArr := sig.([]any)
				if !isArr {
					r.bad(p+"._signature", "must be an array")
				}
				for i := range arr {
					sp := p + "._signature." + strconv.Itoa(i)
					var a ArgSignature
					a.Types = r.typesAt(arr[i], sp)
					if m, ok := arr[i].(map[string]any); ok {
						a.Optional, _ = m["optional"].(bool)
						a.Variadic, _ = m["variadic"].(bool)
					}
					ff.Signature = append(ff.Signature, a)
				}
			}
			n.BroadcastCustomFilterFunctions[name] = ff
		}
	}

	cr := &c.Cron
	pd := &cr.PurgeData
	pd.TimeSpec = r.timeSpec("cron.purgeData.timeSpec")
	pd.DefaultRetentionDays = r.span("cron.purgeData.defaultRetentionDays", r.number("cron.purgeData.defaultRetentionDays"))
	days := func(key string) float64 {
		if _, ok := r.get("cron.purgeData." + key); !ok {
			return pd.DefaultRetentionDays
		}
		return r.span("cron.purgeData."+key, r.number("cron.purgeData."+key))
	}
	pd.PushNotificationRetentionDays = days("pushNotificationRetentionDays")
	pd.ExpiredInAppNotificationRetentionDays = days("expiredInAppNotificationRetentionDays")
	pd.NonConfirmedSubscriptionRetentionDays = days("nonConfirmedSubscriptionRetentionDays")
	pd.DeletedBounceRetentionDays = days("deletedBounceRetentionDays")
	pd.ExpiredAccessTokenRetentionDays = days("expiredAccessTokenRetentionDays")
	cr.DispatchLiveNotifications.TimeSpec = r.timeSpec("cron.dispatchLiveNotifications.timeSpec")
	cr.CheckRssConfigUpdates.TimeSpec = r.timeSpec("cron.checkRssConfigUpdates.timeSpec")
	cr.DeleteBounces.TimeSpec = r.timeSpec("cron.deleteBounces.timeSpec")
	cr.DeleteBounces.MinLapsedHoursSinceLatestNotificationEnded = r.span("cron.deleteBounces.minLapsedHoursSinceLatestNotificationEnded", r.number("cron.deleteBounces.minLapsedHoursSinceLatestNotificationEnded"))
	cr.ReDispatchBroadcastPushNotifications.TimeSpec = r.timeSpec("cron.reDispatchBroadcastPushNotifications.timeSpec")
	cr.ClearRedisDatastore.TimeSpec = r.str("cron.clearRedisDatastore.timeSpec")

	if conn := r.object("queue.connection"); conn != nil {
		q := &QueueConnection{
			Host:             r.str("queue.connection.host"),
			Port:             r.integer("queue.connection.port"),
			Username:         r.str("queue.connection.username"),
			Password:         r.str("queue.connection.password"),
			DB:               r.integer("queue.connection.db"),
			Name:             r.str("queue.connection.name"),
			SentinelPassword: r.str("queue.connection.sentinelPassword"),
			Raw:              conn,
		}
		if q.Host == "" {
			q.Host = "127.0.0.1"
		}
		if q.Port == 0 {
			q.Port = 6379
		}
		if t, ok := r.get("queue.connection.tls"); ok {
			if b, isBool := t.(bool); !isBool || b {
				q.TLS = true
			}
		}
		if s, ok := r.get("queue.connection.sentinels"); ok {
			arr, isArr := s.([]any)
			if !isArr {
				r.bad("queue.connection.sentinels", "must be an array of {host, port}")
			}
			for i := range arr {
				p := "queue.connection.sentinels." + strconv.Itoa(i)
				hp := HostPort{Host: r.str(p + ".host"), Port: r.integer(p + ".port")}
				if hp.Port == 0 {
					hp.Port = 26379
				}
				q.Sentinels = append(q.Sentinels, hp)
			}
		}
		c.Queue.Connection = q
	}

	if r.object("oidc") != nil {
		c.OIDC = &OIDC{
			DiscoveryURL:     r.str("oidc.discoveryUrl"),
			ClientID:         r.str("oidc.clientId"),
			IsAdmin:          r.fn("oidc.isAdmin"),
			IsAuthorizedUser: r.fn("oidc.isAuthorizedUser"),
			JWTVerifyOptions: r.object("oidc.jwtVerifyOptions"),
		}
	}

	c.OutboundRequests.Allow = r.strings("outboundRequests.allow")
	for i, e := range c.OutboundRequests.Allow {
		if _, _, err := outbound.ParseAllow([]string{e}); err != nil {
			r.bad("outboundRequests.allow."+strconv.Itoa(i), "must be a network in CIDR form, an IP address or a host name")
		}
	}
	c.OutboundRequests.AllowPrivateNetworks = r.boolDefault("outboundRequests.allowPrivateNetworks", true)

	c.TLS.Enabled = r.boolean("tls.enabled")
	c.TLS.ClientCertificateEnabled = r.boolean("tls.clientCertificateEnabled")
	c.TLS.Key = []byte(r.str("tls.key"))
	c.TLS.Cert = []byte(r.str("tls.cert"))
	c.TLS.CA = []byte(r.str("tls.ca"))
	if c.TLS.Enabled && (len(c.TLS.Key) == 0 || len(c.TLS.Cert) == 0) {
		r.bad("tls.enabled", "TLS needs tls.key and tls.cert (or server/certs/key.pem and cert.pem)")
	}

	mr := &reader{tree: c.middlewareTree}
	c.Middleware.All = mr.middleware("all")
	c.Middleware.APIOnly = mr.middleware("apiOnly")
	r.problems = append(r.problems, mr.problems...)

	dr := &reader{tree: c.datasourceTree}
	c.Datasource.URI = dr.str("uri")
	c.Datasource.APITimeout = DefaultAPITimeout
	if _, ok := dr.get("apiTimeoutMS"); ok {
		c.Datasource.APITimeout = dr.millis("apiTimeoutMS")
		if c.Datasource.APITimeout < 100*time.Millisecond || c.Datasource.APITimeout > 10*time.Minute {
			dr.bad("apiTimeoutMS", "must be between 100 and 600000 (milliseconds)")
			c.Datasource.APITimeout = DefaultAPITimeout
		}
	}
	c.Datasource.FerretDBPostgresURI = dr.str("ferretdbPostgresUri")
	if u := c.Datasource.FerretDBPostgresURI; u != "" {
		// the value is never quoted back: it may hold a password
		if p, err := url.Parse(u); err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") || p.Host == "" {
			dr.bad("ferretdbPostgresUri", "must be a postgres:// URL (the PostgreSQL database FerretDB keeps its data in)")
			c.Datasource.FerretDBPostgresURI = ""
		}
	}
	c.Datasource.Options = map[string]any{}
	for k, v := range c.datasourceTree {
		if k != "uri" && k != "name" && k != "connector" && k != "dbPath" && k != "apiTimeoutMS" && k != "ferretdbPostgresUri" {
			c.Datasource.Options[k] = v
		}
	}
	r.problems = append(r.problems, dr.problems...)

	l.problems = append(l.problems, r.problems...)
}

func (r *reader) throttle(p string) Throttle {
	t := Throttle{
		Enabled:  r.boolean(p + ".enabled"),
		Max:      r.integer(p + ".max"),
		Duration: r.integer(p + ".duration"),
	}
	if t.Enabled && (t.Max < 1 || t.Duration < 1) {
		r.bad(p, "an enabled throttle needs max and duration of at least 1")
	}
	return t
}

// jmespathTypes are the type names of the original's JMESPath library, in
// the order of their numeric codes.
var jmespathTypes = []string{"number", "any", "string", "array", "object", "boolean", "expref", "null", "array[number]", "array[string]"}

// typesAt reads {types: [...]} of a _signature entry: numeric codes as the
// original writes them, or their names.
func (r *reader) typesAt(v any, path string) []int {
	m, ok := v.(map[string]any)
	if !ok {
		r.bad(path, "must be an object {types: [...]}")
		return nil
	}
	arr, ok := m["types"].([]any)
	if !ok || len(arr) == 0 {
		r.bad(path+".types", "must be a non-empty array of type codes")
		return nil
	}
	out := make([]int, 0, len(arr))
	for _, e := range arr {
		switch t := e.(type) {
		case float64:
			if t == math.Trunc(t) && t >= 0 && int(t) < len(jmespathTypes) {
				out = append(out, int(t))
				continue
			}
		case string:
			found := false
			for code, name := range jmespathTypes {
				if name == t {
					out = append(out, code)
					found = true
				}
			}
			if found {
				continue
			}
		}
		r.bad(path+".types", "must hold type codes 0-9 (or their names)")
		return nil
	}
	return out
}

func (r *reader) middleware(group string) map[string]MiddlewareEntry {
	m, _ := r.tree[group].(map[string]any)
	out := map[string]MiddlewareEntry{}
	for _, name := range sortedKeys(m) {
		e, ok := m[name].(map[string]any)
		if !ok {
			continue
		}
		en, isBool := e["enabled"].(bool)
		params, _ := e["params"].([]any)
		out[name] = MiddlewareEntry{Enabled: !isBool || en, Params: params}
	}
	return out
}
