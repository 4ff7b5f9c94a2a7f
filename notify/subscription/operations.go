package subscription

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/mailmerge"
	"github.com/govkit/govkit/notify/mongostore"
)

// Error is a refusal with the HTTP status the API answers.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return http.StatusText(e.Status)
	}
	return e.Message
}

// StatusCode returns the HTTP status.
func (e *Error) StatusCode() int { return e.Status }

var (
	errForbidden = &Error{Status: http.StatusForbidden}
	errNotFound  = &Error{Status: http.StatusNotFound}
)

func isAdmin(p notify.UserProfile) bool {
	return p.Role == notify.RoleSuperAdmin || p.Role == notify.RoleAdmin
}

// AccessFilter returns the restriction the caller's role puts on which
// subscriptions it sees: an authenticated user sees only its own, never
// deleted ones; everyone else sees all (anonymous callers reach single
// subscriptions only by id, with codes).
func AccessFilter(who notify.UserProfile) bson.D {
	if who.Role != notify.RoleAuthenticatedUser {
		return nil
	}
	return bson.D{
		{Key: "userId", Value: who.SecurityID},
		{Key: "state", Value: bson.D{{Key: "$ne", Value: notify.StateDeleted}}},
	}
}

// And combines two filters; either may be nil.
func And(a, b bson.D) bson.D {
	switch {
	case len(a) == 0 && len(b) == 0:
		return bson.D{}
	case len(a) == 0:
		return b
	case len(b) == 0:
		return a
	}
	return bson.D{{Key: "$and", Value: bson.A{a, b}}}
}

// find returns the subscription with id as the caller may see it.
func (s *Service) find(ctx context.Context, who notify.UserProfile, id string) (*notify.Subscription, error) {
	oid, err := notify.ParseID(id)
	if err != nil {
		return nil, errNotFound
	}
	sub, err := s.store.Subscriptions().FindOne(ctx, mongostore.Query{Filter: And(bson.D{{Key: "_id", Value: oid}}, AccessFilter(who))})
	if errors.Is(err, notify.ErrNotFound) {
		return nil, errNotFound
	}
	return sub, err
}

// merged is a service's subscription config: the static section with the
// service's configuration{name:'subscription'} document merged over it.
type merged struct {
	typed config.Subscription
	raw   map[string]any
}

func (s *Service) mergedConfig(ctx context.Context, serviceName string) (merged, error) {
	raw, _ := s.cfg.Raw()["subscription"].(map[string]any)
	if raw == nil {
		raw = map[string]any{}
	}
	if serviceName != "" {
		rec, err := s.store.Configurations().FindOne(ctx, mongostore.Query{Filter: bson.D{
			{Key: "name", Value: "subscription"}, {Key: "serviceName", Value: serviceName},
		}})
		switch {
		case err == nil:
			if v, ok := rec.Value.(notify.Fields); ok {
				raw = config.Merge(raw, v.Map())
			}
		case !errors.Is(err, notify.ErrNotFound):
			return merged{}, err
		}
	}
	typed, problems := config.DecodeSubscription(raw)
	for _, p := range problems {
		s.log.Warn("subscription configuration of a service has a problem", "serviceName", serviceName, "problem", p.String())
	}
	return merged{typed: typed, raw: raw}, nil
}

// templateFields returns the raw template object at subscription.<section>.<channel>.
func (m merged) templateFields(section, channel string) notify.Fields {
	sec, _ := m.raw[section].(map[string]any)
	t, ok := sec[channel].(map[string]any)
	if !ok {
		return nil
	}
	v, err := notify.FromPlain(config.StripFuncs(t))
	if err != nil {
		return nil
	}
	f, _ := v.(notify.Fields)
	return f
}

// MaxUserChannelIDBytes bounds a subscription's address.
const MaxUserChannelIDBytes = 1024

