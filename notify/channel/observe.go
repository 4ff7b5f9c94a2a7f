package channel

import (
	"context"

	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/sms"
)

// Observe has f told the result of every send on each channel (nil, or
// the error), for the service's metrics. Call it before Throttle, so that
// f sees sends that reached the server or the provider, not waits for a
// throttle that gave up.
func (s *Sender) Observe(f func(channel string, err error)) {
	if s.Email != nil {
		s.Email = observedEmail{s.Email, f}
	}
	if s.SMS != nil {
		s.SMS = observedSMS{s.SMS, f}
	}
}

type observedEmail struct {
	EmailSender
	f func(string, error)
}

func (o observedEmail) Send(ctx context.Context, m email.Message) error {
	err := o.EmailSender.Send(ctx, m)
	o.f("email", err)
	return err
}

type observedSMS struct {
	sms.Sender
	f func(string, error)
}

func (o observedSMS) Send(ctx context.Context, m sms.Message) error {
	err := o.Sender.Send(ctx, m)
	o.f("sms", err)
	return err
}
