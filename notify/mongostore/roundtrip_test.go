package mongostore_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

func TestUnknownFieldsRoundTrip(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		var sub notify.Subscription
		in := `{"serviceName":"svc","userChannelId":"a@b.c","data":{"x":1,"y":[1.5,"a",{"z":null}],"big":3000000000},"custom":{"b":2,"a":true}}`
		if err := json.Unmarshal([]byte(in), &sub); err != nil {
			t.Fatal(err)
		}
		if err := s.Subscriptions().Insert(ctx, &sub); err != nil {
			t.Fatal(err)
		}
		got, err := s.Subscriptions().FindByID(ctx, sub.ID.Hex())
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"id":"` + sub.ID.Hex() + `","serviceName":"svc","channel":"email","userChannelId":"a@b.c","state":"unconfirmed",` +
			`"data":{"x":1,"y":[1.5,"a",{"z":null}],"big":3000000000},` +
			`"created":"` + notify.FormatTime(sub.Created) + `","updated":"` + notify.FormatTime(sub.Updated) + `",` +
			`"custom":{"b":2,"a":true}}`
		if string(b) != want {
			t.Errorf("stored and read back:\n got %s\nwant %s", b, want)
		}
	})
}
