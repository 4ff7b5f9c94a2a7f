// Package subscription is the subscription domain service of the
// notification service: creating a subscription (with the per-service
// configuration merged over the static subscription config, codes generated
// from their regexes, an RSA-encrypted confirmation code decrypted, and the
// confirmation request or duplicated-subscription message sent), changing its
// address, verifying it, unsubscribing (with additionalServices and the
// acknowledgement message), undoing an unsubscription and the Swift SMS
// keyword webhook.
//
// The HTTP layer (notify/httpapi) parses requests and writes answers; this
// package decides and stores. Messages go out through notify/channel, mail
// merged by notify/mailmerge with {subscription::…} tokens left untouched in
// confirmation and duplicated-subscription messages (the seed's v5 rule).
package subscription

import (
	"log/slog"

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
	Logger  *slog.Logger
}

// Service runs the subscription operations. It is safe for concurrent use.
type Service struct {
	cfg     *config.Config
	store   *mongostore.Store
	ch      *channel.Sender
	filters *jmesfilter.Engine
	log     *slog.Logger
}

// New returns a Service.
func New(o Options) *Service {
	s := &Service{cfg: o.Config, store: o.Store, ch: o.Channel, filters: o.Filters, log: o.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}
