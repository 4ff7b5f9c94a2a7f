package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/mailmerge"
	"github.com/govkit/govkit/notify/sms"
)

// push is what every message of one notification shares: merged once per
// notification, not per subscriber.
type push struct {
	n *notify.Notification
	// host is the resolved {http_host}.
	host string
	// started is when sending began: bounce records compare bounce dates
	// with it.
	started time.Time
	// data is the notification's data as plain values, for merging and
	// filtering.
	data                      any
	from, subject, text, html string
	// overBudget is set once the notification's filter went over its
	// evaluation budget, so that it is logged once per broadcast.
	overBudget atomic.Bool
}

func newPush(n *notify.Notification, host string) *push {
	p := &push{n: n, host: host}
	if n.Data != nil {
		p.data = notify.PlainValue(n.Data)
	}
	p.from, _ = n.Message.String("from")
	p.subject, _ = n.Message.String("subject")
	p.text, _ = n.Message.String("textBody")
	p.html, _ = n.Message.String("htmlBody")
	return p
}

// input is the mail merge input for one subscriber; sub may be nil (a
// unicast that skipped the subscription check).
func (d *Dispatcher) input(p *push, sub *notify.Subscription) *mailmerge.Input {
	in := &mailmerge.Input{
		ServiceName:      p.n.ServiceName,
		HTTPHost:         p.host,
		RestAPIRoot:      d.o.RestAPIRoot,
		NotificationData: p.data,
	}
	if sub == nil {
		return in
	}
	if sub.ServiceName != "" {
		in.ServiceName = sub.ServiceName
	}
	in.SubscriptionID = sub.ID.Hex()
	in.UnsubscriptionCode = sub.UnsubscriptionCode
	in.ConfirmationCode, _ = sub.ConfirmationRequest.String("confirmationCode")
	if sub.UnsubscribedAdditionalServices != nil {
		in.UnsubscribedServiceNames = sub.UnsubscribedAdditionalServices.Names
	}
	if sub.Data != nil {
		in.SubscriptionData = notify.PlainValue(sub.Data)
	}
	return in
}

// sendTo merges the notification's message for one recipient and sends it on
// the notification's channel.
func (d *Dispatcher) sendTo(ctx context.Context, p *push, sub *notify.Subscription, to string) error {
	in := d.input(p, sub)
	merge := func(tmpl string) string {
		if tmpl == "" {
			return ""
		}
		return mailmerge.Merge(tmpl, in)
	}
	switch p.n.Channel {
	case notify.ChannelSMS:
		if d.o.SMS == nil {
			return errNoSender
		}
		return d.o.SMS.Send(ctx, sms.Message{To: to, Text: merge(p.text), SubscriptionID: in.SubscriptionID})
	case notify.ChannelEmail:
		if d.o.Email == nil {
			return errNoSender
		}
		m := email.Message{From: p.from, To: to, Subject: merge(p.subject), Text: merge(p.text), HTML: merge(p.html)}
		m.Push = &email.Push{ListID: email.ListID(p.host, p.n.ServiceName)}
		if sub != nil {
			// Without a subscription there is nothing to unsubscribe from:
			// no List-Unsubscribe, no bounce address.
			m.Push.UnsubscribeURL = mailmerge.Merge("{unsubscription_url}", in)
			m.Push.SubscriptionID = in.SubscriptionID
			m.Push.UnsubscriptionCode = in.UnsubscriptionCode
		}
		return d.o.Email.Send(ctx, m)
	}
	return fmt.Errorf("channel %q cannot be sent", p.n.Channel)
}

// errorValue is how a send failure is shown in dispatch.failed: the
// sender's message plus the status it reported, as a document.
func errorValue(err error) notify.Fields {
	f := doc("message", err.Error())
	var pe *sms.ProviderError
	if errors.As(err, &pe) {
		if pe.StatusCode != 0 {
			f.Set("status", int32(pe.StatusCode))
		}
		if pe.Code != "" {
			f.Set("code", pe.Code)
		}
	}
	var se *email.SendError
	if errors.As(err, &se) {
		if se.Code != 0 {
			f.Set("responseCode", int32(se.Code))
		}
		if se.EnhancedCode != "" {
			f.Set("code", se.EnhancedCode)
		}
		f.Set("permanent", se.Permanent)
	}
	return f
}
