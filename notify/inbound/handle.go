package inbound

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/subscription"
)

// MaxStoredBounceBytes bounds the messages a bounce record keeps: the
// newest is always kept, older ones while the total stays within it. (The
// original keeps every message, so enough bounces to one address would
// outgrow a document.)
const MaxStoredBounceBytes = 4 << 20

// bounceLockTTL is how long a bounce record stays locked when the node
// holding it dies; handling one bounce takes milliseconds (plus, at the
// threshold, sending the acknowledgement).
const bounceLockTTL = time.Minute

var (
	errTryLater       = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Temporary failure, try again later"}
	errMalformedMail  = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 6, 0}, Message: "Message could not be parsed"}
	errNoSubscription = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such subscription"}
	errUnsubRefused   = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "Unsubscription refused"}
	errNullSender     = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "List-unsubscribe mail must come from the subscriber's address"}
	errUnsubscribeOff = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "List-unsubscribe by email is disabled"}
)

// tooManyWrongCodes refuses a recipient while the client's or the
// subscription's budget of wrong codes is spent: 450, so that a sending
// server retries later, as the API's 429 asks with Retry-After.
func tooManyWrongCodes(e *subscription.TooManyAttemptsError) *smtp.SMTPError {
	return &smtp.SMTPError{Code: 450, EnhancedCode: smtp.EnhancedCode{4, 7, 1},
		Message: fmt.Sprintf("Too many wrong codes, try again in %d seconds", max(1, int(math.Ceil(e.Wait.Seconds()))))}
}

// checkCode checks the code of an un- or bn- recipient at RCPT, against the
// budgets of wrong codes the API's routes use (subscription.CheckCode): the
// client (its address, an IPv6 one by its /64) and the subscription, shared
// by every node when the queue is Redis. Once either is spent, the
// recipient is refused with 450 before its code is compared.
//
// known is whether the recipient is kept for DATA. A list-unsubscribe
// address with a wrong code or an unknown id is refused with 550. A bounce
// address with a wrong code or an unknown id is accepted and dropped, as
// in the original (a bounce is never answered with a bounce), but a wrong
// code counts all the same.
func (h *handler) checkCode(r recipient, client string) (known bool, err error) {
	if r.kind == kindBounce && !h.bounce {
		return false, nil // accepted and dropped: nothing to guess
	}
	ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
	defer cancel()
	_, err = h.subs.CheckCode(ctx, caller(client), r.id, r.code)
	var tooMany *subscription.TooManyAttemptsError
	var se *subscription.Error
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &tooMany):
		h.log.Info("inbound mail: recipient refused, budget of wrong codes spent", "recipient", r.String(), "client", client)
		return false, tooManyWrongCodes(tooMany)
	case errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusForbidden):
		what := "unknown subscription"
		if se.Status == http.StatusForbidden {
			what = "wrong code"
		}
		if r.kind == kindBounce {
			h.log.Info("inbound mail: bounce dropped: "+what, "recipient", r.String(), "client", client)
			return false, nil
		}
		h.log.Info("inbound mail: unsubscription refused: "+what, "recipient", r.String(), "client", client)
		if se.Status == http.StatusNotFound {
			return false, errNoSubscription
		}
		return false, errUnsubRefused
	}
	h.log.Error("inbound mail: code not checked", "recipient", r.String(), "err", err)
	return false, errTryLater
}

// handler applies received mail to subscriptions and bounce records.
type handler struct {
	store           *mongostore.Store
	subs            *subscription.Service
	rules           rules
	bounce          bool // email.bounce.enabled
	listUnsubscribe bool // email.listUnsubscribeByEmail.enabled
	threshold       int64
	httpHost        string
	log             *slog.Logger
	now             func() time.Time
	known           knownBounces
	applied         func(kind string) // Options.Applied
}

// count tells Options.Applied of a mail applied.
func (h *handler) count(kind string) {
	if h.applied != nil {
		h.applied(kind)
	}
}

// caller is who the service records as having acted for mail from a
// client: an anonymous caller at the client's address, as the API records
// an anonymous request. Mail proves no more than knowledge of the code, so
// it never acts with more rights than the API gives an anonymous caller.
func caller(client string) notify.UserProfile {
	return notify.UserProfile{SecurityID: client, AuthnStrategy: notify.AuthnIP, Role: notify.RoleAnonymous}
}

