package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/config"
)

func TestGuardDefaultsKeepNotifyBCClientsWorking(t *testing.T) {
	c, err := config.New()
	if err != nil {
		t.Fatal(err)
	}
	g := c.Guard
	if len(g.AllowedHosts) != 0 || g.LoginTokenTTL != 8*time.Hour || g.SMSNumber != nil ||
		g.CreationLimit != config.DefaultCreationLimit || g.ConfirmationLimit != config.DefaultConfirmationLimit {
		t.Fatalf("defaults %+v", g)
	}
}

func TestGuardKeys(t *testing.T) {
	c, err := config.New(map[string]any{
		"allowedHosts":       []any{"notify.example.org", ".apps.example.net", "10.0.0.5:3000"},
		"loginTokenTtlHours": "0.5",
		"subscription": map[string]any{
			"creationLimit":            map[string]any{"max": 5.0},
			"confirmationRequestLimit": map[string]any{"enabled": false},
		},
		"sms": map[string]any{"allowedNumberRegex": `^\+1[2-8]\d{9}$`},
	})
	if err != nil {
		t.Fatal(err)
	}
	g := c.Guard
	if g.LoginTokenTTL != 30*time.Minute || g.CreationLimit.Max != 5 || g.CreationLimit.Duration != 3_600_000 || !g.CreationLimit.Enabled ||
		g.ConfirmationLimit.Enabled || !g.SMSNumber.MatchString("+12505550101") {
		t.Fatalf("read %+v", g)
	}
}

func TestGuardMistakesAreNamed(t *testing.T) {
	cases := []struct {
		name string
		tree map[string]any
		key  string
	}{
		{"a URL is not a host", map[string]any{"allowedHosts": []any{"https://notify.example.org"}}, "allowedHosts[0]"},
		{"a wildcard is not a host", map[string]any{"allowedHosts": []any{"ok.example.org", "*.example.org"}}, "allowedHosts[1]"},
		{"a ttl of 0 hours", map[string]any{"loginTokenTtlHours": 0.0}, "loginTokenTtlHours"},
		{"a ttl that is not a number", map[string]any{"loginTokenTtlHours": "a day"}, "loginTokenTtlHours"},
		{"an enabled limit of 0", map[string]any{"subscription": map[string]any{"creationLimit": map[string]any{"max": 0.0}}}, "subscription.creationLimit"},
		{"a bad regular expression", map[string]any{"sms": map[string]any{"allowedNumberRegex": "^(1"}}, "sms.allowedNumberRegex"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.New(c.tree)
			if err == nil || !strings.Contains(err.Error(), c.key) {
				t.Fatalf("err %v, want one naming %s", err, c.key)
			}
			if strings.Count(err.Error(), c.key+":") > 1 {
				t.Fatalf("named twice: %v", err)
			}
		})
	}
}
