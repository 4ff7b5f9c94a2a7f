// Package sms holds what every SMS provider shares: the Message the
// notification service sends, the Sender interface its senders implement,
// and the ProviderError they return. (`govkit dev` sends no SMS: its sender
// is the mail catcher's, notify/mailcatcher.)
//
// Each provider's HTTP API lives in its own package — notify/sms/twilio,
// notify/sms/swift, notify/sms/vonage — speaking the request shapes the
// original service's provider SDKs send; notify/sms/provider picks one from
// the original's `sms.provider` and `sms.providerSettings` config.
package sms

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is one text message.
type Message struct {
	// To is the destination phone number (the subscription's userChannelId).
	To   string
	Text string
	// SubscriptionID identifies the subscription the message is for; Swift
	// sends it as Reference so keyword replies map back to it. Empty for
	// messages not tied to a subscription.
	SubscriptionID string
}

// Sender sends one Message. Implementations are safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// DefaultTimeout bounds one provider HTTP call when no client is given.
const DefaultTimeout = 15 * time.Second

// ErrNotConfigured is wrapped when the chosen provider lacks settings.
var ErrNotConfigured = errors.New("SMS provider is not configured")

// ProviderError is a failure the provider reported, with its own words.
type ProviderError struct {
	Provider string
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Code is the provider's error code, if it gave one (Twilio's numeric
	// code, Vonage's message status).
	Code string
	// Message is the provider's error text.
	Message string
	// Permanent is true when sending the same message again will fail again
	// (bad number, bad credentials, rejected content); false for rate
	// limits and server trouble.
	Permanent bool
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: HTTP %d", e.Provider, e.StatusCode)
	if e.Code != "" {
		fmt.Fprintf(&b, " (code %s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// IsPermanent reports whether err says retrying cannot help: a permanent
// ProviderError or a missing configuration.
func IsPermanent(err error) bool {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Permanent
	}
	return errors.Is(err, ErrNotConfigured)
}

// PermanentStatus reports whether an HTTP error status means the request
// itself is wrong: 4xx except timeouts and rate limiting.
func PermanentStatus(code int) bool {
	return code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests
}

// RequestError reports a request that got no answer (refused, timed out)
// without its URL, which for some providers carries an account key.
// It is transient.
func RequestError(provider, what string, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%s: %s: %w", provider, what, err)
}

// ReadBody reads at most 64 KiB of a provider answer.
func ReadBody(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, 64<<10))
}

// Snippet shortens a provider's answer for an error message.
func Snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// Setting binds one key of a provider's settings to the field it fills.
type Setting struct {
	Key string
	Dst *string
}

// ReadSettings copies string settings out of m (a provider's object under
// sms.providerSettings), naming prefix.key in errors. Numbers are taken as
// their decimal text: a phone number may be written as a number in a .js
// config.
func ReadSettings(prefix string, m map[string]any, settings ...Setting) error {
	var errs []error
	for _, s := range settings {
		switch v := m[s.Key].(type) {
		case nil:
		case string:
			*s.Dst = strings.TrimSpace(v)
		case float64:
			*s.Dst = strconv.FormatFloat(v, 'f', -1, 64)
		case int64:
			*s.Dst = strconv.FormatInt(v, 10)
		case int:
			*s.Dst = strconv.Itoa(v)
		default:
			errs = append(errs, fmt.Errorf("%s.%s: must be a string", prefix, s.Key))
		}
	}
	return errors.Join(errs...)
}