// unsubscribe handles list-unsubscribe mail: the API's anonymous
// unsubscribe with the address's code and the envelope sender as the
// subscriber's address.
func (h *handler) unsubscribe(ctx context.Context, r recipient, from, client string) error {
	reply, err := h.subs.Unsubscribe(ctx, caller(client), subscription.UnsubscribeRequest{
		ID: r.id, UnsubscriptionCode: r.code, UserChannelID: from, HTTPHost: h.httpHost,
	})
	if err == nil && reply != nil {
		err = reply.Err
	}
	var se *subscription.Error
	var tooMany *subscription.TooManyAttemptsError
	switch {
	case err == nil:
		h.log.Info("inbound mail: unsubscribed", "recipient", r.String(), "client", client)
		h.count("unsubscribe")
		return nil
	case errors.As(err, &tooMany):
		// Other recipients of the same transaction spent a budget since
		// this one's code was checked.
		return tooManyWrongCodes(tooMany)
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
		h.log.Info("inbound mail: unsubscription of an unknown subscription refused", "recipient", r.String(), "client", client)
		return errNoSubscription
	case errors.As(err, &se) && se.Status == http.StatusForbidden:
		h.log.Info("inbound mail: unsubscription refused (code, sender or state)", "recipient", r.String(), "client", client)
		return errUnsubRefused
	}
	h.log.Error("inbound mail: unsubscription failed", "recipient", r.String(), "err", err)
	return errTryLater
}

// bounced handles a bounce: see the package documentation.
func (h *handler) bounced(ctx context.Context, r recipient, raw []byte, client string) error {
	if !h.bounce {
		return nil
	}
	rep, err := readReport(raw)
	if err != nil {
		// The parser's message may quote the mail: not logged.
		h.log.Info("inbound mail: bounce not parsed as MIME", "recipient", r.String(), "client", client)
		return errMalformedMail
	}
	sub, err := h.subscriptionOf(ctx, r)
	if errors.Is(err, notify.ErrNotFound) {
		// Not exactly one confirmed email subscription with this id and
		// code: accepted and dropped, as in the original.
		h.log.Info("inbound mail: bounce for no confirmed subscription dropped", "recipient", r.String(), "client", client)
		return nil
	}
	if err != nil {
		h.log.Error("inbound mail: bounce not recorded", "recipient", r.String(), "err", err)
		return errTryLater
	}
	hard := h.rules.hardBounce(rep, sub.UserChannelID)
	if err := h.record(ctx, sub, r, hard, raw, client); err != nil {
		h.log.Error("inbound mail: bounce not recorded", "recipient", r.String(), "err", err)
		return errTryLater
	}
	return nil
}

// subscriptionOf finds the confirmed email subscription a bn- address
// names. A wrong code, channel or state is notify.ErrNotFound, like a wrong
// id. (It reads by id alone and checks the rest here: the embedded store
// answers only a filter of _id alone from its index.)
func (h *handler) subscriptionOf(ctx context.Context, r recipient) (*notify.Subscription, error) {
	sub, err := h.store.Subscriptions().FindByID(ctx, r.id)
	if err != nil {
		return nil, err
	}
	if sub.Channel != notify.ChannelEmail || sub.State != notify.StateConfirmed ||
		subtle.ConstantTimeCompare([]byte(sub.UnsubscriptionCode), []byte(r.code)) != 1 {
		return nil, notify.ErrNotFound
	}
	return sub, nil
}

