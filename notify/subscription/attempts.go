package subscription

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"time"

	"github.com/govkit/govkit/internal/clientip"
	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/notify"
)

// AttemptLimits bound wrong codes: confirmation codes (verify),
// unsubscription codes (unsubscribe in all its forms, undo) and the Swift
// webhook's shared key. Codes are five digits by default and subscription
// ids can be guessed, so without a bound the whole code space is tried in
// minutes.
//
// Two budgets count only failures:
//
//   - per client (the caller's address, an IPv6 one by its /64; a logged-in
//     user by its id):
//     PerClient wrong codes per Window, over every subscription, so one
//     attacker cannot walk through subscriptions instead;
//   - per subscription: PerSubscription wrong codes per Window, whoever
//     tries, so attackers with many addresses are bounded too. A right
//     code resets it.
//
// PerClient is the smaller of the two, so that one address can never spend
// a subscription's budget and lock its owner out; attackers with many
// addresses can, for one Window at most, and what they get for it is
// PerSubscription guesses in a space of 100,000. Administrators are not
// limited (they can read the codes anyway).
type AttemptLimits struct {
	PerClient       int
	PerSubscription int
	Window          time.Duration
}

// DefaultAttemptLimits: 8 wrong codes per client and 10 per subscription
// in 15 minutes. A person who mistypes a code a few times is never
// stopped; attackers get 960 guesses a day at one subscription (1% of a
// five-digit space), where they had 400 a second, and one address alone
// cannot lock a subscription's owner out.
var DefaultAttemptLimits = AttemptLimits{PerClient: 8, PerSubscription: 10, Window: 15 * time.Minute}

// TooManyAttemptsError is a refusal because a budget of wrong codes is
// spent: 429, with the time until it renews for Retry-After.
type TooManyAttemptsError struct {
	Wait time.Duration
}

func (e *TooManyAttemptsError) Error() string {
	return fmt.Sprintf("too many wrong codes; try again in %d seconds", retrySeconds(e.Wait))
}

// StatusCode is 429.
func (e *TooManyAttemptsError) StatusCode() int { return http.StatusTooManyRequests }

// RetryAfter is the time until the budget renews.
func (e *TooManyAttemptsError) RetryAfter() time.Duration { return e.Wait }

func retrySeconds(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }

// attempts applies AttemptLimits on a ratelimit.Store (in memory, or Redis
// so that every node shares the budgets).
type attempts struct {
	client, sub ratelimit.Failures
	log         *slog.Logger
}

func newAttempts(store ratelimit.Store, l AttemptLimits, log *slog.Logger) *attempts {
	if l.PerClient <= 0 {
		l.PerClient = DefaultAttemptLimits.PerClient
	}
	if l.PerSubscription <= 0 {
		l.PerSubscription = DefaultAttemptLimits.PerSubscription
	}
	if l.Window <= 0 {
		l.Window = DefaultAttemptLimits.Window
	}
	return &attempts{
		client: ratelimit.Failures{Store: store, Max: l.PerClient, Window: l.Window},
		sub:    ratelimit.Failures{Store: store, Max: l.PerSubscription, Window: l.Window},
		log:    log,
	}
}

// limited reports whether who's wrong codes are counted: everyone's but
// administrators'.
func limited(who notify.UserProfile) bool { return !isAdmin(who) }

// IPv6LimitPrefix is the network prefix by which IPv6 clients are counted:
// one subscriber is usually handed a whole /64, and counting each address
// would give one host 2^64 budgets.
const IPv6LimitPrefix = 64

// clientKey names the caller for its budget. The access rules give an
// anonymous caller its client address (behind trusted proxies) as
// securityId, counted by clientip.LimitKey; a logged-in user counts by its
// user id.
func clientKey(who notify.UserProfile) string { return "notify:codes:client:" + callerKey(who) }

// callerKey is strategy:id of the caller, an address counted by
// clientip.LimitKey: the part of every per-client budget's key that names
// the client.
func callerKey(who notify.UserProfile) string {
	id := who.SecurityID
	if who.AuthnStrategy == notify.AuthnIP {
		if a, err := netip.ParseAddr(id); err == nil {
			id = clientip.LimitKey(a, IPv6LimitPrefix)
		}
	}
	return string(who.AuthnStrategy) + ":" + id
}

func subKey(id notify.ID) string { return "notify:codes:subscription:" + id.Hex() }

// checkClient refuses a caller whose budget is spent.
func (a *attempts) checkClient(ctx context.Context, who notify.UserProfile) error {
	if !limited(who) {
		return nil
	}
	return a.check(ctx, &a.client, clientKey(who))
}

// checkSubscription refuses a code for a subscription whose budget is
// spent.
func (a *attempts) checkSubscription(ctx context.Context, who notify.UserProfile, id notify.ID) error {
	if !limited(who) {
		return nil
	}
	return a.check(ctx, &a.sub, subKey(id))
}

func (a *attempts) check(ctx context.Context, f *ratelimit.Failures, key string) error {
	blocked, wait, err := f.Blocked(ctx, key)
	if err != nil {
		// The counters live in Redis when it is configured: when it does
		// not answer, codes are still checked, unbounded, and it is said.
		a.log.Error("notify: wrong-code counters unavailable", "err", err)
		return nil
	}
	if blocked {
		return &TooManyAttemptsError{Wait: wait}
	}
	return nil
}

// wrong counts a wrong code against the caller and, when known, the
// subscription (the zero ID for the Swift key).
func (a *attempts) wrong(ctx context.Context, who notify.UserProfile, id notify.ID) {
	if !limited(who) {
		return
	}
	if err := a.client.Fail(ctx, clientKey(who)); err != nil {
		a.log.Error("notify: wrong-code counters unavailable", "err", err)
	}
	if !id.IsZero() {
		if err := a.sub.Fail(ctx, subKey(id)); err != nil {
			a.log.Error("notify: wrong-code counters unavailable", "err", err)
		}
	}
}

// right resets the subscription's budget after a right code.
func (a *attempts) right(ctx context.Context, who notify.UserProfile, id notify.ID) {
	if !limited(who) {
		return
	}
	if err := a.sub.Succeed(ctx, subKey(id)); err != nil {
		a.log.Error("notify: wrong-code counters unavailable", "err", err)
	}
}

// ErrWrongCode is a wrong unsubscription code given to CheckCode. It has
// been counted against the caller's and the subscription's budgets.
var ErrWrongCode = &Error{Status: http.StatusForbidden, Message: "wrong unsubscription code"}

// CheckCode checks an unsubscription code given outside the API — mail to
// the inbound SMTP server's un-{id}-{code} and bn-{id}-{code} addresses —
// against the same budgets as the API's codes, so that guessing by mail
// gets no more tries than guessing over HTTP: a caller or a subscription
// whose budget is spent is refused with *TooManyAttemptsError before
// anything is compared; a wrong code is ErrWrongCode and counts against
// both; a right one renews the subscription's budget and returns the
// subscription, in any state. The code matches as the API's unsubscribe
// matches it: equal, or anything when the subscription has none. An
// unknown id is a 404 *Error and counts against nobody, as on the API.
func (s *Service) CheckCode(ctx context.Context, who notify.UserProfile, id, code string) (*notify.Subscription, error) {
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
	if sub.UnsubscriptionCode != "" && subtle.ConstantTimeCompare([]byte(sub.UnsubscriptionCode), []byte(code)) != 1 {
		s.attempts.wrong(ctx, who, sub.ID)
		return nil, ErrWrongCode
	}
	s.attempts.right(ctx, who, sub.ID)
	return sub, nil
}
