// Package mailmerge fills the {token} placeholders of notification and
// subscription message templates (subject, text body, HTML body, SMS text),
// as version 6 of the original notification service documents them.
//
// # Tokens
//
// Static tokens are matched case-insensitively; each older alias is accepted
// too:
//
//	{subscription_confirmation_code}  alias {confirmation_code}
//	{service_name}                    alias {serviceName}
//	{http_host}
//	{rest_api_root}                   alias {restApiRoot}
//	{subscription_id}                 alias {subscriptionId}
//	{unsubscription_code}             alias {unsubscriptionCode}
//	{unsubscription_url}              {http_host}{rest_api_root}/subscriptions/{id}/unsubscribe?unsubscriptionCode={code}
//	{unsubscription_all_url}          the same plus &additionalServices=_all
//	{subscription_confirmation_url}   …/subscriptions/{id}/verify?confirmationCode={code}
//	{unsubscription_reversion_url}    …/subscriptions/{id}/unsubscribe/undo?unsubscriptionCode={code}
//	{unsubscription_service_names}    "service a" or "services a, b and c"
//
// Every other {…} is a dynamic token: {notification::path} reads the
// notification's data, {subscription::path} the subscription's data, and an
// unqualified {path} reads the notification's data and, when the path is not
// there, the subscription's. Paths use the lodash "get" syntax the original
// documents: a.b, a[0].b, a["key.with.dots"], and length of an array.
//
// A backslash before both braces (\{not a token\}) keeps the text literal and
// is removed from the output.
//
// # Where we differ from the original, on purpose
//
//   - A dynamic value that exists is merged even when it is 0, false or the
//     empty string; null merges as the empty string. The original leaves
//     every falsy value as a token, so "You have {count} messages" showed the
//     raw token for zero.
//   - A token whose path does not exist stays exactly as written, and so does
//     a static token whose value is unknown (no subscription id, no code, no
//     host): the original writes the word "undefined" into the message.
//     {rest_api_root} is the exception: an empty root is a real value.
//   - The unqualified {path} falls back to the subscription's data when the
//     notification's data lacks the path, as the documentation says; the
//     6.4.1 code never looks at the subscription once the notification has
//     any data.
//   - {http_host} is whatever Input.HTTPHost says, port included; the caller
//     resolves it once (ResolveHTTPHost) for every message. The original drops
//     the port in confirmation and acknowledgement mail.
//   - Objects and arrays merge as JSON, numbers as JavaScript prints them,
//     times as RFC 3339 UTC with milliseconds.
//   - Merged values are never scanned again for tokens, so data cannot inject
//     tokens; the id and codes are URL-escaped inside the generated URLs.
//   - A brace that does not start a resolvable token does not hide the token
//     after it: "{a {service_name}" merges the service name.
package mailmerge

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Input is everything a template may refer to. Data fields hold decoded JSON
// documents: map[string]any, []any and scalars (bson.M, bson.D, bson.A and
// other maps with string keys and slices work too). Zero-valued strings mean
// "unknown": their tokens stay in the output as written.
type Input struct {
	// ServiceName is the subscription's serviceName.
	ServiceName string
	// SubscriptionID is the subscription's id (ObjectId hex).
	SubscriptionID string
	// ConfirmationCode is subscription.confirmationRequest.confirmationCode.
	ConfirmationCode string
	// UnsubscriptionCode is subscription.unsubscriptionCode.
	UnsubscriptionCode string
	// UnsubscribedServiceNames is
	// subscription.unsubscribedAdditionalServices.names.
	UnsubscribedServiceNames []string
	// HTTPHost is scheme://host[:port] of the public API (see ResolveHTTPHost).
	HTTPHost string
	// RestAPIRoot is the configured restApiRoot, e.g. "/api".
	RestAPIRoot string
	// NotificationData is notification.data.
	NotificationData any
	// SubscriptionData is subscription.data.
	SubscriptionData any
	// IgnoreSubscriptionData leaves every token that would read the
	// subscription's data untouched. Set it for the confirmation request and
	// the duplicated-subscription message: an unconfirmed subscriber must not
	// be able to make the service mail text of their choosing to someone else
	// (v5 rule).
	IgnoreSubscriptionData bool
}

// HostSources are the places {http_host} may come from.
type HostSources struct {
	Notification string // notification.httpHost
	Config       string // config httpHost
	Instance     string // httpHost of the record being written by the request
	Request      string // scheme://host:port of the request that triggers the message
	Subscription string // subscription.httpHost
}

