package channel

import (
	"context"
	"fmt"

	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/sms"
)

// Priority orders sends waiting for a throttle, lowest first, as the
// original's queue priorities do.
type Priority int

// Priorities of the original.
const (
	PriorityConfirmation    Priority = 1 // subscription confirmation requests
	PriorityAcknowledgement Priority = 3 // unsubscription acknowledgements
	PriorityNotification    Priority = 5 // notifications, the default
)

type priorityKey struct{}

// WithPriority marks the sends made with ctx as of priority p.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityOf returns the priority WithPriority set, else
// PriorityNotification.
func PriorityOf(ctx context.Context) Priority {
	if p, ok := ctx.Value(priorityKey{}).(Priority); ok {
		return p
	}
	return PriorityNotification
}

// Limiter spaces sends: Wait returns when the caller may send.
// *queue.Throttle implements it, cluster-wide.
type Limiter interface {
	Wait(ctx context.Context, priority int) error
}

// Throttle makes every send on a channel wait for its limiter first; a
// nil limiter leaves the channel as it is (a disabled throttle costs
// nothing). The senders dispatch takes from s are throttled too.
func (s *Sender) Throttle(emailLimit, smsLimit Limiter) {
	if emailLimit != nil && s.Email != nil {
		s.Email = throttledEmail{s.Email, emailLimit}
	}
	if smsLimit != nil && s.SMS != nil {
		s.SMS = throttledSMS{s.SMS, smsLimit}
	}
}

type throttledEmail struct {
	EmailSender
	l Limiter
}

func (t throttledEmail) Send(ctx context.Context, m email.Message) error {
	if err := t.l.Wait(ctx, int(PriorityOf(ctx))); err != nil {
		return fmt.Errorf("email throttle: %w", err)
	}
	return t.EmailSender.Send(ctx, m)
}

type throttledSMS struct {
	sms.Sender
	l Limiter
}

func (t throttledSMS) Send(ctx context.Context, m sms.Message) error {
	if err := t.l.Wait(ctx, int(PriorityOf(ctx))); err != nil {
		return fmt.Errorf("sms throttle: %w", err)
	}
	return t.Sender.Send(ctx, m)
}
