package subscription

import (
	"context"
	"fmt"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/channel"
	"github.com/govkit/govkit/notify/mailmerge"
)

// mergeInput is what the templates of a subscription's messages may use.
func (s *Service) mergeInput(sub *notify.Subscription, httpHost string, ignoreSubscriptionData bool) *mailmerge.Input {
	subHost, _ := sub.Extra.String("httpHost")
	code, _ := sub.ConfirmationRequest.String("confirmationCode")
	in := &mailmerge.Input{
		ServiceName:        sub.ServiceName,
		SubscriptionID:     sub.ID.Hex(),
		ConfirmationCode:   code,
		UnsubscriptionCode: sub.UnsubscriptionCode,
		HTTPHost: mailmerge.ResolveHTTPHost(mailmerge.HostSources{
			Config: s.cfg.HTTPHost, Request: httpHost, Subscription: subHost,
		}),
		RestAPIRoot:            s.cfg.RestAPIRoot,
		SubscriptionData:       notify.PlainValue(sub.Data),
		IgnoreSubscriptionData: ignoreSubscriptionData,
	}
	if sub.UnsubscribedAdditionalServices != nil {
		in.UnsubscribedServiceNames = sub.UnsubscribedAdditionalServices.Names
	}
	return in
}

func merge(tmpl string, in *mailmerge.Input) string {
	if tmpl == "" {
		return ""
	}
	return mailmerge.Merge(tmpl, in)
}

// sendConfirmation sends the confirmation request of an unconfirmed
// subscription whose request says sendRequest, or, when duplicate detection
// is on and the address already has a confirmed subscription to the service,
// the duplicated-subscription message instead. {subscription::…} tokens stay
// as written in both (the subscriber's data is not trusted yet).
func (s *Service) sendConfirmation(ctx context.Context, sub *notify.Subscription, m merged, httpHost string) error {
	send, _ := sub.ConfirmationRequest.Bool("sendRequest")
	if sub.State != notify.StateUnconfirmed || !send {
		return nil
	}
	in := s.mergeInput(sub, httpHost, true)
	str := func(k string) string { v, _ := sub.ConfirmationRequest.String(k); return v }
	msg := channel.Message{
		Channel:        channelOf(sub),
		To:             sub.UserChannelID,
		From:           str("from"),
		Subject:        merge(str("subject"), in),
		Text:           merge(str("textBody"), in),
		HTML:           merge(str("htmlBody"), in),
		SubscriptionID: sub.ID.Hex(),
	}
	if m.typed.DetectDuplicatedSubscription {
		n, err := s.store.Subscriptions().Count(ctx, sameAddress(sub))
		if err != nil {
			return err
		}
		if n > 0 {
			if t := m.typed.DuplicatedSubscriptionNotification[channelOf(sub)]; t != nil {
				msg.From = t.From
				msg.Text = merge(t.TextBody, in)
				// the original takes subject and HTML from the email template
				// whatever the channel; SMS ignores them anyway
				msg.Subject = merge(t.Subject, in)
				msg.HTML = merge(t.HTMLBody, in)
			}
		}
	}
	if err := s.ch.Send(channel.WithPriority(ctx, channel.PriorityConfirmation), msg); err != nil {
		s.log.Error("confirmation request not sent", "subscription", sub.ID.Hex(), "channel", msg.Channel, "err", err)
		return &Error{Status: 502, Message: fmt.Sprintf("the confirmation request could not be sent by %s", msg.Channel)}
	}
	return nil
}

// sendAcknowledgement sends the unsubscription acknowledgement configured
// for the subscription's channel. A failure is logged, not reported: the
// unsubscription itself has happened (as in the original).
func (s *Service) sendAcknowledgement(ctx context.Context, sub *notify.Subscription, m merged, httpHost string) {
	t := m.typed.AnonymousUnsubscription.Acknowledgements.Notification[channelOf(sub)]
	if t == nil {
		return
	}
	in := s.mergeInput(sub, httpHost, false)
	msg := channel.Message{
		Channel:        channelOf(sub),
		To:             sub.UserChannelID,
		From:           t.From,
		Subject:        merge(t.Subject, in),
		Text:           merge(t.TextBody, in),
		HTML:           merge(t.HTMLBody, in),
		SubscriptionID: sub.ID.Hex(),
	}
	if err := s.ch.Send(channel.WithPriority(ctx, channel.PriorityAcknowledgement), msg); err != nil {
		s.log.Warn("unsubscription acknowledgement not sent", "subscription", sub.ID.Hex(), "channel", msg.Channel, "err", err)
	}
}
