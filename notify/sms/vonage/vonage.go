// Package vonage sends SMS through Vonage's (formerly Nexmo's) SMS API with
// the request the original service's Vonage SDK (@vonage/sms 1.19) makes
// for sms.send({to, from, text}): POST {base}/sms/json with HTTP basic auth
// apiKey:apiSecret and the JSON body {"to", "from", "text"}.
//
// Vonage answers HTTP 200 even when it refuses a message; the refusal is in
// messages[].status (anything but "0") and error-text. Like the SDK, a
// message is failed when any of its parts failed.
package vonage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/sms"
)

// DefaultBaseURL is Vonage's REST host.
const DefaultBaseURL = "https://rest.nexmo.com"

// Config is sms.providerSettings.vonage.
type Config struct {
	APIKey    string // apiKey
	APISecret string // apiSecret
	From      string // from
	// BaseURL defaults to DefaultBaseURL.
	BaseURL string
	// HTTPClient defaults to one with sms.DefaultTimeout.
	HTTPClient *http.Client
}

// Missing names the required settings that are empty, as config keys.
func (c Config) Missing() []string {
	var m []string
	if c.APIKey == "" {
		m = append(m, "sms.providerSettings.vonage.apiKey")
	}
	if c.APISecret == "" {
		m = append(m, "sms.providerSettings.vonage.apiSecret")
	}
	if c.From == "" {
		m = append(m, "sms.providerSettings.vonage.from")
	}
	return m
}

// Sender sends through one Vonage account.
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
	return &Sender{cfg: cfg, endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/sms/json"}, nil
}

type request struct {
	To   string `json:"to"`
	From string `json:"from"`
	Text string `json:"text"`
}

type answer struct {
	MessageCount string `json:"message-count"`
	Messages     []struct {
		Status    string `json:"status"`
		ErrorText string `json:"error-text"`
		MessageID string `json:"message-id"`
	} `json:"messages"`
	// Errors outside a message (bad credentials, bad request) come as an
	// RFC 7807 problem.
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

// transientStatus are the message statuses worth retrying: throttled,
// internal error, too many existing binds.
var transientStatus = map[string]bool{"1": true, "5": true, "10": true}

// Send implements sms.Sender.
func (s *Sender) Send(ctx context.Context, m sms.Message) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(request{To: m.To, From: s.cfg.From, Text: m.Text}); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint, bytes.NewReader(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
	if err != nil {
		return err
	}
	req.SetBasicAuth(s.cfg.APIKey, s.cfg.APISecret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if err := notify.SendStarting(ctx); err != nil {
		return err
	}
	res, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return sms.RequestError("vonage", "send sms", err)
	}
	defer res.Body.Close()
	raw, err := sms.ReadBody(res.Body)
	if err != nil {
		return sms.RequestError("vonage", "read answer", err)
	}
	var a answer
	parsed := json.Unmarshal(raw, &a) == nil
	if res.StatusCode < 200 || res.StatusCode >= 300 {
		pe := &sms.ProviderError{Provider: "vonage", StatusCode: res.StatusCode, Permanent: sms.PermanentStatus(res.StatusCode)}
		switch {
		case parsed && (a.Title != "" || a.Detail != ""):
			pe.Message = strings.TrimSpace(a.Title + ": " + a.Detail)
		default:
			pe.Message = sms.Snippet(raw)
		}
		if pe.Message == "" {
			pe.Message = http.StatusText(res.StatusCode)
		}
		return pe
	}
	if !parsed {
		return &sms.ProviderError{Provider: "vonage", StatusCode: res.StatusCode, Message: "unreadable answer: " + sms.Snippet(raw)}
	}
	if len(a.Messages) == 0 {
		return &sms.ProviderError{Provider: "vonage", StatusCode: res.StatusCode, Message: "answer lists no messages"}
	}
	var first *sms.ProviderError
	failed, permanent := 0, true
	for _, msg := range a.Messages {
		if msg.Status == "0" {
			continue
		}
		failed++
		if transientStatus[msg.Status] {
			permanent = false
		}
		if first == nil {
			first = &sms.ProviderError{Provider: "vonage", StatusCode: res.StatusCode, Code: msg.Status, Message: msg.ErrorText}
		}
	}
	if first == nil {
		return nil
	}
	first.Permanent = permanent
	if failed < len(a.Messages) {
		first.Message = fmt.Sprintf("%d of %d message parts failed: %s", failed, len(a.Messages), first.Message)
	}
	return first
}

// ConfigFromSettings reads sms.providerSettings.vonage.
func ConfigFromSettings(m map[string]any) (Config, error) {
	var c Config
	err := sms.ReadSettings("sms.providerSettings.vonage", m,
		sms.Setting{Key: "apiKey", Dst: &c.APIKey},
		sms.Setting{Key: "apiSecret", Dst: &c.APISecret},
		sms.Setting{Key: "from", Dst: &c.From})
	return c, err
}