// validate checks what every write of a subscription needs.
func (s *Service) validate(sub *notify.Subscription) error {
	if sub.ServiceName == "" {
		return &notify.FieldError{Field: "serviceName", Rule: "is required"}
	}
	if sub.UserChannelID == "" {
		return &notify.FieldError{Field: "userChannelId", Rule: "is required"}
	}
	// An address is matched as a whole-value pattern (duplicate detection,
	// verify with replace), which the embedded store compiles for every
	// document it scans; no email address or phone number comes near this.
	if len(sub.UserChannelID) > MaxUserChannelIDBytes {
		return &notify.FieldError{Field: "userChannelId", Rule: fmt.Sprintf("must be at most %d bytes", MaxUserChannelIDBytes)}
	}
	if sub.Channel != "" && sub.Channel != notify.ChannelEmail && sub.Channel != notify.ChannelSMS {
		return &notify.FieldError{Field: "channel", Rule: "must be email or sms"}
	}
	switch sub.State {
	case "", notify.StateUnconfirmed, notify.StateConfirmed, notify.StateDeleted:
	default:
		return &notify.FieldError{Field: "state", Rule: "must be unconfirmed, confirmed or deleted"}
	}
	return s.validateFilter(sub.BroadcastPushNotificationFilter)
}

func (s *Service) validateFilter(expr string) error {
	if expr == "" || s.filters == nil {
		return nil
	}
	return s.filters.Validate("broadcastPushNotificationFilter", expr)
}

// beforeUpsert is the original's preparation of a created or changed
// subscription: owner, unsubscription code, confirmation request template
// and code.
func (s *Service) beforeUpsert(ctx context.Context, who notify.UserProfile, sub *notify.Subscription, m merged) error {
	admin := isAdmin(who)
	// userId says whose subscription it is, and a unicast to a userId goes
	// to it: only an identity the service authenticated may be that
	// owner. A user gets its own id; an anonymous caller none, whatever
	// it sent (the original stored it, so anyone could receive another
	// user's unicasts); administrators set what they set.
	switch {
	case who.Role == notify.RoleAuthenticatedUser:
		sub.UserID = who.SecurityID
	case !admin:
		sub.UserID = ""
	}
	if who.Role != notify.RoleAuthenticatedUser && (!admin || sub.UnsubscriptionCode == "") {
		if code := m.typed.AnonymousUnsubscription.Code; code.Required {
			c, err := GenerateCode(code.Regex)
			if err != nil {
				return err
			}
			sub.UnsubscriptionCode = c
		}
	}
	if enc, ok := sub.ConfirmationRequest.String("confirmationCodeEncrypted"); ok && enc != "" {
		uc, code, err := s.decryptConfirmation(ctx, enc)
		if err != nil {
			return err
		}
		sub.UserChannelID = uc
		sub.ConfirmationRequest.Set("confirmationCode", code)
		return nil
	}
	if !admin || sub.ConfirmationRequest == nil {
		// Callers who are not administrators cannot choose the message the
		// service sends to someone else's address: the template comes from
		// config (anti-spam, as in the original).
		sub.ConfirmationRequest = m.templateFields("confirmationRequest", channelOf(sub))
		sub.ConfirmationRequest.Delete("confirmationCode")
	}
	if sub.ConfirmationRequest == nil {
		return nil
	}
	code, _ := sub.ConfirmationRequest.String("confirmationCode")
	re, _ := sub.ConfirmationRequest.String("confirmationCodeRegex")
	if code == "" && re != "" {
		c, err := GenerateCode(re)
		if err != nil {
			return &notify.FieldError{Field: "confirmationRequest.confirmationCodeRegex", Rule: err.Error()}
		}
		sub.ConfirmationRequest.Set("confirmationCode", c)
	}
	return nil
}

func channelOf(sub *notify.Subscription) string {
	if sub.Channel == "" {
		return notify.ChannelEmail
	}
	return sub.Channel
}

