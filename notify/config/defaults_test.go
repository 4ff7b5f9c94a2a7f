package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/config"
)

// TestDefaultsPinned pins the original 6.4.1 defaults that clients and
// operators depend on, read through Get so the dotted paths are checked too.
func TestDefaultsPinned(t *testing.T) {
	c, err := config.Load(config.Options{Dir: t.TempDir(), NodeEnv: "production"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want any
	}{
		{"restApiRoot", "/api"},
		{"host", "0.0.0.0"},
		{"port", 3000.0},
		{"adminIps", []any{"127.0.0.1"}},
		{"siteMinderReverseProxyIps", []any{"127.0.0.1"}},
		{"email.inboundSmtpServer.enabled", true},
		{"email.bounce.enabled", true},
		{"email.bounce.unsubThreshold", 5.0},
		{"email.bounce.subjectRegex", ""},
		{"email.bounce.smtpStatusCodeRegex", `5\.\d{1,3}\.\d{1,3}`},
		{"email.listUnsubscribeByEmail.enabled", true},
		{"email.throttle", map[string]any{"enabled": false, "max": 4.0, "duration": 1000.0}},
		{"sms.provider", "twilio"},
		{"sms.providerSettings.swift.apiUrlPrefix", "https://secure.smsgateway.ca/services/message.svc/"},
		{"sms.providerSettings.vonage", map[string]any{}},
		{"sms.throttle", map[string]any{"enabled": true, "max": 4.0, "duration": 1000.0}},
		{"subscription.detectDuplicatedSubscription", false},
		{"subscription.duplicatedSubscriptionNotification.sms.textBody", "A duplicated subscription was submitted and rejected. You will continue receiving notifications. If the request was not created by you, pls ignore this msg."},
		{"subscription.duplicatedSubscriptionNotification.email", map[string]any{
			"from":     "no_reply@invalid.local",
			"subject":  "Duplicated Subscription",
			"textBody": "A duplicated subscription was submitted and rejected. You will continue receiving notifications. If the request was not created by you, please ignore this message.",
		}},
		{"subscription.confirmationRequest.sms", map[string]any{
			"confirmationCodeRegex": `\d{5}`, "sendRequest": true, "textBody": "Enter {confirmation_code} on screen",
		}},
		{"subscription.confirmationRequest.email", map[string]any{
			"confirmationCodeRegex": `\d{5}`, "sendRequest": true, "from": "no_reply@invalid.local",
			"subject": "Subscription confirmation", "textBody": "Enter {subscription_confirmation_code} on screen",
		}},
		{"subscription.confirmationAcknowledgements", map[string]any{
			"successMessage": "You have been subscribed.", "failureMessage": "Error happened while confirming subscription.",
		}},
		{"subscription.anonymousUnsubscription.code", map[string]any{"required": true, "regex": `\d{5}`}},
		{"subscription.anonymousUnsubscription.acknowledgements.onScreen", map[string]any{
			"successMessage": "You have been un-subscribed.", "failureMessage": "Error happened while un-subscribing.",
		}},
		{"subscription.anonymousUnsubscription.acknowledgements.notification.email", map[string]any{
			"from":     "no_reply@invalid.local",
			"subject":  "Un-subscription acknowledgement",
			"textBody": "This is to acknowledge you have been un-subscribed from receiving notification for {unsubscription_service_names}. If you did not authorize this change or if you changed your mind, open {unsubscription_reversion_url} to revert.",
			"htmlBody": `This is to acknowledge you have been un-subscribed from receiving notification for {unsubscription_service_names}. If you did not authorize this change or if you changed your mind, click <a href="{unsubscription_reversion_url}">here</a> to revert.`,
		}},
		{"subscription.anonymousUndoUnsubscription", map[string]any{
			"successMessage": "You have been re-subscribed.", "failureMessage": "Error happened while re-subscribing.",
		}},
		{"notification.broadcastSubscriberChunkSize", 1000.0},
		{"notification.guaranteedBroadcastPushDispatchProcessing", true},
		{"notification.logSkippedBroadcastPushDispatches", false},
		{"cron.purgeData", map[string]any{
			"timeSpec": "0 0 1 * * *", "pushNotificationRetentionDays": 30.0, "expiredInAppNotificationRetentionDays": 30.0,
			"nonConfirmedSubscriptionRetentionDays": 30.0, "deletedBounceRetentionDays": 30.0,
			"expiredAccessTokenRetentionDays": 30.0, "defaultRetentionDays": 30.0,
		}},
		{"cron.dispatchLiveNotifications.timeSpec", "0 * * * * *"},
		{"cron.checkRssConfigUpdates.timeSpec", "0 * * * * *"},
		{"cron.deleteBounces", map[string]any{"timeSpec": "0 0 * * * *", "minLapsedHoursSinceLatestNotificationEnded": 1.0}},
		{"cron.reDispatchBroadcastPushNotifications.timeSpec", "0 */2 * * * *"},
		{"cron.clearRedisDatastore.timeSpec", "0 0 * * * *"},
		{"tls", map[string]any{}},
		{"queue.connection", map[string]any{"host": "127.0.0.1", "port": 6379.0}},
		{"loggingLevels", []any{"fatal", "error", "warn", "log"}},
		{"rest.host", "0.0.0.0"},
		{"rest.port", 3000.0},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := c.Lookup(tc.path)
			if !ok {
				t.Fatalf("%s is missing", tc.path)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s = %#v, want %#v", tc.path, got, tc.want)
			}
		})
	}
	if _, ok := c.Lookup("httpHost"); ok {
		t.Error("httpHost has no default in the original")
	}
	if c.OIDC != nil {
		t.Error("oidc has no default in the original")
	}
}

