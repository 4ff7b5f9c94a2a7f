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

// Composed is a message merged for one recipient, as it is handed to the
// sender: Preview shows it, sendTo sends it.
type Composed struct {
	Channel string
	To      string
	From    string
	Subject string // email only
	Text    string
	HTML    string // email only
	// in is the merge input, for the email's unsubscribe headers.
	in *mailmerge.Input
}

// compose merges the notification's message for one recipient. sub may be
// nil (a unicast that skipped the subscription check).
func (d *Dispatcher) compose(p *push, sub *notify.Subscription, to string) (Composed, error) {
	in := d.input(p, sub)
	merge := func(tmpl string) string {
		if tmpl == "" {
			return ""
		}
		return mailmerge.Merge(tmpl, in)
	}
	c := Composed{Channel: p.n.Channel, To: to, in: in}
	switch p.n.Channel {
	case notify.ChannelSMS:
		c.Text = merge(p.text)
	case notify.ChannelEmail:
		c.From, c.Subject, c.Text, c.HTML = p.from, merge(p.subject), merge(p.text), merge(p.html)
	default:
		return Composed{}, fmt.Errorf("channel %q cannot be sent", p.n.Channel)
	}
	return c, nil
}

// sendTo merges the notification's message for one recipient and sends it on
// the notification's channel.
func (d *Dispatcher) sendTo(ctx context.Context, p *push, sub *notify.Subscription, to string) error {
	c, err := d.compose(p, sub, to)
	if err != nil {
		return err
	}
	switch c.Channel {
	case notify.ChannelSMS:
		if d.o.SMS == nil {
			return errNoSender
		}
		return d.o.SMS.Send(ctx, sms.Message{To: to, Text: c.Text, SubscriptionID: c.in.SubscriptionID})
	default:
		if d.o.Email == nil {
			return errNoSender
		}
		m := email.Message{From: c.From, To: to, Subject: c.Subject, Text: c.Text, HTML: c.HTML}
		m.Push = &email.Push{ListID: email.ListID(p.host, p.n.ServiceName)}
		if sub != nil {
			// Without a subscription there is nothing to unsubscribe from:
			// no List-Unsubscribe, no bounce address.
			m.Push.UnsubscribeURL = mailmerge.Merge("{unsubscription_url}", c.in)
			m.Push.SubscriptionID = c.in.SubscriptionID
			m.Push.UnsubscriptionCode = c.in.UnsubscriptionCode
		}
		return d.o.Email.Send(ctx, m)
	}
}

// Preview returns the message a push notification n would send to the
// subscriber sub, merged by the code that sends it (the same tokens, the
// same {http_host} resolution: the notification's httpHost, else the
// config's, else host). Nothing is sent or stored. The caller checks that
// sub may receive n (service and channel); the broadcast filters are not
// applied: a preview shows the message, not whether it would be sent.
func (d *Dispatcher) Preview(n *notify.Notification, sub *notify.Subscription, host string) (Composed, error) {
	h := mailmerge.ResolveHTTPHost(mailmerge.HostSources{Notification: n.HTTPHost, Config: d.o.HTTPHost, Request: host})
	to := n.UserChannelID
	if sub != nil {
		to = sub.UserChannelID
	}
	return d.compose(newPush(n, h), sub, to)
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
