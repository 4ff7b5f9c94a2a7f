package vonage_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/govkit/govkit/notify/sms"
	"github.com/govkit/govkit/notify/sms/vonage"
)

const (
	apiKey    = "a1b2c3d4"
	apiSecret = "vonage-secret-123"
	from      = "NotifyBC"
)

// newFakeVonage checks requests against the SMS API's shape and answers as
// Vonage does: HTTP 200 with per-message statuses.
func newFakeVonage(t *testing.T) (*httptest.Server, *string) {
	var mu sync.Mutex
	var last string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPost || r.URL.Path != "/sms/json" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			_, _ = w.Write([]byte(`{"type":"https://developer.nexmo.com/api-errors#unsupported-media-type","title":"Unsupported Media Type","detail":"Use application/json","instance":"x"}`))
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = string(b)
		mu.Unlock()
		if u, p, ok := r.BasicAuth(); !ok || u != apiKey || p != apiSecret {
			_, _ = w.Write([]byte(`{"message-count":"1","messages":[{"status":"4","error-text":"Bad Credentials"}]}`))
			return
		}
		switch {
		case strings.Contains(last, `"to":"123"`):
			_, _ = w.Write([]byte(`{"message-count":"1","messages":[{"to":"123","status":"3","error-text":"Invalid to number"}]}`))
		case strings.Contains(last, `"to":"12505550199"`):
			_, _ = w.Write([]byte(`{"message-count":"1","messages":[{"to":"12505550199","status":"1","error-text":"Throttled"}]}`))
		case strings.Contains(last, `"to":"12505550198"`):
			_, _ = w.Write([]byte(`{"message-count":"2","messages":[
				{"to":"12505550198","message-id":"0A0000001","status":"0","remaining-balance":"3.14","message-price":"0.0333","network":"302720"},
				{"to":"12505550198","status":"5","error-text":"Internal Error"}]}`))
		case strings.Contains(last, `"to":"12505550197"`):
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"type":"https://developer.nexmo.com/api-errors#service-unavailable","title":"Service Unavailable","detail":"Try again later","instance":"y"}`))
		default:
			_, _ = w.Write([]byte(`{"message-count":"1","messages":[{"to":"12505550100","message-id":"0A0000000123ABCD1","status":"0","remaining-balance":"3.14159265","message-price":"0.03330000","network":"302720"}]}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &last
}

func TestSendRequestShape(t *testing.T) {
	srv, last := newFakeVonage(t)
	s, err := vonage.New(vonage.Config{APIKey: apiKey, APISecret: apiSecret, From: from, BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), sms.Message{To: "12505550100", Text: "Road <closed> & detour", SubscriptionID: "65a1"}); err != nil {
		t.Fatal(err)
	}
	if want := `{"to":"12505550100","from":"NotifyBC","text":"Road <closed> & detour"}`; *last != want {
		t.Errorf("body = %s\nwant   %s", *last, want)
	}
}

func TestSendErrors(t *testing.T) {
	srv, _ := newFakeVonage(t)
	cases := []struct {
		name          string
		secret, to    string
		wantPermanent bool
		wantCode      string
		wantText      string
	}{
		{"a refused number answered with 200 is a permanent error", apiSecret, "123", true, "3", "Invalid to number"},
		{"bad credentials are permanent", "wrong-secret", "12505550100", true, "4", "Bad Credentials"},
		{"throttling is transient", apiSecret, "12505550199", false, "1", "Throttled"},
		{"one failed part fails the message", apiSecret, "12505550198", false, "5", "1 of 2 message parts failed: Internal Error"},
		{"an HTTP error carries the problem's title and detail", apiSecret, "12505550197", false, "", "Service Unavailable: Try again later"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := vonage.New(vonage.Config{APIKey: apiKey, APISecret: tc.secret, From: from, BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Send(context.Background(), sms.Message{To: tc.to, Text: "x"})
			var pe *sms.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *sms.ProviderError", err)
			}
			if pe.Permanent != tc.wantPermanent || pe.Code != tc.wantCode || !strings.Contains(pe.Message, tc.wantText) {
				t.Errorf("got %+v, want permanent=%v code=%q text~%q", pe, tc.wantPermanent, tc.wantCode, tc.wantText)
			}
			if strings.Contains(err.Error(), tc.secret) {
				t.Errorf("error reveals the API secret: %v", err)
			}
		})
	}
}

func TestNewNamesMissingSettings(t *testing.T) {
	_, err := vonage.New(vonage.Config{APIKey: apiKey})
	if !errors.Is(err, sms.ErrNotConfigured) || !strings.Contains(err.Error(), "sms.providerSettings.vonage.apiSecret") || !strings.Contains(err.Error(), "vonage.from") {
		t.Fatalf("err = %v", err)
	}
}
