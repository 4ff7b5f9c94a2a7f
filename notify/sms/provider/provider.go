// Package provider builds the SMS sender the original service's config
// asks for: `sms.provider` (twilio, the default; swift; vonage) with its
// object under `sms.providerSettings`.
package provider

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/govkit/govkit/notify/sms"
	"github.com/govkit/govkit/notify/sms/swift"
	"github.com/govkit/govkit/notify/sms/twilio"
	"github.com/govkit/govkit/notify/sms/vonage"
)

// Names are the accepted values of sms.provider.
var Names = []string{"twilio", "swift", "vonage"}

// New returns the sender for provider ("" means twilio) configured from
// providerSettings (the sms.providerSettings object). httpClient may be nil.
//
// Wrong types and an unknown provider are errors (the service refuses to
// start). Missing credentials are not: like the original, a deployment
// that never sends SMS needs none, so the returned sender then fails each
// Send with an error wrapping sms.ErrNotConfigured, and the missing keys
// come back as warnings for the start-up log.
func New(provider string, providerSettings map[string]any, httpClient *http.Client) (s sms.Sender, warnings []string, err error) {
	if provider == "" {
		provider = "twilio"
	}
	settings := func(name string) (map[string]any, error) {
		v, ok := providerSettings[name]
		if !ok || v == nil {
			return nil, nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("sms.providerSettings.%s: must be an object", name)
		}
		return m, nil
	}
	m, err := settings(provider)
	if err != nil {
		return nil, nil, err
	}
	var missing []string
	switch provider {
	case "twilio":
		c, err := twilio.ConfigFromSettings(m)
		if err != nil {
			return nil, nil, err
		}
		c.HTTPClient = httpClient
		if missing = c.Missing(); len(missing) == 0 {
			s, err = twilio.New(c)
		}
	case "swift":
		c, err := swift.ConfigFromSettings(m)
		if err != nil {
			return nil, nil, err
		}
		c.HTTPClient = httpClient
		if missing = c.Missing(); len(missing) == 0 {
			s, err = swift.New(c)
		}
	case "vonage":
		c, err := vonage.ConfigFromSettings(m)
		if err != nil {
			return nil, nil, err
		}
		c.HTTPClient = httpClient
		if missing = c.Missing(); len(missing) == 0 {
			s, err = vonage.New(c)
		}
	default:
		return nil, nil, fmt.Errorf("sms.provider: %q is not one of %s", provider, strings.Join(Names, ", "))
	}
	if err != nil {
		return nil, nil, err
	}
	if len(missing) > 0 {
		err := fmt.Errorf("%w: sms.provider is %s but %s not set", sms.ErrNotConfigured, provider, strings.Join(missing, ", "))
		return unconfigured{err}, []string{err.Error()}, nil
	}
	return s, nil, nil
}

type unconfigured struct{ err error }

func (u unconfigured) Send(context.Context, sms.Message) error { return u.err }
