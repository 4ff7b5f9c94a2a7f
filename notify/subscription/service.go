// Package subscription is the subscription domain service of the
// notification service: creating a subscription (with the per-service
// configuration merged over the static subscription config, codes generated
// from their regexes, an RSA-encrypted confirmation code decrypted, and the
// confirmation request or duplicated-subscription message sent), changing its
// address, verifying it, unsubscribing (with additionalServices and the
// acknowledgement message), undoing an unsubscription and the Swift SMS
// keyword webhook. Wrong codes are limited per caller and per subscription
// (AttemptLimits), and so is what a caller who is not an administrator
// makes the service send to others: subscriptions per client,
// confirmation requests per address, SMS numbers by pattern (limits.go).
//
// The HTTP layer (notify/httpapi) parses requests and writes answers; this
// package decides and stores. Messages go out through notify/channel, mail
// merged by notify/mailmerge with {subscription::…} tokens left untouched in
// confirmation and duplicated-subscription messages (the seed's v5 rule).
package subscription

import (
	"log/slog"
	"time"

	"github.com/govkit/govkit/internal/ratelimit"
	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/jmesfilter"
	"github.com/govkit/govkit/notify/mongostore"
)

// Options are what a Service needs.
type Options struct {
	Config  *config.Config
	Store   *mongostore.Store
	Channel *channel.Sender
	// Filters validates broadcastPushNotificationFilter when written.
	Filters *jmesfilter.Engine
	// Attempts keeps the counters of wrong codes (see AttemptLimits); nil
	// keeps them in this process's memory. Give a Redis store
	// (ratelimit.NewRedis) when several nodes serve the API, so that the
	// budgets hold across them.
	Attempts      ratelimit.Store
	AttemptLimits AttemptLimits
	Logger        *slog.Logger
}

// Service runs the subscription operations. It is safe for concurrent use.
type Service struct {
	cfg      *config.Config
	store    *mongostore.Store
	ch       *channel.Sender
	filters  *jmesfilter.Engine
	attempts *attempts
	// counters keep the budgets of what callers make the service send
	// (see creationLimits): the store attempts use.
	counters ratelimit.Store
	// memory is the in-process counter store made when Options.Attempts
	// is nil; Close stops its sweeper.
	memory *ratelimit.Memory
	log    *slog.Logger
}

// New returns a Service.
func New(o Options) *Service {
	s := &Service{cfg: o.Config, store: o.Store, ch: o.Channel, filters: o.Filters, log: o.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	store := o.Attempts
	if store == nil {
		s.memory = ratelimit.NewMemory(time.Minute)
		store = s.memory
	}
	s.attempts = newAttempts(store, o.AttemptLimits, s.log)
	s.counters = store
	return s
}

// Close releases what New started (the in-process counters' sweeper).
func (s *Service) Close() error {
	if s.memory != nil {
		return s.memory.Close()
	}
	return nil
}