// Create stores a new subscription and sends its confirmation request
// (or the duplicated-subscription message). httpHost is scheme://host:port
// of the request, for links in the message. A message that cannot be sent
// undoes the creation, so a subscriber never holds a code nobody received.
func (s *Service) Create(ctx context.Context, who notify.UserProfile, body notify.Fields, httpHost string) (*notify.Subscription, error) {
	body = body.Clone()
	if !isAdmin(who) {
		body.Delete("state")
	}
	for _, k := range []string{"id", "_id", "created", "updated", "createdBy", "updatedBy"} {
		body.Delete(k)
	}
	sub := &notify.Subscription{}
	if err := sub.SetFields(body); err != nil {
		return nil, err
	}
	if err := s.validate(sub); err != nil {
		return nil, err
	}
	m, err := s.mergedConfig(ctx, sub.ServiceName)
	if err != nil {
		return nil, err
	}
	if err := s.beforeUpsert(ctx, who, sub, m); err != nil {
		return nil, err
	}
	// what a caller who is not an administrator makes the service send
	// to someone else is bounded (limits.go); nothing is stored yet
	if err := s.checkNumber(who, sub); err != nil {
		return nil, err
	}
	if err := s.spendCreation(ctx, who); err != nil {
		return nil, err
	}
	if err := s.spendConfirmation(ctx, who, sub); err != nil {
		return nil, err
	}
	// a new record has createdBy only, as the original's create writes it
	p := who
	sub.CreatedBy, sub.UpdatedBy = &p, nil
	if err := s.store.Subscriptions().Insert(ctx, sub); err != nil {
		return nil, err
	}
	if sub.ConfirmationRequest == nil {
		return sub, nil
	}
	if err := s.sendConfirmation(ctx, sub, m, httpHost); err != nil {
		if derr := s.store.Subscriptions().DeleteByID(context.WithoutCancel(ctx), sub.ID.Hex()); derr != nil {
			s.log.Error("cannot remove a subscription whose confirmation failed", "id", sub.ID.Hex(), "err", derr)
		}
		return nil, err
	}
	return sub, nil
}

// Update changes a subscription's address (userChannelId, which makes it
// unconfirmed and sends a new confirmation request) and data; nothing else
// can be changed this way, as in the original.
func (s *Service) Update(ctx context.Context, who notify.UserProfile, id string, body notify.Fields, httpHost string) (*notify.Subscription, error) {
	if f, ok := body.String("broadcastPushNotificationFilter"); ok {
		if err := s.validateFilter(f); err != nil {
			return nil, err
		}
	}
	sub, err := s.find(ctx, who, id)
	if err != nil {
		return nil, err
	}
	if v, ok := body.Get("userChannelId"); ok && v != nil {
		uc, ok := v.(string)
		if !ok {
			return nil, &notify.FieldError{Field: "userChannelId", Rule: "must be a string"}
		}
		if len(uc) > MaxUserChannelIDBytes {
			return nil, &notify.FieldError{Field: "userChannelId", Rule: fmt.Sprintf("must be at most %d bytes", MaxUserChannelIDBytes)}
		}
		if uc != "" && uc != sub.UserChannelID {
			sub.State = notify.StateUnconfirmed
			sub.UserChannelID = uc
			if err := s.checkNumber(who, sub); err != nil {
				return nil, err
			}
		}
	}
	if v, ok := body.Get("data"); ok && v != nil {
		sub.Data = v
	}
	m, err := s.mergedConfig(ctx, sub.ServiceName)
	if err != nil {
		return nil, err
	}
	if err := s.beforeUpsert(ctx, who, sub, m); err != nil {
		return nil, err
	}
	if sub.ConfirmationRequest != nil {
		if err := s.spendConfirmation(ctx, who, sub); err != nil {
			return nil, err
		}
	}
	p := who
	sub.UpdatedBy = &p
	if err := s.store.Subscriptions().Replace(ctx, sub); err != nil {
		return nil, err
	}
	if sub.ConfirmationRequest != nil {
		if err := s.sendConfirmation(ctx, sub, m, httpHost); err != nil {
			return nil, err
		}
	}
	return sub, nil
}

// Replace replaces a subscription by an administrator's body; nothing is
// sent.
func (s *Service) Replace(ctx context.Context, who notify.UserProfile, id string, body notify.Fields) (*notify.Subscription, error) {
	cur, err := s.find(ctx, who, id)
	if err != nil {
		return nil, err
	}
	body = body.Clone()
	for _, k := range []string{"id", "_id", "created", "updated", "createdBy", "updatedBy"} {
		body.Delete(k)
	}
	sub := &notify.Subscription{}
	if err := sub.SetFields(body); err != nil {
		return nil, err
	}
	if err := s.validate(sub); err != nil {
		return nil, err
	}
	sub.ID, sub.Created, sub.CreatedBy = cur.ID, cur.Created, cur.CreatedBy
	p := who
	sub.UpdatedBy = &p
	if err := s.store.Subscriptions().Replace(ctx, sub); err != nil {
		return nil, err
	}
	return sub, nil
}