// TestDefaultFailedRecipientRegex pins the RFC 5322 pattern byte for byte
// where the JavaScript escaping is easiest to get wrong.
func TestDefaultFailedRecipientRegex(t *testing.T) {
	got := config.Defaults()["email"].(map[string]any)["bounce"].(map[string]any)["failedRecipientRegex"].(string)
	for _, part := range []string{
		"(?:[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*|\"(?:",
		`[\x01-\x08\x0b\x0c\x0e-\x1f\x21\x23-\x5b\x5d-\x7f]|\\[\x01-\x09\x0b\x0c\x0e-\x7f])*")@`,
		`|\[(?:(?:(2(5[0-5]|[0-4][0-9])|1[0-9][0-9]|[1-9]?[0-9]))\.){3}`,
		`(?:[\x01-\x08\x0b\x0c\x0e-\x1f\x21-\x5a\x53-\x7f]|\\[\x01-\x09\x0b\x0c\x0e-\x7f])+)\])`,
	} {
		if !strings.Contains(got, part) {
			t.Errorf("failedRecipientRegex lacks %q", part)
		}
	}
	if len(got) != 446 {
		t.Errorf("failedRecipientRegex has %d characters, want 446", len(got))
	}
}

// TestDefaultsTypedView checks that the typed view reads the defaults.
func TestDefaultsTypedView(t *testing.T) {
	c, err := config.Load(config.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if c.RestAPIRoot != "/api" || c.Port != 3000 || c.Host != "0.0.0.0" {
		t.Errorf("root/port/host = %q %d %q", c.RestAPIRoot, c.Port, c.Host)
	}
	if !reflect.DeepEqual(c.AdminIPs, []string{"127.0.0.1"}) || !reflect.DeepEqual(c.SiteMinderReverseProxyIPs, []string{"127.0.0.1"}) {
		t.Errorf("ips = %v %v", c.AdminIPs, c.SiteMinderReverseProxyIPs)
	}
	if c.Email.SMTP != nil {
		t.Error("no SMTP by default")
	}
	if !c.Email.Bounce.Enabled || c.Email.Bounce.UnsubThreshold != 5 || c.Email.Bounce.SMTPStatusCodeRegex != `5\.\d{1,3}\.\d{1,3}` {
		t.Errorf("bounce = %+v", c.Email.Bounce)
	}
	if (c.Email.Throttle != config.Throttle{Enabled: false, Max: 4, Duration: 1000}) {
		t.Errorf("email throttle = %+v", c.Email.Throttle)
	}
	if (c.SMS.Throttle != config.Throttle{Enabled: true, Max: 4, Duration: 1000}) {
		t.Errorf("sms throttle = %+v", c.SMS.Throttle)
	}
	if c.SMS.Provider != "twilio" || c.SMS.ProviderSettings.Swift.APIURLPrefix != "https://secure.smsgateway.ca/services/message.svc/" {
		t.Errorf("sms = %+v", c.SMS)
	}
	if c.Notification.BroadcastSubscriberChunkSize != 1000 || !c.Notification.GuaranteedBroadcastPushDispatchProcessing {
		t.Errorf("notification = %+v", c.Notification)
	}
	if c.Cron.PurgeData.TimeSpec != "0 0 1 * * *" || c.Cron.ReDispatchBroadcastPushNotifications.TimeSpec != "0 */2 * * * *" || c.Cron.DeleteBounces.MinLapsedHoursSinceLatestNotificationEnded != 1 {
		t.Errorf("cron = %+v", c.Cron)
	}
	if q := c.Queue.Connection; q == nil || q.Host != "127.0.0.1" || q.Port != 6379 {
		t.Errorf("queue = %+v", q)
	}
	s := c.Subscription
	if s.ConfirmationRequest["email"].TextBody != "Enter {subscription_confirmation_code} on screen" || !s.ConfirmationRequest["sms"].SendRequest {
		t.Errorf("confirmation request = %+v", s.ConfirmationRequest)
	}
	if s.AnonymousUnsubscription.Acknowledgements.Notification["email"].Subject != "Un-subscription acknowledgement" || !s.AnonymousUnsubscription.Code.Required {
		t.Errorf("anonymous unsubscription = %+v", s.AnonymousUnsubscription)
	}
	if c.TLS.Enabled {
		t.Error("TLS is off without certificates")
	}
	if !c.Middleware.All["compression"].Enabled || !c.Middleware.APIOnly["helmet"].Enabled || c.Middleware.APIOnly["morgan"].Enabled {
		t.Errorf("middleware = %+v", c.Middleware)
	}
	if c.Datasource.URI != "" {
		t.Errorf("datasource uri = %q, want the embedded store", c.Datasource.URI)
	}
}
