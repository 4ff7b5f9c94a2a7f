package sms_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/govkit/govkit/notify/sms"
)

func TestIsPermanent(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"a permanent provider error", &sms.ProviderError{Provider: "twilio", StatusCode: 400, Permanent: true}, true},
		{"a wrapped transient provider error", fmt.Errorf("send: %w", &sms.ProviderError{Provider: "twilio", StatusCode: 503}), false},
		{"missing configuration", fmt.Errorf("x: %w", sms.ErrNotConfigured), true},
		{"a transport error", errors.New("connection refused"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sms.IsPermanent(tc.err); got != tc.want {
				t.Errorf("IsPermanent = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPermanentStatus(t *testing.T) {
	cases := []struct {
		code int
		want bool
	}{{400, true}, {401, true}, {404, true}, {408, false}, {429, false}, {500, false}, {503, false}}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("HTTP %d permanent is %v", tc.code, tc.want), func(t *testing.T) {
			if got := sms.PermanentStatus(tc.code); got != tc.want {
				t.Errorf("got %v", got)
			}
		})
	}
}

func TestProviderErrorMessage(t *testing.T) {
	err := &sms.ProviderError{Provider: "twilio", StatusCode: 400, Code: "21211", Message: "The 'To' number is not valid."}
	if got, want := err.Error(), "twilio: HTTP 400 (code 21211): The 'To' number is not valid."; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