// List returns the subscriptions q selects among those the caller may see.
func (s *Service) List(ctx context.Context, who notify.UserProfile, q mongostore.Query) ([]*notify.Subscription, error) {
	q.Filter = And(asD(q.Filter), AccessFilter(who))
	return s.store.Subscriptions().Find(ctx, q)
}

// Count counts the subscriptions where selects among those the caller may
// see.
func (s *Service) Count(ctx context.Context, who notify.UserProfile, where bson.D) (int64, error) {
	return s.store.Subscriptions().Count(ctx, And(where, AccessFilter(who)))
}

func asD(v any) bson.D {
	if d, ok := v.(bson.D); ok {
		return d
	}
	return nil
}

// Services returns the names of the services with confirmed subscriptions,
// sorted. (The store's distinct is not used: the embedded store may time it
// out.)
func (s *Service) Services(ctx context.Context) ([]string, error) {
	subs, err := s.store.Subscriptions().Find(ctx, mongostore.Query{
		Filter:     bson.D{{Key: "state", Value: notify.StateConfirmed}},
		Projection: bson.D{{Key: "serviceName", Value: 1}},
	})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []string{}
	for _, sub := range subs {
		if !seen[sub.ServiceName] {
			seen[sub.ServiceName] = true
			out = append(out, sub.ServiceName)
		}
	}
	sort.Strings(out)
	return out, nil
}

// sameAddress selects confirmed subscriptions of a service and channel to
// the same address, ignoring case. (The original's unanchored pattern also
// matched addresses that merely contain this one.)
func sameAddress(sub *notify.Subscription) bson.D {
	return bson.D{
		{Key: "serviceName", Value: sub.ServiceName},
		{Key: "state", Value: notify.StateConfirmed},
		{Key: "channel", Value: channelOf(sub)},
		{Key: "userChannelId", Value: bson.D{
			{Key: "$regex", Value: "^" + regexp.QuoteMeta(sub.UserChannelID) + "$"},
			{Key: "$options", Value: "i"},
		}},
	}
}

// Reply is what verify, unsubscribe and undo answer: success or failure,
// shown as the configured on-screen message or as a redirect.
type Reply struct {
	// Channel is the subscription's channel, for ?channel= of a redirect.
	Channel string
	// Ack holds the configured messages and redirect URL; nil means none are
	// configured (then a failure is answered as a plain error).
	Ack *config.Acknowledgements
	// Err is nil on success; otherwise it has a StatusCode.
	Err error
}

// Verify confirms a subscription with its confirmation code. With replace,
// other confirmed subscriptions of the same service, channel and address are
// deleted first.
func (s *Service) Verify(ctx context.Context, who notify.UserProfile, id, code string, replace bool) (*Reply, error) {
	if err := s.attempts.checkClient(ctx, who); err != nil {
		return nil, err
	}
	sub, err := s.find(ctx, who, id)
	if err != nil {
		return nil, err
	}
	if err := s.attempts.checkSubscription(ctx, who, sub.ID); err != nil {
		return nil, err
	}
	m, err := s.mergedConfig(ctx, sub.ServiceName)
	if err != nil {
		return nil, err
	}
	reply := &Reply{Channel: channelOf(sub), Ack: ackOrNil(m.raw, "confirmationAcknowledgements", m.typed.ConfirmationAcknowledgements)}
	// As in the original, a confirmation request without a code is matched
	// by a request without one.
	want, _ := sub.ConfirmationRequest.String("confirmationCode")
	if sub.ConfirmationRequest != nil && code != want {
		s.attempts.wrong(ctx, who, sub.ID)
		reply.Err = errForbidden
		return reply, nil
	}
	s.attempts.right(ctx, who, sub.ID)
	if sub.State != notify.StateUnconfirmed && sub.State != notify.StateConfirmed {
		reply.Err = errForbidden
		return reply, nil
	}
	if replace && sub.UserChannelID != "" {
		others := And(sameAddress(sub), bson.D{{Key: "_id", Value: bson.D{{Key: "$ne", Value: sub.ID}}}})
		if _, err := s.store.Subscriptions().UpdateMany(ctx, others, bson.D{{Key: "$set", Value: bson.D{
			{Key: "state", Value: notify.StateDeleted}, {Key: "updatedBy", Value: who.Fields()},
		}}}); err != nil {
			reply.Err = err
			return reply, nil
		}
	}
	if err := s.store.Subscriptions().UpdateByID(ctx, sub.ID.Hex(), bson.D{{Key: "$set", Value: bson.D{
		{Key: "state", Value: notify.StateConfirmed}, {Key: "updatedBy", Value: who.Fields()},
	}}}); err != nil {
		reply.Err = err
	}
	return reply, nil
}

