// Package twilio sends SMS through Twilio's Messages API, with the request
// the original service's Twilio SDK makes for messages.create({to, from,
// body}): POST {base}/2010-04-01/Accounts/{AccountSid}/Messages.json with
// HTTP basic auth AccountSid:AuthToken and the form fields To, From, Body.
package twilio

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/sms"
)

// DefaultBaseURL is Twilio's REST API host.
const DefaultBaseURL = "https://api.twilio.com"

// Config is sms.providerSettings.twilio plus what tests override.
type Config struct {
	AccountSID string // accountSid
	AuthToken  string // authToken
	FromNumber string // fromNumber
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// HTTPClient defaults to one with sms.DefaultTimeout.
	HTTPClient *http.Client
}

// Missing names the required settings that are empty, as config keys.
func (c Config) Missing() []string {
	var m []string
	if c.AccountSID == "" {
		m = append(m, "sms.providerSettings.twilio.accountSid")
	}
	if c.AuthToken == "" {
		m = append(m, "sms.providerSettings.twilio.authToken")
	}
	if c.FromNumber == "" {
		m = append(m, "sms.providerSettings.twilio.fromNumber")
	}
	return m
}

// Sender sends through one Twilio account.
type Sender struct {
	cfg      Config
	endpoint string
}

// New checks cfg and returns a Sender.
func New(cfg Config) (*Sender, error) {
	if m := cfg.Missing(); len(m) > 0 {
		return nil, fmt.Errorf("%w: %s required", sms.ErrNotConfigured, strings.Join(m, ", "))
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: sms.DefaultTimeout}
	}
	return &Sender{
		cfg:      cfg,
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/2010-04-01/Accounts/" + url.PathEscape(cfg.AccountSID) + "/Messages.json",
	}, nil
}

// Send implements sms.Sender.
func (s *Sender) Send(ctx context.Context, m sms.Message) error {
	form := url.Values{}
	form.Set("To", m.To)
	form.Set("From", s.cfg.FromNumber)
	form.Set("Body", m.Text)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.SetBasicAuth(s.cfg.AccountSID, s.cfg.AuthToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if err := notify.SendStarting(ctx); err != nil {
		return err
	}
	res, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return sms.RequestError("twilio", "create message", err)
	}
	defer res.Body.Close()
	body, err := sms.ReadBody(res.Body)
	if err != nil {
		return sms.RequestError("twilio", "read answer", err)
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return nil
	}
	// Twilio's error body: {"code": 21211, "message": "...", "more_info": "...", "status": 400}
	var e struct {
		Code    json.Number `json:"code"`
		Message string      `json:"message"`
	}
	pe := &sms.ProviderError{Provider: "twilio", StatusCode: res.StatusCode, Permanent: sms.PermanentStatus(res.StatusCode)}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		pe.Code, pe.Message = e.Code.String(), e.Message
	} else {
		pe.Message = sms.Snippet(body)
	}
	if pe.Message == "" {
		pe.Message = http.StatusText(res.StatusCode)
	}
	return pe
}

// ConfigFromSettings reads sms.providerSettings.twilio.
func ConfigFromSettings(m map[string]any) (Config, error) {
	var c Config
	err := sms.ReadSettings("sms.providerSettings.twilio", m,
		sms.Setting{Key: "accountSid", Dst: &c.AccountSID},
		sms.Setting{Key: "authToken", Dst: &c.AuthToken},
		sms.Setting{Key: "fromNumber", Dst: &c.FromNumber})
	return c, err
}