// record adds a bounce to the active bounce record of the subscription's
// address and, past the threshold, unsubscribes the address from all its
// services and closes the record.
func (h *handler) record(ctx context.Context, sub *notify.Subscription, r recipient, hard bool, raw []byte, client string) error {
	unlock, err := h.store.Lock(ctx, "bounce/"+notify.ChannelEmail+"/"+sub.UserChannelID, bounceLockTTL)
	if err != nil {
		return err
	}
	defer unlock()
	bounces := h.store.Bounces()
	who := caller(client)
	msg := notify.BounceMessage{Date: h.now(), Message: strings.ToValidUTF8(string(raw), "\uFFFD")}
	rec, err := h.activeBounce(ctx, sub.UserChannelID)
	switch {
	case errors.Is(err, notify.ErrNotFound):
		rec = &notify.Bounce{Channel: notify.ChannelEmail, UserChannelID: sub.UserChannelID, BounceMessages: []notify.BounceMessage{msg}}
		if hard {
			rec.HardBounceCount = 1
		}
		rec.CreatedBy = &who
		if err := bounces.Insert(ctx, rec); err != nil {
			return err
		}
		h.known.put(sub.UserChannelID, rec.ID)
	case err != nil:
		return err
	default:
		if hard {
			rec.HardBounceCount++
		}
		rec.BounceMessages = keepNewest(append([]notify.BounceMessage{msg}, rec.BounceMessages...))
		if err := bounces.UpdateByID(ctx, rec.ID.Hex(), bson.D{{Key: "$set", Value: bson.D{
			{Key: "hardBounceCount", Value: rec.HardBounceCount},
			{Key: "bounceMessages", Value: messagesValue(rec.BounceMessages)},
			{Key: "updatedBy", Value: who.Fields()},
		}}}); err != nil {
			return err
		}
	}
	h.log.Info("inbound mail: bounce recorded", "recipient", r.String(), "client", client, "hard", hard, "hardBounceCount", rec.HardBounceCount)
	if hard {
		h.count("hard_bounce")
	} else {
		h.count("soft_bounce")
	}
	if rec.HardBounceCount <= h.threshold {
		return nil
	}
	// The unsubscription from all services the API would make with the
	// code, which was checked at RCPT: it is not charged to (nor stopped
	// by) the budgets of the server that delivered this last bounce. The
	// state is checked again there.
	reply, err := h.subs.UnsubscribeBounced(ctx, who, sub.ID.Hex(), h.httpHost)
	if err == nil && reply != nil {
		err = reply.Err
	}
	if err != nil {
		// The record stays active and over the threshold: the sender
		// retries, and the next bounce tries again.
		return err
	}
	h.log.Info("inbound mail: address unsubscribed from all services after hard bounces", "recipient", r.String(), "hardBounceCount", rec.HardBounceCount)
	h.known.drop(sub.UserChannelID)
	return bounces.UpdateByID(ctx, rec.ID.Hex(), bson.D{{Key: "$set", Value: bson.D{
		{Key: "state", Value: notify.BounceDeleted},
		{Key: "updatedBy", Value: who.Fields()},
	}}})
}

// activeBounce finds the active bounce record of an email address. The
// record last used for the address is read by id, the one query the
// embedded store answers from an index; it is used while it is still the
// address's and active (another node or the API may have closed it), and
// otherwise the collection is searched.
func (h *handler) activeBounce(ctx context.Context, address string) (*notify.Bounce, error) {
	if id, ok := h.known.get(address); ok {
		rec, err := h.store.Bounces().FindByID(ctx, id.Hex())
		switch {
		case err == nil && rec.State == notify.BounceActive && rec.Channel == notify.ChannelEmail && rec.UserChannelID == address:
			return rec, nil
		case err != nil && !errors.Is(err, notify.ErrNotFound):
			return nil, err
		}
		h.known.drop(address)
	}
	rec, err := h.store.Bounces().FindOne(ctx, mongostore.Query{Filter: bson.D{
		{Key: "channel", Value: notify.ChannelEmail},
		{Key: "state", Value: notify.BounceActive},
		{Key: "userChannelId", Value: address},
	}})
	if err == nil {
		h.known.put(address, rec.ID)
	}
	return rec, err
}

// maxKnownBounces bounds the addresses whose bounce record id a node
// remembers.
const maxKnownBounces = 10000

// knownBounces remembers, per address, the id of the bounce record last
// used: a hint, always checked against the store.
type knownBounces struct {
	mu  sync.Mutex
	ids map[string]notify.ID
}

func (k *knownBounces) get(address string) (notify.ID, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	id, ok := k.ids[address]
	return id, ok
}

func (k *knownBounces) put(address string, id notify.ID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ids == nil || len(k.ids) >= maxKnownBounces {
		k.ids = map[string]notify.ID{} // forgetting costs one search each
	}
	k.ids[address] = id
}

func (k *knownBounces) drop(address string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.ids, address)
}

// keepNewest keeps msgs (newest first) within MaxStoredBounceBytes, and
// always the newest.
func keepNewest(msgs []notify.BounceMessage) []notify.BounceMessage {
	total := 0
	for i, m := range msgs {
		total += len(m.Message)
		if i > 0 && total > MaxStoredBounceBytes {
			return msgs[:i]
		}
	}
	return msgs
}

func messagesValue(msgs []notify.BounceMessage) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		out[i] = notify.Fields{{Key: "date", Value: m.Date.UTC()}, {Key: "message", Value: m.Message}}
	}
	return out
}