// ackOrNil returns the acknowledgements, or nil when the section is absent
// (null) in the merged config.
func ackOrNil(raw map[string]any, key string, a config.Acknowledgements) *config.Acknowledgements {
	if v, ok := raw[key]; !ok || v == nil {
		return nil
	}
	return &a
}

// UnsubscribeRequest is an unsubscription.
type UnsubscribeRequest struct {
	ID                 string
	UnsubscriptionCode string
	// UserChannelID, when given, must match the subscription's address
	// (ignoring case) for callers who are not administrators.
	UserChannelID string
	// AdditionalServices are more services to unsubscribe the same address
	// from: one item "_all" means every confirmed subscription of the
	// address and channel.
	AdditionalServices []string
	// HTTPHost is scheme://host:port of the request, for links in the
	// acknowledgement message.
	HTTPHost string
}

// Unsubscribe deletes a subscription (and, with AdditionalServices, the
// address's subscriptions to other services) and sends the acknowledgement
// message. The caller must be an administrator, the owning authenticated
// user, or an anonymous caller with the unsubscription code; the
// subscription must be confirmed.
func (s *Service) Unsubscribe(ctx context.Context, who notify.UserProfile, req UnsubscribeRequest) (*Reply, error) {
	codeChecked := !isAdmin(who) && who.Role != notify.RoleAuthenticatedUser
	if codeChecked {
		if err := s.attempts.checkClient(ctx, who); err != nil {
			return nil, err
		}
	}
	sub, err := s.find(ctx, who, req.ID)
	if err != nil {
		return nil, err
	}
	if codeChecked {
		if err := s.attempts.checkSubscription(ctx, who, sub.ID); err != nil {
			return nil, err
		}
	}
	m, err := s.mergedConfig(ctx, sub.ServiceName)
	if err != nil {
		return nil, err
	}
	onScreen := m.typed.AnonymousUnsubscription.Acknowledgements.OnScreen
	reply := &Reply{Channel: channelOf(sub), Ack: &onScreen}
	forbidden := false
	switch {
	case isAdmin(who):
	case who.Role == notify.RoleAuthenticatedUser:
		forbidden = who.SecurityID != sub.UserID
	default:
		// A wrong code, or an address that is not the subscription's, is
		// a guess: both count against the caller and the subscription.
		if (sub.UnsubscriptionCode != "" && req.UnsubscriptionCode != sub.UnsubscriptionCode) ||
			(req.UserChannelID != "" && !strings.EqualFold(req.UserChannelID, sub.UserChannelID)) {
			s.attempts.wrong(ctx, who, sub.ID)
			forbidden = true
		} else {
			s.attempts.right(ctx, who, sub.ID)
		}
	}
	if sub.State != notify.StateConfirmed {
		forbidden = true
	}
	if forbidden {
		reply.Err = errForbidden
		return reply, nil
	}
	return s.unsubscribe(ctx, who, sub, m, req, reply), nil
}

// UnsubscribeBounced unsubscribes the address of a confirmed subscription
// from all its services, for the inbound mail server once an address's
// hard bounces pass email.bounce.unsubThreshold. The bounce handler has
// already checked the code of every bounce it counted (CheckCode), so the
// budgets of wrong codes are neither checked nor charged here: the mail
// server that delivered the last bounce is not the one deciding, and a
// budget spent by someone else must not keep a dead address subscribed.
// who is recorded as updatedBy. The acknowledgement is sent, as by the
// API's unsubscribe with additionalServices=_all.
func (s *Service) UnsubscribeBounced(ctx context.Context, who notify.UserProfile, id, httpHost string) (*Reply, error) {
	sub, err := s.find(ctx, who, id)
	if err != nil {
		return nil, err
	}
	m, err := s.mergedConfig(ctx, sub.ServiceName)
	if err != nil {
		return nil, err
	}
	onScreen := m.typed.AnonymousUnsubscription.Acknowledgements.OnScreen
	reply := &Reply{Channel: channelOf(sub), Ack: &onScreen}
	if sub.State != notify.StateConfirmed {
		reply.Err = errForbidden
		return reply, nil
	}
	req := UnsubscribeRequest{ID: id, AdditionalServices: []string{"_all"}, HTTPHost: httpHost}
	return s.unsubscribe(ctx, who, sub, m, req, reply), nil
}

