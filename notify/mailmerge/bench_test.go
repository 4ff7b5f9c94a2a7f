package mailmerge_test

import (
	"strings"
	"testing"

	"github.com/govkit/govkit/notify/mailmerge"
)

// typicalBody is an HTML notification of about 1.6 KB with the tokens a
// broadcast usually carries: greeting from subscription data, content from
// notification data, and the unsubscribe links.
var typicalBody = `<html><body style="font-family: sans-serif">
<p>Dear {subscription::firstName},</p>
<p>A new bulletin was published for <b>{service_name}</b> on {notification::published}:</p>
<h2>{notification::title}</h2>
<p>{notification::summary}</p>
<p>Region: {notification::region.name} (code {notification::region.code})</p>
` + strings.Repeat(`<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.</p>
`, 8) + `<p>Read more at <a href="{notification::link}">{notification::link}</a>.</p>
<hr/>
<p>To stop receiving these messages, <a href="{unsubscription_url}">unsubscribe</a>,
or <a href="{unsubscription_all_url}">unsubscribe from every service</a>.</p>
</body></html>`

func BenchmarkMergeTypicalEmail(b *testing.B) {
	in := &mailmerge.Input{
		ServiceName:        "Road Conditions",
		SubscriptionID:     "65a1b2c3d4e5f60718293a4b",
		ConfirmationCode:   "12345",
		UnsubscriptionCode: "54321",
		HTTPHost:           "https://notify.example.gov",
		RestAPIRoot:        "/api",
		SubscriptionData:   map[string]any{"firstName": "Jane"},
		NotificationData: map[string]any{
			"title":     "Highway 1 closed near Hope",
			"summary":   "Expect delays of up to two hours.",
			"published": "2026-01-02T03:04:05.000Z",
			"link":      "https://example.gov/bulletins/42",
			"region":    map[string]any{"name": "Fraser Valley", "code": 7.0},
		},
	}
	out := mailmerge.Merge(typicalBody, in)
	if strings.Contains(out, "{notification::") || strings.Contains(out, "{unsubscription_url}") {
		b.Fatalf("tokens left: %s", out)
	}
	b.SetBytes(int64(len(typicalBody)))
	b.ReportAllocs()
	for b.Loop() {
		mailmerge.Merge(typicalBody, in)
	}
}

func BenchmarkMergeNoTokens(b *testing.B) {
	body := strings.Repeat("plain text without placeholders. ", 50)
	in := &mailmerge.Input{}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		mailmerge.Merge(body, in)
	}
}
