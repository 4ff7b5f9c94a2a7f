// Package swift sends SMS through the Swift SMS Gateway's REST API with the
// request the original service makes: POST
// {apiUrlPrefix}{accountKey}/{encodeURIComponent(phone number)} with the
// JSON body {"MessageBody": text, "Reference": subscription id} (Reference
// left out when there is no subscription) and Content-Type
// application/json;charset=UTF-8. Keyword replies come back to the
// subscriptions webhook carrying that Reference.
//
// The original treats any 2xx answer as sent. The gateway, however, answers
// a refused message with a 2xx and one of its documented failure texts
// ("Account key not found", "Cell number is invalid", …); those are
// reported as permanent errors here. Any other 2xx answer is success.
package swift

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

// DefaultAPIURLPrefix is the original's default sms.providerSettings.swift.apiUrlPrefix.
const DefaultAPIURLPrefix = "https://secure.smsgateway.ca/services/message.svc/"

// Config is sms.providerSettings.swift.
type Config struct {
	AccountKey string // accountKey
	// APIURLPrefix defaults to DefaultAPIURLPrefix; tests point it at a
	// loopback server.
	APIURLPrefix string
	// HTTPClient defaults to one with sms.DefaultTimeout.
	HTTPClient *http.Client
}

// Missing names the required settings that are empty, as config keys.
func (c Config) Missing() []string {
	if c.AccountKey == "" {
		return []string{"sms.providerSettings.swift.accountKey"}
	}
	return nil
}

// Sender sends through one Swift account.
type Sender struct{ cfg Config }

// New checks cfg and returns a Sender.
func New(cfg Config) (*Sender, error) {
	if m := cfg.Missing(); len(m) > 0 {
		return nil, fmt.Errorf("%w: %s required", sms.ErrNotConfigured, strings.Join(m, ", "))
	}
	if cfg.APIURLPrefix == "" {
		cfg.APIURLPrefix = DefaultAPIURLPrefix
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: sms.DefaultTimeout}
	}
	return &Sender{cfg: cfg}, nil
}

// body keeps the original's field order.
type body struct {
	MessageBody string
	Reference   string `json:",omitempty"`
}

// Send implements sms.Sender.
func (s *Sender) Send(ctx context.Context, m sms.Message) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // byte for byte what JSON.stringify sends
	if err := enc.Encode(body{MessageBody: m.Text, Reference: m.SubscriptionID}); err != nil {
		return err
	}
	u := s.cfg.APIURLPrefix + s.cfg.AccountKey + "/" + EncodeURIComponent(m.To)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
	if err != nil {
		// The URL holds the account key: never echo it.
		return fmt.Errorf("swift: bad apiUrlPrefix or destination")
	}
	req.Header.Set("Content-Type", "application/json;charset=UTF-8")
	if err := notify.SendStarting(ctx); err != nil {
		return err
	}
	res, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		return sms.RequestError("swift", "send message", err)
	}
	defer res.Body.Close()
	raw, err := sms.ReadBody(res.Body)
	if err != nil {
		return sms.RequestError("swift", "read answer", err)
	}
	text := answerText(raw)
	if res.StatusCode < 200 || res.StatusCode >= 300 {
		if text == "" {
			text = http.StatusText(res.StatusCode)
		}
		return &sms.ProviderError{Provider: "swift", StatusCode: res.StatusCode, Message: text, Permanent: sms.PermanentStatus(res.StatusCode)}
	}
	for _, f := range failures {
		if strings.HasPrefix(strings.ToLower(text), strings.ToLower(f)) {
			return &sms.ProviderError{Provider: "swift", StatusCode: res.StatusCode, Message: text, Permanent: true}
		}
	}
	return nil
}

// failures are the starts of the gateway's documented refusal texts.
var failures = []string{
	"Cell number is invalid",
	"Message body was missing",
	"The account key parameter was not valid",
	"This account is disabled",
	"Account key not found",
	"There are no messages remaining",
	"No authorized credit plan found",
	"Credit rule not found",
	"Message content is not acceptable",
	"Time of day at destination falls outside",
}

// answerText reads the gateway's answer, a JSON string or plain text.
func answerText(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	return sms.Snippet(raw)
}

// EncodeURIComponent escapes s as JavaScript's encodeURIComponent, which the
// original applies to the phone number in the URL path ("+" becomes "%2B").
func EncodeURIComponent(s string) string {
	const unreserved = "-_.!~*'()"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(unreserved, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// ConfigFromSettings reads sms.providerSettings.swift (notifyBCSwiftKey is
// for the inbound webhook and is not read here).
func ConfigFromSettings(m map[string]any) (Config, error) {
	var c Config
	err := sms.ReadSettings("sms.providerSettings.swift", m,
		sms.Setting{Key: "accountKey", Dst: &c.AccountKey},
		sms.Setting{Key: "apiUrlPrefix", Dst: &c.APIURLPrefix})
	return c, err
}