// unsubscribe deletes sub (and the additional services req names) once the
// caller is known to be allowed, and sends the acknowledgement.
func (s *Service) unsubscribe(ctx context.Context, who notify.UserProfile, sub *notify.Subscription, m merged, req UnsubscribeRequest, reply *Reply) *Reply {
	var err error
	ids := []any{sub.ID}
	var extra *notify.UnsubscribedServices
	if len(req.AdditionalServices) > 0 {
		extra, err = s.additionalServices(ctx, sub, req.AdditionalServices)
		if err != nil {
			reply.Err = err
			return reply
		}
		for _, id := range extra.IDs {
			if oid, err := notify.ParseID(id); err == nil {
				ids = append(ids, oid)
			}
		}
	}
	if _, err := s.store.Subscriptions().UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: notify.StateDeleted}, {Key: "updatedBy", Value: who.Fields()}}}}); err != nil {
		reply.Err = err
		return reply
	}
	sub.State = notify.StateDeleted
	if extra != nil {
		if err := s.store.Subscriptions().UpdateByID(ctx, sub.ID.Hex(), bson.D{{Key: "$set", Value: bson.D{
			{Key: "unsubscribedAdditionalServices", Value: notify.Fields{{Key: "names", Value: stringsAny(extra.Names)}, {Key: "ids", Value: stringsAny(extra.IDs)}}},
		}}}); err != nil {
			reply.Err = err
			return reply
		}
		sub.UnsubscribedAdditionalServices = extra
	}
	s.sendAcknowledgement(ctx, sub, m, req.HTTPHost)
	return reply
}

func stringsAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// additionalServices finds the other subscriptions of the same address and
// channel that an unsubscription with additionalServices covers.
func (s *Service) additionalServices(ctx context.Context, sub *notify.Subscription, names []string) (*notify.UnsubscribedServices, error) {
	where := bson.D{{Key: "channel", Value: channelOf(sub)}, {Key: "userChannelId", Value: sub.UserChannelID}}
	switch {
	case len(names) == 1 && names[0] == "_all":
		where = append(where, bson.E{Key: "state", Value: notify.StateConfirmed})
	case len(names) == 1:
		where = append(where, bson.E{Key: "serviceName", Value: names[0]})
	default:
		where = append(where, bson.E{Key: "serviceName", Value: bson.D{{Key: "$in", Value: stringsAny(names)}}})
	}
	subs, err := s.store.Subscriptions().Find(ctx, mongostore.Query{Filter: where, Projection: bson.D{{Key: "serviceName", Value: 1}}})
	if err != nil {
		return nil, err
	}
	out := &notify.UnsubscribedServices{Names: []string{}, IDs: []string{}}
	for _, o := range subs {
		out.Names = append(out.Names, o.ServiceName)
		out.IDs = append(out.IDs, o.ID.Hex())
	}
	return out, nil
}

// Undo reverts an unsubscription (and the additional services it covered).
// Callers who are not administrators need the unsubscription code;
// authenticated users are refused, as in the original.
func (s *Service) Undo(ctx context.Context, who notify.UserProfile, id, code string) (*Reply, error) {
	if err := s.attempts.checkClient(ctx, who); err != nil {
		return nil, err
	}
	sub, err := s.find(ctx, who, id)
	if err != nil {
		return nil, err
	}
	if err := s.attempts.checkSubscription(ctx, who, sub.ID); err != nil {
		return nil, err
	}
	m, err := s.mergedConfig(ctx, sub.ServiceName)
	if err != nil {
		return nil, err
	}
	ack := m.typed.AnonymousUndoUnsubscription
	reply := &Reply{Channel: channelOf(sub), Ack: &ack}
	if !isAdmin(who) {
		if sub.UnsubscriptionCode != "" && code != sub.UnsubscriptionCode {
			s.attempts.wrong(ctx, who, sub.ID)
			reply.Err = errForbidden
			return reply, nil
		}
		s.attempts.right(ctx, who, sub.ID)
		if who.Role == notify.RoleAuthenticatedUser || sub.State != notify.StateDeleted {
			reply.Err = errForbidden
			return reply, nil
		}
	}
	ids := []any{sub.ID}
	if sub.UnsubscribedAdditionalServices != nil {
		for _, x := range sub.UnsubscribedAdditionalServices.IDs {
			if oid, err := notify.ParseID(x); err == nil && !slices.Contains(ids, any(oid)) {
				ids = append(ids, oid)
			}
		}
		if err := s.store.Subscriptions().UpdateByID(ctx, sub.ID.Hex(), bson.D{{Key: "$unset", Value: bson.D{{Key: "unsubscribedAdditionalServices", Value: ""}}}}); err != nil {
			reply.Err = err
			return reply, nil
		}
	}
	if _, err := s.store.Subscriptions().UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "state", Value: notify.StateConfirmed}, {Key: "updatedBy", Value: who.Fields()}}}}); err != nil {
		reply.Err = err
	}
	return reply, nil
}

