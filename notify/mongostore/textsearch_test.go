package mongostore_test

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

// A $text search (what the original console's search box sends) is
// answered on every store: by the text index on MongoDB, by the words in
// the collection's text fields on the embedded store, which has none.
func TestTextSearchOnEveryStore(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		for _, sub := range []*notify.Subscription{
			{ServiceName: "roadworks", Channel: "email", UserChannelID: "alice@invalid.local", State: "confirmed"},
			{ServiceName: "parks", Channel: "sms", UserChannelID: "250-555-0100", State: "confirmed"},
			{ServiceName: "parks", Channel: "email", UserChannelID: "bob@invalid.local", State: "unconfirmed"},
		} {
			if err := s.Subscriptions().Insert(ctx, sub); err != nil {
				t.Fatal(err)
			}
		}
		find := func(t *testing.T, filter bson.D) []string {
			t.Helper()
			recs, err := s.Subscriptions().Find(ctx, mongostore.Query{Filter: filter, Sort: bson.D{{Key: "userChannelId", Value: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			n, err := s.Subscriptions().Count(ctx, filter)
			if err != nil || int(n) != len(recs) {
				t.Fatalf("count %d (%v), found %d", n, err, len(recs))
			}
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.UserChannelID)
			}
			return ids
		}
		text := func(s string) bson.D {
			return bson.D{{Key: "$text", Value: bson.D{{Key: "$search", Value: s}}}}
		}
		for _, c := range []struct {
			name   string
			filter bson.D
			want   []string
		}{
			{"a word", text("parks"), []string{"250-555-0100", "bob@invalid.local"}},
			{"any of two words", text("roadworks sms"), []string{"250-555-0100", "alice@invalid.local"}},
			{"ignoring case", text("PARKS"), []string{"250-555-0100", "bob@invalid.local"}},
			{"with other conditions", append(text("parks"), bson.E{Key: "state", Value: "unconfirmed"}), []string{"bob@invalid.local"}},
			{"no match", text("library"), nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				if got := find(t, c.filter); !slices.Equal(got, c.want) {
					t.Errorf("found %v, want %v", got, c.want)
				}
			})
		}
	})
}
