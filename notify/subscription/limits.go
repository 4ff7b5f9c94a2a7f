package subscription

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
)

// What a caller who is not an administrator makes the service send to
// someone else is bounded (config keys of ours, see config.Guard):
//
//   - subscription.creationLimit: subscriptions such a caller creates, per
//     client (its address, an IPv6 one by its /64; a logged-in user by its
//     id). Without it one address made the service mail 40 confirmation
//     requests in 0.1 s.
//   - subscription.confirmationRequestLimit: confirmation requests (and
//     duplicated-subscription messages) sent to one address, whoever asks
//     — so many clients cannot flood one mailbox or phone either.
//   - sms.allowedNumberRegex: the numbers an SMS subscription may have, so
//     that confirmations cannot be sent to premium-rate numbers (SMS
//     pumping) or countries the service does not serve.
//
// A spent budget is 429 with Retry-After, before anything is stored or
// sent. The counters live where the wrong-code counters do (Redis when the
// service has a queue backend, so they hold across nodes). Administrators
// are not limited.

// TooManyError is a refusal because a budget of subscriptions or
// confirmation messages is spent: 429, with the time until it renews.
type TooManyError struct {
	What string // "subscriptions from this client", …
	Wait time.Duration
}

func (e *TooManyError) Error() string {
	return fmt.Sprintf("too many %s; try again in %d seconds", e.What, retrySeconds(e.Wait))
}

// StatusCode is 429.
func (e *TooManyError) StatusCode() int { return http.StatusTooManyRequests }

// RetryAfter is the time until the budget renews.
func (e *TooManyError) RetryAfter() time.Duration { return e.Wait }

// spend counts one event against key under l and refuses it once l is
// spent. When the counters do not answer, it is logged and allowed, as the
// wrong-code budgets do.
func (s *Service) spend(ctx context.Context, key string, l config.Limit, what string) error {
	if !l.Enabled {
		return nil
	}
	d, err := ratelimit.Allow(ctx, s.counters, key, ratelimit.Rule{Limit: l.Max, Window: l.Period()})
	if err != nil {
		s.log.Error("notify: subscription counters unavailable", "err", err)
		return nil
	}
	if !d.Allowed {
		return &TooManyError{What: what, Wait: d.ResetIn}
	}
	return nil
}

// spendCreation counts a subscription a caller who is not an
// administrator creates.
func (s *Service) spendCreation(ctx context.Context, who notify.UserProfile) error {
	if !limited(who) {
		return nil
	}
	return s.spend(ctx, "notify:create:client:"+callerKey(who), s.cfg.Guard.CreationLimit, "subscriptions from this client")
}

// checkNumber refuses, for a caller who is not an administrator, an SMS
// subscription whose number sms.allowedNumberRegex does not admit.
func (s *Service) checkNumber(who notify.UserProfile, sub *notify.Subscription) error {
	re := s.cfg.Guard.SMSNumber
	if !limited(who) || re == nil || channelOf(sub) != notify.ChannelSMS || re.MatchString(plainNumber(sub.UserChannelID)) {
		return nil
	}
	return &notify.FieldError{Field: "userChannelId", Rule: "must be a phone number this service sends SMS to (sms.allowedNumberRegex)"}
}

// spendConfirmation counts, for a caller who is not an administrator, the
// confirmation request (or duplicated-subscription message) sub is about
// to make the service send to its address, and refuses it once that
// address's budget is spent.
func (s *Service) spendConfirmation(ctx context.Context, who notify.UserProfile, sub *notify.Subscription) error {
	if !limited(who) {
		return nil
	}
	// a new record's state is still unset: unconfirmed once stored
	if send, _ := sub.ConfirmationRequest.Bool("sendRequest"); !send || (sub.State != "" && sub.State != notify.StateUnconfirmed) {
		return nil
	}
	return s.spend(ctx, "notify:confirm:to:"+recipientKey(sub), s.cfg.Guard.ConfirmationLimit, "confirmation requests to this address")
}

// plainNumber is a phone number without the spaces, dashes, dots and
// parentheses people write in it; a leading + stays.
func plainNumber(n string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '.', '(', ')', '\t':
			return -1
		}
		return r
	}, strings.TrimSpace(n))
}

// recipientKey names an address for its budget: the channel and a hash of
// the address as mail and SMS reach it (an email address without case, a
// number with its digits only), so that spellings of one address share
// one budget and no address is kept in the counters' store.
func recipientKey(sub *notify.Subscription) string {
	ch := channelOf(sub)
	addr := strings.ToLower(strings.TrimSpace(sub.UserChannelID))
	if ch == notify.ChannelSMS {
		addr = strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, addr)
	}
	h := sha256.Sum256([]byte(addr))
	return ch + ":" + hex.EncodeToString(h[:16])
}
