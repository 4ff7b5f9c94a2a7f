// Package channel sends one finished (already mail-merged) message to a
// subscriber's address on its channel: email through notify/email, SMS
// through the provider notify/sms/provider picks from config. The
// subscription service (confirmations, acknowledgements) and the dispatcher
// (notifications) both send through it, so the choice of sender is made once,
// from config, at start.
package channel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/email"
	"github.com/govkit/govkit/notify/sms"
	"github.com/govkit/govkit/notify/sms/provider"
)

// EmailSender sends one mail; *email.Sender implements it.
type EmailSender interface {
	Send(ctx context.Context, m email.Message) error
}

// Message is one message to one address.
type Message struct {
	// Channel is notify.ChannelEmail or notify.ChannelSMS.
	Channel string
	// To is the subscription's userChannelId.
	To string
	// From, Subject and HTML are used by email only.
	From    string
	Subject string
	Text    string
	HTML    string
	// Push marks a push notification mail (list headers, bounce address).
	Push *email.Push
	// SubscriptionID is sent with SMS (Swift's Reference).
	SubscriptionID string
}

// ErrUnknownChannel is returned for a channel other than email and sms.
var ErrUnknownChannel = errors.New("channel must be email or sms")

// Sender sends Messages. It is safe for concurrent use.
type Sender struct {
	Email EmailSender
	SMS   sms.Sender
	close func() error
}

// Send delivers m on its channel.
func (s *Sender) Send(ctx context.Context, m Message) error {
	switch m.Channel {
	case notify.ChannelEmail, "":
		if s.Email == nil {
			return errors.New("no email sender")
		}
		return s.Email.Send(ctx, email.Message{From: m.From, To: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML, Push: m.Push})
	case notify.ChannelSMS:
		if s.SMS == nil {
			return errors.New("no SMS sender")
		}
		return s.SMS.Send(ctx, sms.Message{To: m.To, Text: m.Text, SubscriptionID: m.SubscriptionID})
	}
	return fmt.Errorf("%w: %q", ErrUnknownChannel, m.Channel)
}

// Close releases the senders' connections.
func (s *Sender) Close() error {
	if s.close != nil {
		return s.close()
	}
	return nil
}

// Options adjust FromConfig.
type Options struct {
	// SMTP replaces email.smtp (govkit dev and tests point it at the mail
	// catcher or an SMTP sink).
	SMTP *email.SMTPConfig
	// TestMail keeps the public test-mail account when no SMTP host is
	// configured (the configuration collection, as the original).
	TestMail email.AccountStore
	// SMS replaces the configured SMS provider (govkit dev logs instead).
	SMS sms.Sender
	// HTTPClient is used by SMS providers; nil means their default.
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// FromConfig builds the senders config asks for: email.smtp (or, without a
// host, the public test-mail service, contacted at the first send only) and
// sms.provider with sms.providerSettings. Warnings name settings that are
// accepted but not acted on, or missing SMS credentials.
func FromConfig(cfg *config.Config, o Options) (*Sender, []string, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	addr := email.Addressing{
		InboundDomain:          cfg.Email.InboundSMTPServer.Domain,
		Bounce:                 cfg.Email.Bounce.Enabled,
		ListUnsubscribeByEmail: cfg.Email.ListUnsubscribeByEmail.Enabled,
	}
	var warnings []string
	var es *email.Sender
	switch {
	case o.SMTP != nil:
		s, err := email.New(*o.SMTP, addr, email.WithLogger(log))
		if err != nil {
			return nil, nil, fmt.Errorf("email.smtp: %w", err)
		}
		es = s
	case cfg.Email.SMTP != nil && cfg.Email.SMTP.Host != "":
		sc, w, err := email.ParseSMTP(cfg.Email.SMTP.Raw)
		if err != nil {
			return nil, nil, err
		}
		warnings = append(warnings, w...)
		s, err := email.New(sc, addr, email.WithLogger(log))
		if err != nil {
			return nil, nil, fmt.Errorf("email.smtp: %w", err)
		}
		es = s
	default:
		warnings = append(warnings, "email.smtp.host is not set: mail goes to the public test-mail service (ethereal.email); configure email.smtp for production")
		es = email.NewTestMail(&email.Ethereal{Store: o.TestMail}, addr, email.WithLogger(log))
	}
	smsSender := o.SMS
	if smsSender == nil {
		settings, _ := cfg.Get("sms.providerSettings").(map[string]any)
		s, w, err := provider.New(cfg.SMS.Provider, settings, o.HTTPClient)
		if err != nil {
			_ = es.Close()
			return nil, nil, fmt.Errorf("sms: %w", err)
		}
		warnings = append(warnings, w...)
		smsSender = s
	}
	return &Sender{Email: es, SMS: smsSender, close: es.Close}, warnings, nil
}
