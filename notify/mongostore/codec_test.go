package mongostore

import (
	"encoding/json"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
)

func TestRecordsRoundTripThroughBSON(t *testing.T) {
	ttl := int64(60)
	started := time.Date(2026, 3, 4, 5, 6, 7, 8e6, time.UTC)
	tests := []struct {
		name string
		rec  notify.Record
		back func() notify.Record
	}{
		{"subscription with nested data and unknown fields", &notify.Subscription{
			Meta:        notify.Meta{ID: notify.NewID(), Created: started, Updated: started, CreatedBy: &notify.UserProfile{SecurityID: "u", AuthnStrategy: notify.AuthnOIDC, Role: notify.RoleAuthenticatedUser}},
			ServiceName: "s", Channel: "sms", UserChannelID: "250", State: "confirmed",
			ConfirmationRequest:            notify.NewFields("sendRequest", true, "confirmationCodeRegex", `\d{5}`),
			Data:                           notify.NewFields("n", int32(1), "l", int64(1<<40), "f", 2.5, "t", started, "b", []byte{1, 2}, "a", []any{nil, "x"}),
			UnsubscribedAdditionalServices: &notify.UnsubscribedServices{Names: []string{"a"}, IDs: []string{"1"}},
			Extra:                          notify.NewFields("custom", notify.NewFields("deep", true)),
		}, func() notify.Record { return &notify.Subscription{} }},
		{"notification with inline dispatch", &notify.Notification{
			Meta: notify.Meta{ID: notify.NewID()}, ServiceName: "s", Message: notify.NewFields("subject", "x"),
			IsBroadcast: true, ValidTill: started, AsyncBroadcastPushNotification: "http://cb", ReadBy: []string{"u"},
			Dispatch: &notify.Dispatch{Candidates: []string{"a"}, Failed: []notify.DispatchFailure{{SubscriptionID: "a", Error: "x"}}, Extra: notify.NewFields("req", notify.NewFields("protocol", "http"))},
		}, func() notify.Record { return &notify.Notification{} }},
		{"bounce with null latestNotificationStarted", &notify.Bounce{Meta: notify.Meta{ID: notify.NewID()}, Channel: "email", UserChannelID: "a@b", HardBounceCount: 3,
			BounceMessages: []notify.BounceMessage{{Date: started, Message: "m"}}, LatestNotificationEnded: &started},
			func() notify.Record { return &notify.Bounce{} }},
		{"access token with a string id", &notify.AccessToken{ID: "tok", TTL: &ttl, UserID: notify.NewID(), Created: started},
			func() notify.Record { return &notify.AccessToken{} }},
		{"user credential", &notify.UserCredential{Meta: notify.Meta{ID: notify.NewID()}, Password: "h", UserID: notify.NewID()},
			func() notify.Record { return &notify.UserCredential{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := bson.Marshal(recordDoc(tt.rec.Fields()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bson.Raw(raw).LookupErr("id"); err == nil {
				t.Error(`stored document has "id"`)
			}
			f, err := fromRaw(raw)
			if err != nil {
				t.Fatal(err)
			}
			back := tt.back()
			back.LoadFields(f)
			want, _ := json.Marshal(tt.rec)
			got, _ := json.Marshal(back)
			if string(got) != string(want) {
				t.Errorf("round trip\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestFilterCasting(t *testing.T) {
	oid := bson.NewObjectID()
	tests := []struct {
		name   string
		schema *schema
		in     any
		want   string
	}{
		{"id becomes _id and its hex an ObjectId", subscriptionSchema, bson.M{"id": oid.Hex()}, `{"_id": {"$oid":"` + oid.Hex() + `"}}`},
		{"a malformed id stays a string and matches nothing", subscriptionSchema, bson.M{"id": "nope"}, `{"_id": "nope"}`},
		{"access token ids are strings", accessTokenSchema, bson.M{"id": oid.Hex()}, `{"_id": "` + oid.Hex() + `"}`},
		{"userId of a credential is an ObjectId", userCredentialSchema, bson.M{"userId": bson.M{"$in": bson.A{oid.Hex()}}}, `{"userId": {"$in": [{"$oid":"` + oid.Hex() + `"}]}}`},
		{"userId of a subscription is a string", subscriptionSchema, bson.M{"userId": oid.Hex()}, `{"userId": "` + oid.Hex() + `"}`},
		{"dates inside $and and $not are cast", notificationSchema, bson.D{{Key: "$and", Value: bson.A{bson.M{"validTill": bson.M{"$not": bson.M{"$lt": "2026-01-02T03:04:05Z"}}}}}}, `{"$and": [{"validTill": {"$not": {"$lt": {"$date":{"$numberLong":"1767323045000"}}}}}]}`},
		{"a plain embedded document is an equality, not operators", subscriptionSchema, bson.M{"data": bson.M{"created": "2026-01-02T03:04:05Z"}}, `{"data": {"created": "2026-01-02T03:04:05Z"}}`},
		{"unknown fields pass through", subscriptionSchema, map[string]any{"custom": 1.5}, `{"custom": {"$numberDouble":"1.5"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := tt.schema.castFilter(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			b, err := bson.MarshalExtJSON(d, true, false)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != compact(tt.want) {
				t.Errorf("got  %s\nwant %s", b, compact(tt.want))
			}
		})
	}
}

func compact(s string) string {
	var out []byte
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' && (i == 0 || s[i-1] != '\\') {
			inStr = !inStr
		}
		if c == ' ' && !inStr {
			continue
		}
		out = append(out, c)
	}
	return string(out)
}
