package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/sms"
	"github.com/govkit/govkit/notify/sms/provider"
)

func TestUnconfiguredProviderFailsAtSendNotAtStart(t *testing.T) {
	cases := []struct {
		name, provider string
		settings       map[string]any
		wantKeys       []string
	}{
		{"twilio is the default and needs its three settings", "", nil,
			[]string{"sms.providerSettings.twilio.accountSid", "sms.providerSettings.twilio.authToken", "sms.providerSettings.twilio.fromNumber"}},
		{"swift needs an account key (apiUrlPrefix has a default)", "swift",
			map[string]any{"swift": map[string]any{"apiUrlPrefix": "https://secure.smsgateway.ca/services/message.svc/"}},
			[]string{"sms.providerSettings.swift.accountKey"}},
		{"vonage with an empty object (the original's default)", "vonage", map[string]any{"vonage": map[string]any{}},
			[]string{"sms.providerSettings.vonage.apiKey", "sms.providerSettings.vonage.apiSecret", "sms.providerSettings.vonage.from"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, warnings, err := provider.New(tc.provider, tc.settings, nil)
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(warnings, "\n")
			for _, k := range tc.wantKeys {
				if !strings.Contains(joined, k) {
					t.Errorf("warnings %q do not name %s", warnings, k)
				}
			}
			err = s.Send(context.Background(), sms.Message{To: "1", Text: "x"})
			if !errors.Is(err, sms.ErrNotConfigured) || !sms.IsPermanent(err) {
				t.Errorf("Send err = %v, want a permanent ErrNotConfigured", err)
			}
		})
	}
}

func TestBadConfigRefusesToStart(t *testing.T) {
	cases := []struct {
		name, provider string
		settings       map[string]any
		want           string
	}{
		{"unknown provider", "nexmo", nil, `sms.provider: "nexmo" is not one of twilio, swift, vonage`},
		{"settings must be an object", "twilio", map[string]any{"twilio": "AC1"}, "sms.providerSettings.twilio: must be an object"},
		{"a setting of the wrong type", "vonage", map[string]any{"vonage": map[string]any{"apiKey": []any{"x"}}}, "sms.providerSettings.vonage.apiKey"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := provider.New(tc.provider, tc.settings, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestConfiguredProviderSends(t *testing.T) {
	var got map[string]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got)
		got["uri"] = r.RequestURI
		_, _ = w.Write([]byte(`"Message queued successfully"`))
	}))
	t.Cleanup(srv.Close)
	s, warnings, err := provider.New("swift", map[string]any{
		"swift":  map[string]any{"accountKey": "KEY123456", "apiUrlPrefix": srv.URL + "/svc/", "notifyBCSwiftKey": "inbound"},
		"twilio": map[string]any{"accountSid": 5},
	}, srv.Client())
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err = %v, warnings = %q", err, warnings)
	}
	if err := s.Send(context.Background(), sms.Message{To: "+12505550100", Text: "hello", SubscriptionID: "sub1"}); err != nil {
		t.Fatal(err)
	}
	if got["uri"] != "/svc/KEY123456/%2B12505550100" || got["MessageBody"] != "hello" || got["Reference"] != "sub1" {
		t.Errorf("request = %v", got)
	}
}
