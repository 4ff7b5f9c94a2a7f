package mailmerge_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/mailmerge"
)

func fullInput() *mailmerge.Input {
	return &mailmerge.Input{
		ServiceName:        "myService",
		SubscriptionID:     "65a1b2c3d4e5f60718293a4b",
		ConfirmationCode:   "12345",
		UnsubscriptionCode: "54321",
		HTTPHost:           "http://localhost:3000",
		RestAPIRoot:        "/api",
	}
}

func TestStaticTokens(t *testing.T) {
	const base = "http://localhost:3000/api/subscriptions/65a1b2c3d4e5f60718293a4b"
	tests := []struct {
		name, tmpl, want string
	}{
		{"subscription_confirmation_code is the confirmation code", "{subscription_confirmation_code}", "12345"},
		{"confirmation_code is the old alias of the confirmation code", "{confirmation_code}", "12345"},
		{"service_name is the service", "{service_name}", "myService"},
		{"serviceName is the old alias of service_name", "{serviceName}", "myService"},
		{"http_host keeps scheme, host and port", "{http_host}", "http://localhost:3000"},
		{"rest_api_root is the API prefix", "{rest_api_root}", "/api"},
		{"restApiRoot is the old alias of rest_api_root", "{restApiRoot}", "/api"},
		{"subscription_id is the id", "{subscription_id}", "65a1b2c3d4e5f60718293a4b"},
		{"subscriptionId is the old alias of subscription_id", "{subscriptionId}", "65a1b2c3d4e5f60718293a4b"},
		{"unsubscription_code is the code", "{unsubscription_code}", "54321"},
		{"unsubscriptionCode is the old alias of unsubscription_code", "{unsubscriptionCode}", "54321"},
		{"unsubscription_url links to unsubscribe with the code", "{unsubscription_url}", base + "/unsubscribe?unsubscriptionCode=54321"},
		{"unsubscription_all_url adds additionalServices=_all", "{unsubscription_all_url}", base + "/unsubscribe?unsubscriptionCode=54321&additionalServices=_all"},
		{"subscription_confirmation_url links to verify with the code", "{subscription_confirmation_url}", base + "/verify?confirmationCode=12345"},
		{"unsubscription_reversion_url links to undo with the code", "{unsubscription_reversion_url}", base + "/unsubscribe/undo?unsubscriptionCode=54321"},
		{"unsubscription_service_names names one service in the singular", "{unsubscription_service_names}", "service myService"},
		{"static tokens are case-insensitive", "{SERVICE_NAME} {Http_Host} {SUBSCRIPTIONID}", "myService http://localhost:3000 65a1b2c3d4e5f60718293a4b"},
		{"a token may repeat", "{service_name}/{service_name}", "myService/myService"},
		{"text around tokens is kept", "Dear user of {service_name}, see {http_host}.", "Dear user of myService, see http://localhost:3000."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mailmerge.Merge(tc.tmpl, fullInput()); got != tc.want {
				t.Errorf("Merge(%q) = %q, want %q", tc.tmpl, got, tc.want)
			}
		})
	}
}

