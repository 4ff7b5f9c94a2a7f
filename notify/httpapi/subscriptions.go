package httpapi

import (
	"errors"
	"math"
	"mime"
	"net/http"
	"sort"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
	"net/url"
	"strings"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/query"
	"github.com/govkit/govkit/notify/subscription"
)

func init() { routeGroups = append(routeGroups, (*Server).subscriptionRoutes) }

var (
	unsubCodeParam   = param{name: "unsubscriptionCode", in: "query", desc: "unsubscription code, required from anonymous callers when the subscription has one"}
	userChannelParam = param{name: "userChannelId", in: "query", desc: "optional; when given it must match the subscription's address"}
	addlParam        = param{name: "additionalServices", in: "query", array: true, desc: "more services to unsubscribe the address from (repeat the parameter); the single value _all means every service"}
)

func (s *Server) subscriptionRoutes() {
	const tag = "subscription"
	s.handle(route{method: "GET", path: "/subscriptions/count", roles: signedIn, tag: tag, summary: "count subscriptions", params: []param{whereParam}, response: "count", h: s.countSubscriptions})
	s.handle(route{method: "GET", path: "/subscriptions/services", roles: signedIn, tag: tag, summary: "unique list of subscribed service names", response: "strings", h: s.subscribedServices})
	s.handle(route{method: "POST", path: "/subscriptions/swift", tag: tag, summary: "handle unsubscription from Swift keyword redirect", body: "SwiftReply", forms: true, response: "text", h: s.swift})
	s.handle(route{method: "GET", path: "/subscriptions/{id}/unsubscribe/undo", tag: tag, summary: "revert anonymous unsubscription by id", params: []param{unsubCodeParam}, response: "text", h: s.undoUnsubscribe})
	s.handle(route{method: "GET", path: "/subscriptions/{id}/unsubscribe", tag: tag, summary: "unsubscribe by id", params: []param{unsubCodeParam, userChannelParam, addlParam}, response: "text", h: s.unsubscribe})
	s.handle(route{method: "POST", path: "/subscriptions/{id}/unsubscribe", tag: tag, summary: "one-click unsubscribe (RFC 8058 List-Unsubscribe-Post)", params: []param{unsubCodeParam, userChannelParam, addlParam}, response: "text", h: s.unsubscribe})
	s.handle(route{method: "GET", path: "/subscriptions/{id}/verify", tag: tag, summary: "verify confirmation code", params: []param{
		{name: "confirmationCode", in: "query", required: true, desc: "confirmation code"},
		{name: "replace", in: "query", desc: "true deletes other confirmed subscriptions of the same address to the service"},
	}, response: "text", h: s.verify})
	s.handle(route{method: "PUT", path: "/subscriptions/{id}", roles: adminsOnly, tag: tag, summary: "replace a subscription", body: "Subscription", response: "Subscription", h: s.replaceSubscription})
	s.handle(route{method: "PATCH", path: "/subscriptions/{id}", roles: signedIn, tag: tag, summary: "update a subscription (userChannelId and data)", body: "Subscription", response: "Subscription", h: s.updateSubscription})
	s.handle(route{method: "DELETE", path: "/subscriptions/{id}", tag: tag, summary: "unsubscribe by id", params: []param{unsubCodeParam, userChannelParam, addlParam}, response: "text", h: s.unsubscribe})
	s.handle(route{method: "POST", path: "/subscriptions", tag: tag, summary: "create a subscription", body: "Subscription", response: "Subscription", h: s.createSubscription})
	s.handle(route{method: "GET", path: "/subscriptions", roles: signedIn, tag: tag, summary: "get subscriptions", params: []param{filterParam}, response: "[]Subscription", h: s.listSubscriptions})
}

// adminOnlySubscriptionFields are never shown to callers who are not
// administrators: they would let anyone confirm or cancel the subscription.
// Such callers cannot filter, sort or project on them either (see
// subscriptionSchema).
var adminOnlySubscriptionFields = []string{"confirmationRequest", "unsubscriptionCode", "createdBy", "updatedBy"}

// subscriptionsForUsers is the query schema of callers who are not
// administrators.
var subscriptionsForUsers = query.Subscriptions.Hiding(adminOnlySubscriptionFields...)

