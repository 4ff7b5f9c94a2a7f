package swift_test

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
	"github.com/govkit/govkit/notify/sms/swift"
)

const key = "ACCOUNTKEY123"

type seen struct {
	uri, contentType, body string
}

// newFakeSwift checks requests against the gateway's REST shape and answers
// with its texts: a JSON string, 200 even for most refusals.
func newFakeSwift(t *testing.T) (*httptest.Server, *seen) {
	var mu sync.Mutex
	last := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		*last = seen{uri: r.RequestURI, contentType: r.Header.Get("Content-Type"), body: string(b)}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		rest, ok := strings.CutPrefix(r.RequestURI, "/services/message.svc/")
		k, dest, _ := strings.Cut(rest, "/")
		switch {
		case !ok:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`"Endpoint not found."`))
		case k != key:
			_, _ = w.Write([]byte(`"Account key not found"`))
		case dest == "%2B1500":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`"The server encountered an error processing the request."`))
		case dest == "12":
			_, _ = w.Write([]byte(`"Cell number is invalid"`))
		default:
			_, _ = w.Write([]byte(`"Message queued successfully"`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, last
}

func TestSendRequestShape(t *testing.T) {
	srv, last := newFakeSwift(t)
	s, err := swift.New(swift.Config{AccountKey: key, APIURLPrefix: srv.URL + "/services/message.svc/"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		m        sms.Message
		wantURI  string
		wantBody string
	}{
		{
			"the subscription id is sent as Reference and + is escaped in the path",
			sms.Message{To: "+1 250 555-0100", Text: "Reply STOP <to> end & \"quit\"", SubscriptionID: "65a1f0c2"},
			"/services/message.svc/" + key + "/%2B1%20250%20555-0100",
			`{"MessageBody":"Reply STOP <to> end & \"quit\"","Reference":"65a1f0c2"}`,
		},
		{
			"no subscription means no Reference",
			sms.Message{To: "2505550100", Text: "hi"},
			"/services/message.svc/" + key + "/2505550100",
			`{"MessageBody":"hi"}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Send(context.Background(), tc.m); err != nil {
				t.Fatal(err)
			}
			if last.uri != tc.wantURI || last.body != tc.wantBody || last.contentType != "application/json;charset=UTF-8" {
				t.Errorf("got %+v\nwant uri %s body %s", *last, tc.wantURI, tc.wantBody)
			}
		})
	}
}

func TestSendErrors(t *testing.T) {
	srv, _ := newFakeSwift(t)
	cases := []struct {
		name          string
		key, to       string
		wantPermanent bool
		wantText      string
	}{
		{"a refusal answered with 200 is a permanent error", "WRONGKEY99", "2505550100", true, "Account key not found"},
		{"an invalid number is permanent", key, "12", true, "Cell number is invalid"},
		{"a server error is transient with the gateway's text", key, "+1500", false, "error processing the request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := swift.New(swift.Config{AccountKey: tc.key, APIURLPrefix: srv.URL + "/services/message.svc/"})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Send(context.Background(), sms.Message{To: tc.to, Text: "x"})
			var pe *sms.ProviderError
			if !errors.As(err, &pe) || pe.Permanent != tc.wantPermanent || !strings.Contains(pe.Message, tc.wantText) {
				t.Fatalf("err = %#v, want permanent=%v text~%q", err, tc.wantPermanent, tc.wantText)
			}
			if strings.Contains(err.Error(), tc.key) {
				t.Errorf("error reveals the account key: %v", err)
			}
		})
	}
}

func TestUnreachableGatewayHidesAccountKey(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	prefix := srv.URL + "/services/message.svc/"
	srv.Close()
	s, err := swift.New(swift.Config{AccountKey: key, APIURLPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), sms.Message{To: "2505550100", Text: "x"})
	if err == nil || sms.IsPermanent(err) {
		t.Fatalf("err = %v, want a transient error", err)
	}
	if strings.Contains(err.Error(), key) {
		t.Errorf("error reveals the account key: %v", err)
	}
}

func TestEncodeURIComponent(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plus and spaces are escaped", "+1 250", "%2B1%20250"},
		{"unreserved marks stay", "a-b_c.d!e~f*g'h(i)", "a-b_c.d!e~f*g'h(i)"},
		{"slashes cannot change the path", "1/2", "1%2F2"},
		{"UTF-8 bytes are escaped", "é", "%C3%A9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := swift.EncodeURIComponent(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewNamesMissingSettings(t *testing.T) {
	if _, err := swift.New(swift.Config{}); !errors.Is(err, sms.ErrNotConfigured) || !strings.Contains(err.Error(), "sms.providerSettings.swift.accountKey") {
		t.Fatalf("err = %v", err)
	}
}