// ResolveHTTPHost picks {http_host} in the original's order of precedence:
// notification, config, the written record, the request, the subscription.
// Unlike the original, the request's value keeps its port, so links in
// confirmation and acknowledgement mail work on non-default ports.
func ResolveHTTPHost(s HostSources) string {
	for _, h := range []string{s.Notification, s.Config, s.Instance, s.Request, s.Subscription} {
		if h != "" {
			return h
		}
	}
	return ""
}

// static token identifiers.
const (
	tokNone = iota
	tokConfirmationCode
	tokServiceName
	tokServiceNames
	tokHTTPHost
	tokRestAPIRoot
	tokSubscriptionID
	tokUnsubscriptionCode
	tokUnsubscriptionURL
	tokUnsubscriptionAllURL
	tokConfirmationURL
	tokReversionURL
)

var staticTokens = []struct {
	name string
	id   int
}{
	{"subscription_confirmation_code", tokConfirmationCode},
	{"confirmation_code", tokConfirmationCode},
	{"service_name", tokServiceName},
	{"serviceName", tokServiceName},
	{"unsubscription_service_names", tokServiceNames},
	{"http_host", tokHTTPHost},
	{"rest_api_root", tokRestAPIRoot},
	{"restApiRoot", tokRestAPIRoot},
	{"subscription_id", tokSubscriptionID},
	{"subscriptionId", tokSubscriptionID},
	{"unsubscription_code", tokUnsubscriptionCode},
	{"unsubscriptionCode", tokUnsubscriptionCode},
	{"unsubscription_url", tokUnsubscriptionURL},
	{"unsubscription_all_url", tokUnsubscriptionAllURL},
	{"subscription_confirmation_url", tokConfirmationURL},
	{"unsubscription_reversion_url", tokReversionURL},
}

func staticToken(name string) int {
	for _, t := range staticTokens {
		if len(t.name) == len(name) && strings.EqualFold(t.name, name) {
			return t.id
		}
	}
	return tokNone
}

// Merge returns tmpl with its tokens replaced from in.
func Merge(tmpl string, in *Input) string {
	if in == nil {
		in = &Input{}
	}
	open := strings.IndexByte(tmpl, '{')
	if open < 0 {
		return tmpl
	}
	var b strings.Builder
	b.Grow(len(tmpl) + len(tmpl)/4)
	b.WriteString(tmpl[:open])
	i := open
	for i < len(tmpl) {
		c := tmpl[i]
		if c != '{' || (i > 0 && tmpl[i-1] == '\\') {
			// Copy up to the next brace in one go.
			next := strings.IndexByte(tmpl[i+1:], '{')
			if next < 0 {
				b.WriteString(tmpl[i:])
				break
			}
			b.WriteString(tmpl[i : i+1+next])
			i += 1 + next
			continue
		}
		end := tokenEnd(tmpl, i)
		if end < 0 {
			// No brace closes this one on its line, so none closes a
			// later one there either: copy the rest of the line, rather
			// than search it again from every brace (a line of braces
			// would cost its length squared).
			eol := strings.IndexAny(tmpl[i:], "\r\n")
			if eol < 0 {
				b.WriteString(tmpl[i:])
				break
			}
			b.WriteString(tmpl[i : i+eol])
			i += eol
			continue
		}
		if in.write(&b, tmpl[i+1:end]) {
			i = end + 1
			continue
		}
		b.WriteByte('{')
		i++
	}
	out := b.String()
	if strings.Contains(out, `\{`) {
		out = unescape(out)
	}
	return out
}

// tokenEnd finds the closing brace of a token opened at s[open]: the first
// '}' that is not escaped, at least one character later, on the same line.
func tokenEnd(s string, open int) int {
	for j := open + 1; j < len(s); j++ {
		switch s[j] {
		case '}':
			if j > open+1 && s[j-1] != '\\' {
				return j
			}
		case '\n', '\r':
			return -1
		}
	}
	return -1
}

// unescape turns \{text\} into {text}; the pair must be on one line.
func unescape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, `\{`)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := -1
		for k := i + 3; k+1 < len(s); k++ {
			if s[k] == '\n' || s[k] == '\r' {
				break
			}
			if s[k] == '\\' && s[k+1] == '}' {
				j = k
				break
			}
		}
		if j < 0 {
			b.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteByte('{')
		b.WriteString(s[i+2 : j])
		b.WriteByte('}')
		s = s[j+2:]
	}
}