// subscriptionSchema is the query schema for the caller: a filter on a
// field the answer hides would be an oracle for it (a count with a $regex
// on confirmationRequest.confirmationCode recovers the code digit by
// digit).
func subscriptionSchema(r *http.Request) *query.Schema {
	if isAdmin(r) {
		return query.Subscriptions
	}
	return subscriptionsForUsers
}

// subscriptionStrings are the subscription fields stored as strings. The
// original stores through mongoose, which turns a number or a boolean sent
// for such a field into its string form — a phone number sent as a JSON
// number is the common case — so we do the same; an object or an array
// there stays a 400.
var subscriptionStrings = []string{"serviceName", "channel", "userChannelId", "state", "userId", "broadcastPushNotificationFilter", "unsubscriptionCode"}

// castScalars turns numbers and booleans at keys into strings as
// JavaScript's String() writes them.
func castScalars(f notify.Fields, keys []string) notify.Fields {
	for _, k := range keys {
		v, ok := f.Get(k)
		if !ok {
			continue
		}
		switch x := v.(type) {
		case bool:
			f.Set(k, strconv.FormatBool(x))
		case int32:
			f.Set(k, strconv.Itoa(int(x)))
		case float64:
			f.Set(k, jsNumber(x))
		}
	}
	return f
}

