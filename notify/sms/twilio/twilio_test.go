package twilio_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/sms"
	"github.com/govkit/govkit/notify/sms/twilio"
)

const (
	sid   = "AC0123456789abcdef0123456789abcdef"
	token = "auth-token-secret"
	from  = "+15005550006"
)

// fakeTwilio checks each request against the Messages API's shape and
// answers as Twilio does.
type fakeTwilio struct {
	*httptest.Server
	mu   sync.Mutex
	last url.Values
}

func newFakeTwilio(t *testing.T) *fakeTwilio {
	f := &fakeTwilio{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPost || r.URL.Path != "/2010-04-01/Accounts/"+sid+"/Messages.json" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":20404,"message":"The requested resource was not found","more_info":"https://www.twilio.com/docs/errors/20404","status":404}`))
			return
		}
		if u, p, ok := r.BasicAuth(); !ok || u != sid || p != token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"code":20003,"message":"Authenticate","more_info":"https://www.twilio.com/docs/errors/20003","status":401}`))
			return
		}
		if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			w.WriteHeader(http.StatusUnsupportedMediaType)
			return
		}
		if err := r.ParseForm(); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.last = r.PostForm
		f.mu.Unlock()
		switch to := r.PostForm.Get("To"); to {
		case "+1999":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"code":21211,"message":"The 'To' number +1999 is not a valid phone number.","more_info":"https://www.twilio.com/docs/errors/21211","status":400}`))
		case "+12505550199":
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"code":20429,"message":"Too Many Requests","more_info":"https://www.twilio.com/docs/errors/20429","status":429}`))
		case "+12505550198":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`<html>Bad Gateway</html>`))
		case "+12505550197":
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"account_sid":"` + sid + `","body":"` + r.PostForm.Get("Body") + `","from":"` + from + `","to":"` + to + `","sid":"SM0123456789abcdef0123456789abcdef","status":"queued","uri":"/2010-04-01/Accounts/` + sid + `/Messages/SM0123456789abcdef0123456789abcdef.json"}`))
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func TestSendRequestShape(t *testing.T) {
	f := newFakeTwilio(t)
	s, err := twilio.New(twilio.Config{AccountSID: sid, AuthToken: token, FromNumber: from, BaseURL: f.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(context.Background(), sms.Message{To: "+12505550100", Text: "Enter 12345 on screen & go", SubscriptionID: "65a1"}); err != nil {
		t.Fatal(err)
	}
	want := url.Values{"To": {"+12505550100"}, "From": {from}, "Body": {"Enter 12345 on screen & go"}}
	if !reflect.DeepEqual(f.last, want) {
		t.Errorf("form = %v, want exactly %v", f.last, want)
	}
}

func TestSendErrors(t *testing.T) {
	f := newFakeTwilio(t)
	cases := []struct {
		name          string
		token, to     string
		wantPermanent bool
		wantCode      string
		wantText      string
	}{
		{"an invalid number is permanent with Twilio's message", token, "+1999", true, "21211", "not a valid phone number"},
		{"bad credentials are permanent", "wrong", "+12505550100", true, "20003", "Authenticate"},
		{"rate limiting is transient", token, "+12505550199", false, "20429", "Too Many Requests"},
		{"a non-JSON gateway error is transient and quoted", token, "+12505550198", false, "", "Bad Gateway"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := twilio.New(twilio.Config{AccountSID: sid, AuthToken: tc.token, FromNumber: from, BaseURL: f.URL})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Send(context.Background(), sms.Message{To: tc.to, Text: "x"})
			var pe *sms.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *sms.ProviderError", err)
			}
			if pe.Permanent != tc.wantPermanent || sms.IsPermanent(err) != tc.wantPermanent || pe.Code != tc.wantCode || !strings.Contains(pe.Message, tc.wantText) {
				t.Errorf("got %+v, want permanent=%v code=%q text~%q", pe, tc.wantPermanent, tc.wantCode, tc.wantText)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Errorf("error reveals the auth token: %v", err)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	f := newFakeTwilio(t)
	s, err := twilio.New(twilio.Config{AccountSID: sid, AuthToken: token, FromNumber: from, BaseURL: f.URL,
		HTTPClient: &http.Client{Timeout: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), sms.Message{To: "+12505550197", Text: "x"})
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err = %v, want a timeout", err)
	}
	if sms.IsPermanent(err) {
		t.Error("a timeout must be transient")
	}
}

func TestNewNamesMissingSettings(t *testing.T) {
	_, err := twilio.New(twilio.Config{AccountSID: sid})
	if !errors.Is(err, sms.ErrNotConfigured) || !strings.Contains(err.Error(), "sms.providerSettings.twilio.authToken") || !strings.Contains(err.Error(), "fromNumber") {
		t.Fatalf("err = %v", err)
	}
}

func TestConfigFromSettings(t *testing.T) {
	c, err := twilio.ConfigFromSettings(map[string]any{"accountSid": sid, "authToken": token, "fromNumber": float64(15005550006)})
	if err != nil || c.AccountSID != sid || c.AuthToken != token || c.FromNumber != "15005550006" {
		t.Fatalf("c = %+v, err = %v", c, err)
	}
	if _, err := twilio.ConfigFromSettings(map[string]any{"authToken": true}); err == nil || !strings.Contains(err.Error(), "sms.providerSettings.twilio.authToken") {
		t.Fatalf("err = %v, want one naming the key", err)
	}
}