// write merges the token named name into b and reports whether it did.
func (in *Input) write(b *strings.Builder, name string) bool {
	if id := staticToken(name); id != tokNone {
		return in.writeStatic(b, id)
	}
	var v any
	var ok bool
	switch {
	case strings.HasPrefix(name, "subscription::"):
		if in.IgnoreSubscriptionData {
			return false
		}
		v, ok = lookup(in.SubscriptionData, name[len("subscription::"):])
	case strings.HasPrefix(name, "notification::"):
		v, ok = lookup(in.NotificationData, name[len("notification::"):])
	default:
		v, ok = lookup(in.NotificationData, name)
		if !ok && !in.IgnoreSubscriptionData {
			v, ok = lookup(in.SubscriptionData, name)
		}
	}
	if !ok {
		return false
	}
	writeValue(b, v)
	return true
}

func (in *Input) writeStatic(b *strings.Builder, id int) bool {
	switch id {
	case tokConfirmationCode:
		return writeIf(b, in.ConfirmationCode)
	case tokServiceName:
		return writeIf(b, in.ServiceName)
	case tokServiceNames:
		return in.writeServiceNames(b)
	case tokHTTPHost:
		return writeIf(b, in.HTTPHost)
	case tokRestAPIRoot:
		b.WriteString(in.RestAPIRoot)
		return true
	case tokSubscriptionID:
		return writeIf(b, in.SubscriptionID)
	case tokUnsubscriptionCode:
		return writeIf(b, in.UnsubscriptionCode)
	case tokUnsubscriptionURL, tokUnsubscriptionAllURL, tokReversionURL:
		if in.HTTPHost == "" || in.SubscriptionID == "" {
			return false
		}
		in.writeSubscriptionURL(b)
		switch id {
		case tokUnsubscriptionURL, tokUnsubscriptionAllURL:
			b.WriteString("/unsubscribe")
		default:
			b.WriteString("/unsubscribe/undo")
		}
		// A subscription without a code may be unsubscribed without one, so
		// the link simply leaves the parameter out.
		sep := byte('?')
		if in.UnsubscriptionCode != "" {
			b.WriteString("?unsubscriptionCode=")
			b.WriteString(url.QueryEscape(in.UnsubscriptionCode))
			sep = '&'
		}
		if id == tokUnsubscriptionAllURL {
			b.WriteByte(sep)
			b.WriteString("additionalServices=_all")
		}
		return true
	case tokConfirmationURL:
		if in.HTTPHost == "" || in.SubscriptionID == "" || in.ConfirmationCode == "" {
			return false
		}
		in.writeSubscriptionURL(b)
		b.WriteString("/verify?confirmationCode=")
		b.WriteString(url.QueryEscape(in.ConfirmationCode))
		return true
	}
	return false
}

func (in *Input) writeSubscriptionURL(b *strings.Builder) {
	b.WriteString(in.HTTPHost)
	b.WriteString(in.RestAPIRoot)
	b.WriteString("/subscriptions/")
	b.WriteString(url.PathEscape(in.SubscriptionID))
}

func writeIf(b *strings.Builder, s string) bool {
	if s == "" {
		return false
	}
	b.WriteString(s)
	return true
}