// SwiftReply handles a keyword reply forwarded by Swift: the sender's
// confirmed SMS subscription (found by Reference, the subscription id the
// service sent with its message, or else by phone number) is unsubscribed.
// found is false when there is no such subscription (the original answers
// "ok").
func (s *Service) SwiftReply(ctx context.Context, who notify.UserProfile, body notify.Fields, httpHost string) (reply *Reply, found bool, err error) {
	settings := s.cfg.SMS.ProviderSettings.Swift
	if s.cfg.SMS.Provider != "swift" || settings.NotifyBCSwiftKey == "" {
		return nil, false, errForbidden
	}
	// The shared key is a code too, and often a short one.
	if err := s.attempts.checkClient(ctx, who); err != nil {
		return nil, false, err
	}
	key, _ := body.String("notifyBCSwiftKey")
	if subtle.ConstantTimeCompare([]byte(key), []byte(settings.NotifyBCSwiftKey)) != 1 {
		s.attempts.wrong(ctx, who, notify.ID{})
		return nil, false, errForbidden
	}
	where := bson.D{{Key: "state", Value: notify.StateConfirmed}, {Key: "channel", Value: notify.ChannelSMS}}
	if ref := stringValue(body, "Reference"); ref != "" {
		oid, err := notify.ParseID(ref)
		if err != nil {
			return nil, false, nil
		}
		where = append(where, bson.E{Key: "_id", Value: oid})
	} else {
		phone := stringValue(body, "PhoneNumber")
		if phone == "" {
			return nil, false, errForbidden
		}
		if len(phone) > 64 {
			// No phone number is this long; its pattern would be compiled
			// for every subscription the store scans.
			return nil, false, nil
		}
		where = append(where, bson.E{Key: "userChannelId", Value: bson.D{{Key: "$regex", Value: phonePattern(phone)}}})
	}
	sub, err := s.store.Subscriptions().FindOne(ctx, mongostore.Query{Filter: where})
	if errors.Is(err, notify.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	// The shared key proves the request comes from Swift, which relays the
	// subscriber's own reply: act as the subscriber would, with its code.
	reply, err = s.Unsubscribe(ctx, who, UnsubscribeRequest{ID: sub.ID.Hex(), UnsubscriptionCode: sub.UnsubscriptionCode, HTTPHost: httpHost})
	return reply, true, err
}

func stringValue(f notify.Fields, key string) string {
	v, _ := f.Get(key)
	switch x := v.(type) {
	case string:
		return x
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return mailmerge.FormatNumber(x)
	}
	return ""
}

// phonePattern matches a phone number written with or without dashes
// between its digits and with or without the leading country code 1 (and a
// leading +), as the original matches Swift's PhoneNumber. Only digits are
// kept, so the pattern cannot be steered by the request, and it is anchored:
// the original's unanchored pattern also matched longer numbers that
// contain the sender's.
func phonePattern(phone string) string {
	var digits []string
	for _, r := range phone {
		if r >= '0' && r <= '9' {
			digits = append(digits, string(r))
		}
	}
	if len(digits) == 0 {
		return "^$"
	}
	if digits[0] == "1" {
		digits[0] = "1?"
	}
	return `^\+?` + strings.Join(digits, "-?") + "$"
}