// jsNumber formats x as JavaScript's String(x): plain digits from 1e-7 up
// to 1e21, exponent form ("1e+21", "1.5e-7") outside.
func jsNumber(x float64) string {
	if a := math.Abs(x); x == 0 || (a >= 1e-7 && a < 1e21) {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	s := strconv.FormatFloat(x, 'e', -1, 64)
	s = strings.Replace(s, "e-0", "e-", 1)
	return strings.Replace(s, "e+0", "e+", 1)
}

func stripSubscription(f notify.Fields) notify.Fields {
	for _, k := range adminOnlySubscriptionFields {
		f.Delete(k)
	}
	return f
}

// subscriptionOut shapes a subscription for the caller.
func subscriptionOut(r *http.Request, sub *notify.Subscription) (any, error) {
	if isAdmin(r) {
		return sub, nil
	}
	f, err := toFields(sub)
	if err != nil {
		return nil, err
	}
	return stripSubscription(f), nil
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	r = scanLimited(r)
	flt, err := query.ParseFilter(r.URL.Query(), subscriptionSchema(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	q := findQuery(flt, nil)
	if !isAdmin(r) && len(flt.Fields) == 0 {
		// The fields a user may not see are not even read: less for the
		// store to encode and for us to decode.
		q.Projection = bson.D{{Key: "confirmationRequest", Value: 0}, {Key: "unsubscriptionCode", Value: 0}, {Key: "createdBy", Value: 0}, {Key: "updatedBy", Value: 0}}
	}
	subs, err := s.subs.List(r.Context(), caller(r), q)
	if err != nil {
		writeError(w, r, err)
		return
	}
	for _, sub := range subs {
		// a projection skips the store's defaults; the excluded fields
		// have none, so the defaults still hold
		sub.ApplyDefaults()
	}
	var adjust func(notify.Fields) notify.Fields
	if !isAdmin(r) {
		adjust = stripSubscription
	}
	writeRecords(w, r, subs, flt.Fields, adjust)
}

func (s *Server) countSubscriptions(w http.ResponseWriter, r *http.Request) {
	r = scanLimited(r)
	where, err := query.ParseWhere(r.URL.Query(), subscriptionSchema(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	n, err := s.subs.Count(r.Context(), caller(r), where)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"count": n})
}

func (s *Server) subscribedServices(w http.ResponseWriter, r *http.Request) {
	names, err := s.subs.Services(r.Context())
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, names)
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	body, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	body = castScalars(body, subscriptionStrings)
	sub, err := s.subs.Create(r.Context(), caller(r), body, s.linkHost(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := subscriptionOut(r, sub)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) updateSubscription(w http.ResponseWriter, r *http.Request) {
	body, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	body = castScalars(body, subscriptionStrings)
	sub, err := s.subs.Update(r.Context(), caller(r), r.PathValue("id"), body, s.linkHost(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := subscriptionOut(r, sub)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) replaceSubscription(w http.ResponseWriter, r *http.Request) {
	body, err := readFields(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	body = castScalars(body, subscriptionStrings)
	sub, err := s.subs.Replace(r.Context(), caller(r), r.PathValue("id"), body)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sub)
}

func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	reply, err := s.subs.Verify(r.Context(), caller(r), r.PathValue("id"), q.Get("confirmationCode"), q.Get("replace") == "true")
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeReply(w, r, reply, exceptionString)
}

// unsubscribe serves DELETE /subscriptions/{id}, its GET alias
// /unsubscribe used in mail links, and the one-click POST of RFC 8058.
func (s *Server) unsubscribe(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	addl, err := query.Strings(q, "additionalServices")
	if err != nil {
		writeError(w, r, err)
		return
	}
	reply, err := s.subs.Unsubscribe(r.Context(), caller(r), subscription.UnsubscribeRequest{
		ID:                 r.PathValue("id"),
		UnsubscriptionCode: q.Get("unsubscriptionCode"),
		UserChannelID:      q.Get("userChannelId"),
		AdditionalServices: addl,
		HTTPHost:           s.linkHost(r),
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeReply(w, r, reply, exceptionString)
}

func (s *Server) undoUnsubscribe(w http.ResponseWriter, r *http.Request) {
	reply, err := s.subs.Undo(r.Context(), caller(r), r.PathValue("id"), r.URL.Query().Get("unsubscriptionCode"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeReply(w, r, reply, exceptionMessage)
}

func (s *Server) swift(w http.ResponseWriter, r *http.Request) {
	body, err := readFieldsOrForm(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	reply, found, err := s.subs.SwiftReply(r.Context(), caller(r), body, s.linkHost(r))
	if err != nil {
		writeError(w, r, err)
		return
	}
	if !found {
		writeText(w, http.StatusOK, "ok")
		return
	}
	writeReply(w, r, reply, exceptionString)
}

// readFieldsOrForm reads a JSON object body, or an URL-encoded form as an
// object of strings (the first value of each field): NotifyBC reads both,
// and a gateway's webhook may post either.
func readFieldsOrForm(r *http.Request) (notify.Fields, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != formType {
		return readFields(r)
	}
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, httpError(http.StatusBadRequest, "the request body is not a valid form: "+err.Error())
	}
	keys := make([]string, 0, len(r.PostForm))
	for k := range r.PostForm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	f := make(notify.Fields, 0, len(keys))
	for _, k := range keys {
		f = append(f, notify.Field{Key: k, Value: r.PostForm.Get(k)})
	}
	return f, nil
}

// writeReply answers verify, unsubscribe and undo as the original does:
// the configured redirect (with ?channel= and, on failure, &err=), or the
// configured success or failure text as text/plain; a failure with neither
// configured is a JSON error. errText gives the err= value of a failure
// redirect.
func writeReply(w http.ResponseWriter, r *http.Request, reply *subscription.Reply, errText func(error) string) {
	ack := reply.Ack
	if ack != nil && ack.RedirectURL != "" {
		u := ack.RedirectURL + "?channel=" + url.QueryEscape(reply.Channel)
		if reply.Err != nil {
			// encodeURIComponent: spaces as %20, never +
			u += "&err=" + strings.ReplaceAll(url.QueryEscape(errText(reply.Err)), "+", "%20")
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		http.Redirect(w, r, u, http.StatusFound)
		return
	}
	if reply.Err != nil {
		if ack != nil && ack.FailureMessage != "" {
			status, _ := classify(reply.Err)
			writeText(w, status, ack.FailureMessage)
			return
		}
		writeError(w, r, reply.Err)
		return
	}
	msg := "OK"
	if ack != nil {
		msg = ack.SuccessMessage
	}
	writeText(w, http.StatusOK, msg)
}

// The err= value of a failure redirect is what the original's NestJS 11
// exception turns into: its refusals are HttpException objects built without
// a message, whose message NestJS derives from the class name ("Http
// Exception"). Verify and unsubscribe write the exception's string form,
// undo writes its message. Links in a client's redirect page may parse it,
// so it is kept byte for byte.
const (
	nestExceptionName    = "HttpException"
	nestExceptionMessage = "Http Exception"
)

// exceptionString is err= of verify and unsubscribe.
func exceptionString(error) string { return nestExceptionName + ": " + nestExceptionMessage }

// exceptionMessage is err= of undo.
func exceptionMessage(error) string { return nestExceptionMessage }