// writeServiceNames writes "service a" or "services a, b and c": this
// subscription's service first, then the others unsubscribed with it, each
// once.
func (in *Input) writeServiceNames(b *strings.Builder) bool {
	names := make([]string, 0, 1+len(in.UnsubscribedServiceNames))
	seen := func(n string) bool {
		for _, m := range names {
			if m == n {
				return true
			}
		}
		return false
	}
	for _, n := range append([]string{in.ServiceName}, in.UnsubscribedServiceNames...) {
		if n != "" && !seen(n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return false
	}
	if len(names) == 1 {
		b.WriteString("service ")
		b.WriteString(names[0])
		return true
	}
	b.WriteString("services ")
	for k, n := range names {
		switch {
		case k == 0:
		case k == len(names)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return true
}

// lookup resolves a lodash-style path in data. A key equal to the whole path
// wins, as lodash's get does, so {a.b} finds a field literally named "a.b".
func lookup(data any, path string) (any, bool) {
	if data == nil || path == "" {
		return nil, false
	}
	if v, ok := child(data, path); ok {
		return v, true
	}
	cur := data
	p := path
	for {
		var seg string
		if p[0] == '[' {
			var ok bool
			if seg, p, ok = bracket(p); !ok {
				return nil, false
			}
		} else if k := strings.IndexAny(p, ".["); k < 0 {
			seg, p = p, ""
		} else {
			seg, p = p[:k], p[k:]
		}
		v, ok := child(cur, seg)
		if !ok {
			return nil, false
		}
		cur = v
		if p == "" {
			return cur, true
		}
		if p[0] == '.' {
			p = p[1:]
			if p == "" {
				// "a." names the empty key under a, as in lodash.
				return child(cur, "")
			}
		}
	}
}

// bracket reads [123], ["key"], ['key'] or [key] at the start of p.
func bracket(p string) (seg, rest string, ok bool) {
	if len(p) >= 2 && (p[1] == '"' || p[1] == '\'') {
		q := p[1]
		var sb strings.Builder
		for k := 2; k < len(p); k++ {
			switch p[k] {
			case '\\':
				if k+1 < len(p) {
					k++
					sb.WriteByte(p[k])
				}
			case q:
				if k+1 < len(p) && p[k+1] == ']' {
					return sb.String(), p[k+2:], true
				}
				return "", "", false
			default:
				sb.WriteByte(p[k])
			}
		}
		return "", "", false
	}
	k := strings.IndexByte(p, ']')
	if k < 0 {
		return "", "", false
	}
	return p[1:k], p[k+1:], true
}

// child returns the member key of v: a field of a document or an element
// (or the length) of an array.
func child(v any, key string) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		c, ok := t[key]
		return c, ok
	case bson.M:
		c, ok := t[key]
		return c, ok
	case bson.D:
		for _, e := range t {
			if e.Key == key {
				return e.Value, true
			}
		}
		return nil, false
	case []any:
		return index(len(t), key, func(i int) any { return t[i] })
	case bson.A:
		return index(len(t), key, func(i int) any { return t[i] })
	case nil, string, float64, bool, int, int32, int64:
		return nil, false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, false
		}
		c := rv.MapIndex(reflect.ValueOf(key).Convert(rv.Type().Key()))
		if !c.IsValid() {
			return nil, false
		}
		return c.Interface(), true
	case reflect.Slice, reflect.Array:
		return index(rv.Len(), key, func(i int) any { return rv.Index(i).Interface() })
	}
	return nil, false
}

func index(n int, key string, at func(int) any) (any, bool) {
	if key == "length" {
		return float64(n), true
	}
	i, err := strconv.Atoi(key)
	if err != nil || i < 0 || i >= n || strconv.Itoa(i) != key {
		return nil, false
	}
	return at(i), true
}

// writeValue prints a merged value the way a reader of the message expects.
func writeValue(b *strings.Builder, v any) {
	switch t := v.(type) {
	case nil:
	case string:
		b.WriteString(t)
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case float64:
		b.WriteString(FormatNumber(t))
	case float32:
		b.WriteString(FormatNumber(float64(t)))
	case int:
		b.WriteString(strconv.Itoa(t))
	case int32:
		b.WriteString(strconv.FormatInt(int64(t), 10))
	case int64:
		b.WriteString(strconv.FormatInt(t, 10))
	case json.Number:
		b.WriteString(t.String())
	case time.Time:
		b.WriteString(t.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	case bson.DateTime:
		b.WriteString(t.Time().UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	case bson.ObjectID:
		b.WriteString(t.Hex())
	default:
		// Text, not HTML: keep <, > and & as they are.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(plain(v)); err != nil {
			return
		}
		b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
}

// plain turns BSON documents into values encoding/json prints as JSON
// objects and arrays.
func plain(v any) any {
	switch t := v.(type) {
	case bson.D:
		m := make(map[string]any, len(t))
		for _, e := range t {
			m[e.Key] = plain(e.Value)
		}
		return m
	case bson.M:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = plain(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = plain(e)
		}
		return m
	case bson.A:
		return plain([]any(t))
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	case bson.DateTime:
		return t.Time().UTC().Format("2006-01-02T15:04:05.000Z07:00")
	case time.Time:
		return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	case bson.ObjectID:
		return t.Hex()
	}
	return v
}

// FormatNumber prints f as JavaScript's String(number) does, so numbers in
// merged text read the same as with the original service: 3 not 3.0, 0.1 not
// 0.1000000000000000055, 1e+21 for huge values.
func FormatNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0"
	}
	a := math.Abs(f)
	if a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	// Go writes e-07 and e+21; JavaScript writes e-7 and e+21.
	if k := strings.IndexByte(s, 'e'); k >= 0 && k+2 < len(s) {
		mant, sign, exp := s[:k], s[k+1], strings.TrimLeft(s[k+2:], "0")
		if exp == "" {
			exp = "0"
		}
		s = mant + "e" + string(sign) + exp
	}
	return s
}