func TestServiceNames(t *testing.T) {
	tests := []struct {
		name   string
		others []string
		want   string
	}{
		{"two services are joined by and", []string{"b"}, "services a and b"},
		{"three services are a list ending in and", []string{"b", "c"}, "services a, b and c"},
		{"a service named twice counts once", []string{"a", "b", "b"}, "services a and b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &mailmerge.Input{ServiceName: "a", UnsubscribedServiceNames: tc.others}
			if got := mailmerge.Merge("{unsubscription_service_names}", in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestUnknownStaticValuesStay(t *testing.T) {
	tests := []struct {
		name, tmpl, want string
		in               mailmerge.Input
	}{
		{"no confirmation code leaves the token", "{subscription_confirmation_code}", "{subscription_confirmation_code}", mailmerge.Input{}},
		{"no host leaves http_host and the URLs", "{http_host} {unsubscription_url}", "{http_host} {unsubscription_url}", mailmerge.Input{SubscriptionID: "x"}},
		{"no subscription id leaves the URLs", "{unsubscription_all_url}", "{unsubscription_all_url}", mailmerge.Input{HTTPHost: "h"}},
		{"an empty rest_api_root is a value", "[{rest_api_root}]", "[]", mailmerge.Input{}},
		{"a subscription without unsubscription code gets a link without the parameter",
			"{unsubscription_url} {unsubscription_all_url} {unsubscription_reversion_url}",
			"h/api/subscriptions/x/unsubscribe h/api/subscriptions/x/unsubscribe?additionalServices=_all h/api/subscriptions/x/unsubscribe/undo",
			mailmerge.Input{HTTPHost: "h", RestAPIRoot: "/api", SubscriptionID: "x"}},
		{"codes are URL-escaped in links", "{subscription_confirmation_url}",
			"h/subscriptions/x/verify?confirmationCode=a+b%26c",
			mailmerge.Input{HTTPHost: "h", SubscriptionID: "x", ConfirmationCode: "a b&c"}},
		{"a nil input merges nothing but the root", "{service_name}{rest_api_root}", "{service_name}", mailmerge.Input{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mailmerge.Merge(tc.tmpl, &tc.in); got != tc.want {
				t.Errorf("Merge(%q) = %q, want %q", tc.tmpl, got, tc.want)
			}
		})
	}
	if got := mailmerge.Merge("{service_name}", nil); got != "{service_name}" {
		t.Errorf("nil input: got %q", got)
	}
}

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDynamicTokens(t *testing.T) {
	notif := `{"1":"foo","2":"bar","count":0,"flag":false,"empty":"","none":null,
		"addresses":[{"city":"Victoria"},{"city":"Nanaimo"}],"a.b":"dotted","a":{"b":"nested"},
		"price":12.5,"big":1e21,"obj":{"x":1},"list":[1,"two"],"weird key":{"x.y":"q"},"html":{"t":"<b>&</b>"}}`
	sub := `{"gender":"female","1":"sub-one","only":"sub-only","addresses":[{"city":"Kelowna"}]}`
	tests := []struct {
		name, tmpl, want string
	}{
		{"notification:: reads the notification's data", "{notification::1}", "foo"},
		{"subscription:: reads the subscription's data", "{subscription::gender}", "female"},
		{"an unqualified token prefers the notification's data", "{1}", "foo"},
		{"an unqualified token falls back to the subscription's data", "{only}", "sub-only"},
		{"indexed paths are followed", "{addresses[1].city}", "Nanaimo"},
		{"qualified indexed paths are followed", "{subscription::addresses[0].city}", "Kelowna"},
		{"nested paths are followed", "{notification::a.b}", "dotted"},
		{"a key equal to the whole path wins over nesting", "{a.b}", "dotted"},
		{"quoted bracket keys may hold dots", `{notification::["weird key"]["x.y"]}`, "q"},
		{"length of an array is its size", "{addresses.length}", "2"},
		{"zero is merged", "{count}", "0"},
		{"false is merged", "{flag}", "false"},
		{"an empty string is merged", "[{empty}]", "[]"},
		{"null is merged as nothing", "[{none}]", "[]"},
		{"numbers print as JavaScript prints them", "{price} {big}", "12.5 1e+21"},
		{"objects merge as JSON", "{obj}", `{"x":1}`},
		{"arrays merge as JSON", "{list}", `[1,"two"]`},
		{"JSON keeps <, > and &", "{notification::html}", `{"t":"<b>&</b>"}`},
		{"a missing path stays as written", "{nope} {notification::nope} {subscription::nope}", "{nope} {notification::nope} {subscription::nope}"},
		{"an index out of range stays as written", "{addresses[5].city}", "{addresses[5].city}"},
		{"a path through a scalar stays as written", "{1.x}", "{1.x}"},
		{"an unclosed bracket stays as written", "{addresses[0}", "{addresses[0}"},
		{"escaped braces are literal and lose their backslashes", `\{1\} \{2\}`, "{1} {2}"},
		{"escapes and tokens mix as in the original's test", `\{1\} \{2\}, {2} {notification::1} {subscription::gender}`, "{1} {2}, bar foo female"},
		{"a lone escaped brace is kept", `\{1} x`, `\{1} x`},
		{"a brace that starts no token does not hide the next token", "{a {service_name}", "{a myService"},
		{"tokens do not span lines", "{service\n_name}", "{service\n_name}"},
		{"empty braces are text", "{} {{}}", "{} {{}}"},
		{"JSON in a template is left alone", `{"k": "v"}`, `{"k": "v"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := fullInput()
			in.NotificationData = decode(t, notif)
			in.SubscriptionData = decode(t, sub)
			if got := mailmerge.Merge(tc.tmpl, in); got != tc.want {
				t.Errorf("Merge(%q) = %q, want %q", tc.tmpl, got, tc.want)
			}
		})
	}
}

func TestMergedValuesAreNotRescanned(t *testing.T) {
	in := &mailmerge.Input{
		ServiceName:      "svc",
		NotificationData: map[string]any{"evil": "{service_name} {secret}"},
		SubscriptionData: map[string]any{"secret": "s3cr3t"},
	}
	if got := mailmerge.Merge("{evil}", in); got != "{service_name} {secret}" {
		t.Errorf("got %q", got)
	}
}

func TestIgnoreSubscriptionData(t *testing.T) {
	in := fullInput()
	in.IgnoreSubscriptionData = true
	in.SubscriptionData = map[string]any{"gender": "female", "only": "sub"}
	in.NotificationData = map[string]any{"n": "note"}
	tests := []struct{ name, tmpl, want string }{
		{"subscription:: tokens stay untouched", "{subscription::gender}", "{subscription::gender}"},
		{"unqualified tokens do not fall back to subscription data", "{only}", "{only}"},
		{"notification data is still merged", "{notification::n} {n}", "note note"},
		{"static tokens are still merged", "{subscription_confirmation_url}", "http://localhost:3000/api/subscriptions/65a1b2c3d4e5f60718293a4b/verify?confirmationCode=12345"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mailmerge.Merge(tc.tmpl, in); got != tc.want {
				t.Errorf("Merge(%q) = %q, want %q", tc.tmpl, got, tc.want)
			}
		})
	}
}

func TestDataShapes(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	oid, _ := bson.ObjectIDFromHex("65a1b2c3d4e5f60718293a4b")
	tests := []struct {
		name string
		data any
		tmpl string
		want string
	}{
		{"bson.D documents are read in place", bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: "x"}}}}, "{a.b}", "x"},
		{"bson.M and bson.A are read in place", bson.M{"a": bson.A{"p", "q"}}, "{a[1]}", "q"},
		{"typed maps and slices are read by reflection", map[string][]string{"a": {"p", "q"}}, "{a[0]}", "p"},
		{"Go integers print plainly", map[string]any{"n": int64(42), "m": 7}, "{n} {m}", "42 7"},
		{"times print as RFC 3339 UTC with milliseconds", map[string]any{"t": when, "d": bson.NewDateTimeFromTime(when)}, "{t} {d}", "2026-01-02T03:04:05.006Z 2026-01-02T03:04:05.006Z"},
		{"object ids print as hex", map[string]any{"id": oid}, "{id}", "65a1b2c3d4e5f60718293a4b"},
		{"bson documents merge as JSON", map[string]any{"d": bson.D{{Key: "k", Value: bson.A{1}}}}, "{d}", `{"k":[1]}`},
		{"json.Number prints its digits", map[string]any{"n": json.Number("10.50")}, "{n}", "10.50"},
		{"a negative index stays as written", []any{"a"}, "{[-1]}", "{[-1]}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := &mailmerge.Input{NotificationData: tc.data}
			if got := mailmerge.Merge(tc.tmpl, in); got != tc.want {
				t.Errorf("Merge(%q) = %q, want %q", tc.tmpl, got, tc.want)
			}
		})
	}
}

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {3, "3"}, {-3.25, "-3.25"}, {0.1, "0.1"}, {1e20, "100000000000000000000"},
		{1e21, "1e+21"}, {1.5e-7, "1.5e-7"}, {1e-7, "1e-7"}, {1e-6, "0.000001"}, {123456789012, "123456789012"},
	}
	for _, tc := range tests {
		if got := mailmerge.FormatNumber(tc.in); got != tc.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestResolveHTTPHost(t *testing.T) {
	tests := []struct {
		name string
		in   mailmerge.HostSources
		want string
	}{
		{"the notification's host wins", mailmerge.HostSources{Notification: "n", Config: "c", Request: "r", Subscription: "s"}, "n"},
		{"config comes before the request", mailmerge.HostSources{Config: "c", Instance: "i", Request: "r"}, "c"},
		{"the written record comes before the request", mailmerge.HostSources{Instance: "i", Request: "r"}, "i"},
		{"the request keeps its port", mailmerge.HostSources{Request: "http://localhost:3000", Subscription: "s"}, "http://localhost:3000"},
		{"the subscription's host is the last resort", mailmerge.HostSources{Subscription: "s"}, "s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := mailmerge.ResolveHTTPHost(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTemplateWithoutTokensIsReturnedAsIs(t *testing.T) {
	s := strings.Repeat("plain text ", 10)
	if got := mailmerge.Merge(s, fullInput()); got != s {
		t.Errorf("got %q", got)
	}
}

// FuzzMerge checks that no template, however malformed, panics or loses
// text that is not a token.
func FuzzMerge(f *testing.F) {
	for _, s := range []string{"{service_name}", `\{1\}`, "{a[0].b}", `{["x`, "{a.}", "{.a}", "{}}", `\{\}`, "{a[1e3]}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in := fullInput()
		in.NotificationData = map[string]any{"a": []any{map[string]any{"b": "x"}}, "": "e"}
		out := mailmerge.Merge(s, in)
		if !strings.ContainsAny(s, "{") && out != s {
			t.Fatalf("text without braces changed: %q -> %q", s, out)
		}
	})
}

func TestLinesOfUnclosedBraces(t *testing.T) {
	// A line of braces that nothing closes is copied as it is (in one
	// pass: it used to be searched again from every brace), and tokens on
	// the next lines still merge.
	braces := strings.Repeat("{", 100000)
	got := mailmerge.Merge(braces+"\n{service_name} {a\r\n{", &mailmerge.Input{ServiceName: "svc"})
	if got != braces+"\nsvc {a\r\n{" {
		t.Fatalf("got %.40q…", got)
	}
}
