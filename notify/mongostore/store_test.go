package mongostore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

func fromJSON[T any, P interface {
	*T
	json.Unmarshaler
}](t *testing.T, s string) P {
	t.Helper()
	p := P(new(T))
	if err := json.Unmarshal([]byte(s), p); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return p
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSchemalessRecordsKeepUnknownFields(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		t.Run("notification", func(t *testing.T) {
			n := fromJSON[notify.Notification](t, `{"serviceName":"s","channel":"email","message":{"subject":"x","extra":{"deep":[1,{"k":"v"}]}},"data":[1,2],"callbackHeaders":{"X-A":"1"},"priority":5}`)
			if err := s.Notifications().Insert(ctx, n); err != nil {
				t.Fatal(err)
			}
			got, err := s.Notifications().FindByID(ctx, n.ID.Hex())
			if err != nil {
				t.Fatal(err)
			}
			if toJSON(t, got) != toJSON(t, n) {
				t.Errorf("read back %s\nwritten    %s", toJSON(t, got), toJSON(t, n))
			}
			for _, want := range []string{`"callbackHeaders":{"X-A":"1"}`, `"priority":5`, `"extra":{"deep":[1,{"k":"v"}]}`, `"data":[1,2]`} {
				if !strings.Contains(toJSON(t, got), want) {
					t.Errorf("%s lost", want)
				}
			}
		})
		t.Run("configuration value of any shape", func(t *testing.T) {
			c := fromJSON[notify.Configuration](t, `{"name":"subscription","serviceName":"s","value":{"confirmationRequest":{"sms":{"textBody":"{confirmation_code}"}},"list":[true,null,2.5]},"note":"kept"}`)
			if err := s.Configurations().Insert(ctx, c); err != nil {
				t.Fatal(err)
			}
			got, err := s.Configurations().FindByID(ctx, c.ID.Hex())
			if err != nil {
				t.Fatal(err)
			}
			if toJSON(t, got) != toJSON(t, c) {
				t.Errorf("read back %s\nwritten    %s", toJSON(t, got), toJSON(t, c))
			}
		})
		t.Run("bounce and rss", func(t *testing.T) {
			b := fromJSON[notify.Bounce](t, `{"channel":"email","userChannelId":"a@b.c","hardBounceCount":2,"bounceMessages":[{"date":"2026-01-02T03:04:05.006Z","message":"550"}],"source":"smtp"}`)
			if err := s.Bounces().Insert(ctx, b); err != nil {
				t.Fatal(err)
			}
			gotB, err := s.Bounces().FindByID(ctx, b.ID.Hex())
			if err != nil {
				t.Fatal(err)
			}
			if toJSON(t, gotB) != toJSON(t, b) || !strings.Contains(toJSON(t, gotB), `"source":"smtp"`) {
				t.Errorf("bounce read back %s", toJSON(t, gotB))
			}
			r := &notify.Rss{ServiceName: "feed", LastPoll: time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC),
				Items: []notify.Fields{notify.NewFields("guid", "1", "_notifyBCLastPoll", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}}
			if err := s.Rss().Insert(ctx, r); err != nil {
				t.Fatal(err)
			}
			gotR, err := s.Rss().FindByID(ctx, r.ID.Hex())
			if err != nil {
				t.Fatal(err)
			}
			if toJSON(t, gotR) != toJSON(t, r) {
				t.Errorf("rss read back %s\nwritten %s", toJSON(t, gotR), toJSON(t, r))
			}
		})
		t.Run("administrator drops them", func(t *testing.T) {
			a := fromJSON[notify.Administrator](t, `{"email":"a@b.c","username":"a","isSuper":true}`)
			if err := s.Administrators().Insert(ctx, a); err != nil {
				t.Fatal(err)
			}
			got, err := s.Administrators().FindByID(ctx, a.ID.Hex())
			if err != nil {
				t.Fatal(err)
			}
			out := toJSON(t, got)
			if strings.Contains(out, "isSuper") || strings.Contains(out, "emailLowercase") {
				t.Errorf("administrator shows %s", out)
			}
		})
	})
}

func TestIDsAreStoredAsUnderscoreIDAndShownAsID(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		raw := rawDB(t, s)
		sub := &notify.Subscription{ServiceName: "s", UserChannelID: "a@b.c"}
		if err := s.Subscriptions().Insert(ctx, sub); err != nil {
			t.Fatal(err)
		}
		var doc bson.D
		if err := raw.Collection("subscription").FindOne(ctx, bson.D{{Key: "_id", Value: bson.ObjectID(sub.ID)}}).Decode(&doc); err != nil {
			t.Fatalf("stored under _id as an ObjectId: %v", err)
		}
		for _, e := range doc {
			if e.Key == "id" || e.Key == "__v" {
				t.Errorf("stored document has %q", e.Key)
			}
		}
		out := toJSON(t, sub)
		if !strings.HasPrefix(out, `{"id":"`+sub.ID.Hex()+`"`) || strings.Contains(out, "_id") {
			t.Errorf("JSON %s", out)
		}
		// Filters, sorts and projections say id, as the API's clients do.
		got, err := s.Subscriptions().Find(ctx, mongostore.Query{Filter: map[string]any{"id": sub.ID.Hex()}, Sort: bson.D{{Key: "id", Value: "desc"}}})
		if err != nil || len(got) != 1 || got[0].ID != sub.ID {
			t.Fatalf("find by id filter: %v %v", got, err)
		}
		got, err = s.Subscriptions().Find(ctx, mongostore.Query{Filter: bson.M{"id": bson.M{"$in": []any{sub.ID.Hex(), "5f1e2d3c4b5a697887766554"}}}})
		if err != nil || len(got) != 1 {
			t.Fatalf("find by id $in: %v %v", got, err)
		}
		// Documents the original wrote (with __v) read back without it.
		oid := bson.NewObjectID()
		if _, err := raw.Collection("subscription").InsertOne(ctx, bson.D{{Key: "_id", Value: oid}, {Key: "serviceName", Value: "s"}, {Key: "__v", Value: 0}}); err != nil {
			t.Fatal(err)
		}
		old, err := s.Subscriptions().FindByID(ctx, oid.Hex())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(toJSON(t, old), "__v") {
			t.Errorf("JSON %s", toJSON(t, old))
		}
	})
}

func TestDatesAreStoredAsDatesAndShownWithMilliseconds(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		raw := rawDB(t, s)
		n := fromJSON[notify.Notification](t, `{"serviceName":"s","validTill":"2026-05-06T07:08:09Z","invalidBefore":"2026-01-02T03:04:05.123456Z"}`)
		if err := s.Notifications().Insert(ctx, n); err != nil {
			t.Fatal(err)
		}
		var doc bson.M
		if err := raw.Collection("notification").FindOne(ctx, bson.D{{Key: "_id", Value: bson.ObjectID(n.ID)}}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"created", "updated", "validTill", "invalidBefore"} {
			if _, ok := doc[k].(bson.DateTime); !ok {
				t.Errorf("%s stored as %T, want a BSON date", k, doc[k])
			}
		}
		got, err := s.Notifications().FindByID(ctx, n.ID.Hex())
		if err != nil {
			t.Fatal(err)
		}
		out := toJSON(t, got)
		for _, want := range []string{`"validTill":"2026-05-06T07:08:09.000Z"`, `"invalidBefore":"2026-01-02T03:04:05.123Z"`, `"created":"` + notify.FormatTime(n.Created) + `"`} {
			if !strings.Contains(out, want) {
				t.Errorf("JSON %s lacks %s", out, want)
			}
		}
		// A date in a filter may be a string, as the API's clients send it.
		for _, tc := range []struct {
			name   string
			filter any
			want   int
		}{
			{"string after the date matches nothing", bson.M{"validTill": bson.M{"$gt": "2026-05-06T07:08:09.000Z"}}, 0},
			{"string before the date matches", bson.M{"validTill": bson.M{"$gte": "2026-05-06T07:08:09Z"}}, 1},
			{"equality with a string", bson.M{"invalidBefore": "2026-01-02T03:04:05.123Z"}, 1},
			{"created since an hour ago", bson.M{"created": bson.M{"$gt": notify.FormatTime(time.Now().Add(-time.Hour))}}, 1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c, err := s.Notifications().Count(ctx, tc.filter)
				if err != nil || c != int64(tc.want) {
					t.Errorf("count = %d, %v; want %d", c, err, tc.want)
				}
			})
		}
	})
}

func TestAdministratorEmailIsUniqueIgnoringCase(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		if _, err := s.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
		admins := s.Administrators()
		first := &notify.Administrator{Email: "Admin@Example.org"}
		if err := admins.Insert(ctx, first); err != nil {
			t.Fatal(err)
		}
		t.Run("insert of the same address in other case is a duplicate", func(t *testing.T) {
			err := admins.Insert(ctx, &notify.Administrator{Email: "admin@EXAMPLE.org"})
			if !errors.Is(err, notify.ErrDuplicate) {
				t.Fatalf("err = %v, want ErrDuplicate", err)
			}
		})
		other := &notify.Administrator{Email: "other@example.org"}
		if err := admins.Insert(ctx, other); err != nil {
			t.Fatal(err)
		}
		t.Run("update to an address in other case is a duplicate", func(t *testing.T) {
			err := admins.UpdateByID(ctx, other.ID.Hex(), bson.M{"$set": bson.M{"email": "ADMIN@example.org"}})
			if !errors.Is(err, notify.ErrDuplicate) {
				t.Fatalf("err = %v, want ErrDuplicate", err)
			}
		})
		t.Run("replace with an address in other case is a duplicate", func(t *testing.T) {
			err := admins.Replace(ctx, &notify.Administrator{Meta: notify.Meta{ID: other.ID}, Email: "admin@example.ORG"})
			if !errors.Is(err, notify.ErrDuplicate) {
				t.Fatalf("err = %v, want ErrDuplicate", err)
			}
		})
		t.Run("changing the case of one's own address is allowed", func(t *testing.T) {
			if err := admins.UpdateByID(ctx, first.ID.Hex(), bson.M{"email": "ADMIN@example.org"}); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("lookup by email ignores case", func(t *testing.T) {
			got, err := s.FindAdministratorByEmail(ctx, "admin@example.ORG")
			if err != nil || got.ID != first.ID || got.Email != "ADMIN@example.org" {
				t.Fatalf("got %+v, %v", got, err)
			}
			if _, err := s.FindAdministratorByEmail(ctx, "nobody@example.org"); !errors.Is(err, notify.ErrNotFound) {
				t.Fatalf("unknown email: %v", err)
			}
		})
	})
}

func TestAdministratorsWrittenByTheOriginalGetTheirEmailKey(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		raw := rawDB(t, s)
		oid := bson.NewObjectID()
		if _, err := raw.Collection("administrator").InsertOne(ctx, bson.D{{Key: "_id", Value: oid}, {Key: "email", Value: "Old@Example.org"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := s.FindAdministratorByEmail(ctx, "old@example.org")
		if err != nil || got.ID != notify.ID(oid) {
			t.Fatalf("got %+v, %v", got, err)
		}
		if err := s.Administrators().Insert(ctx, &notify.Administrator{Email: "OLD@example.org"}); !errors.Is(err, notify.ErrDuplicate) {
			t.Fatalf("err = %v, want ErrDuplicate", err)
		}
	})
}

func TestEnsureIndexes(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		raw := rawDB(t, s)
		// An existing deployment made these by hand: same name as ours
		// with other options, and our keys under another name.
		if _, err := raw.Collection("configuration").Indexes().CreateOne(ctx, mongo.IndexModel{
			Keys:    bson.D{{Key: "name", Value: 1}, {Key: "serviceName", Value: 1}},
			Options: options.Index().SetName("unique_name_serviceName"),
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Collection("subscription").Indexes().CreateOne(ctx, mongo.IndexModel{
			Keys:    bson.D{{Key: "serviceName", Value: 1}, {Key: "state", Value: 1}, {Key: "channel", Value: 1}},
			Options: options.Index().SetName("by_service"),
		}); err != nil {
			t.Fatal(err)
		}
		first, err := s.EnsureIndexes(ctx)
		if err != nil {
			t.Fatalf("an existing index with other options must not fail the start: %v", err)
		}
		action := func(reports []mongostore.IndexReport, coll, name string) mongostore.IndexAction {
			for _, r := range reports {
				if r.Collection == coll && r.Name == name {
					return r.Action
				}
			}
			return ""
		}
		tests := []struct {
			name, coll, index string
			want              mongostore.IndexAction
		}{
			{"a same-named index with other options is kept", "configuration", "unique_name_serviceName", mongostore.IndexKeptDifferent},
			{"our keys under another name count as present", "subscription", "serviceName_state_channel", mongostore.IndexPresent},
			{"a missing index is created", "subscription", "created", mongostore.IndexCreated},
			{"the administrator email key index is created", "administrator", "unique_emailLowercase", mongostore.IndexCreated},
			{"UserCredential userId is unique", "UserCredential", "unique_userId", mongostore.IndexCreated},
			{"bounce lookups are indexed", "bounce", "state_channel_userChannelId", mongostore.IndexCreated},
			{"the console's composites are server indexes too", "subscription", "created_serviceName_channel_state", mongostore.IndexCreated},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got := action(first, tt.coll, tt.index); got != tt.want {
					t.Errorf("%s.%s: %s, want %s", tt.coll, tt.index, got, tt.want)
				}
			})
		}
		t.Run("the kept index is left as it was", func(t *testing.T) {
			cur, err := raw.Collection("configuration").Indexes().List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ixs []bson.M
			if err := cur.All(ctx, &ixs); err != nil {
				t.Fatal(err)
			}
			for _, ix := range ixs {
				if ix["name"] == "unique_name_serviceName" && ix["unique"] == true {
					t.Errorf("index was changed: %v", ix)
				}
			}
		})
		t.Run("a second run creates nothing", func(t *testing.T) {
			second, err := s.EnsureIndexes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(second) != len(first) {
				t.Fatalf("%d reports, then %d", len(first), len(second))
			}
			for _, r := range second {
				if r.Action == mongostore.IndexCreated || r.Action == mongostore.IndexFailed {
					t.Errorf("second run: %+v", r)
				}
			}
		})
		t.Run("text indexes are created or reported unsupported", func(t *testing.T) {
			for _, r := range first {
				if r.Name == "$**_text" && r.Action != mongostore.IndexCreated && r.Action != mongostore.IndexUnsupported {
					t.Errorf("%+v", r)
				}
			}
		})
	})
}

// The embedded store cannot have text indexes: a start says nothing about
// them (it used to log one line per collection at every start), and a
// second start says nothing at all at info.
func TestEnsureIndexesIsQuietAboutWhatTheEmbeddedStoreCannotHave(t *testing.T) {
	var logs strings.Builder
	s := openStore(t, embeddedURI, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	ctx := context.Background()
	first, err := s.EnsureIndexes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text := 0
	for _, r := range first {
		if r.Name == "$**_text" {
			text++
			if r.Action != mongostore.IndexUnsupported {
				t.Errorf("%+v, want unsupported", r)
			}
		}
	}
	if text == 0 {
		t.Fatal("no text index reported")
	}
	if strings.Contains(logs.String(), "text") || strings.Contains(logs.String(), "not supported") {
		t.Errorf("the first start logs about indexes the store cannot have:\n%s", logs.String())
	}
	logs.Reset()
	if _, err := s.EnsureIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Errorf("a second start logs:\n%s", logs.String())
	}
}

func TestUniqueNameAndServiceNameOfConfigurations(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		if _, err := s.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
		mk := func(name, svc string) error {
			return s.Configurations().Insert(ctx, &notify.Configuration{Name: name, ServiceName: svc, Value: "v"})
		}
		if err := mk("subscription", "a"); err != nil {
			t.Fatal(err)
		}
		if err := mk("subscription", "b"); err != nil {
			t.Fatalf("same name, other service: %v", err)
		}
		if err := mk("subscription", "a"); !errors.Is(err, notify.ErrDuplicate) {
			t.Fatalf("same name and service: %v, want ErrDuplicate", err)
		}
		// Configurations without a service (rsa, dbSchemaVersion) are unique
		// by name alone, as in MongoDB where a missing field indexes as null.
		if err := mk("rsa", ""); err != nil {
			t.Fatal(err)
		}
		if err := mk("rsa", ""); !errors.Is(err, notify.ErrDuplicate) {
			t.Fatalf("same name, both without service: %v, want ErrDuplicate", err)
		}
		c, err := s.Configurations().FindOne(ctx, mongostore.Query{Filter: bson.M{"name": "rsa"}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(toJSON(t, c), "serviceName") {
			t.Errorf("a configuration without service shows %s", toJSON(t, c))
		}
		n, err := s.Configurations().Count(ctx, bson.M{"name": "rsa", "serviceName": nil})
		if err != nil || n != 1 {
			t.Errorf("filter on a missing serviceName: %d, %v", n, err)
		}
		other, err := s.Configurations().FindOne(ctx, mongostore.Query{Filter: bson.M{"name": "subscription", "serviceName": "b"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Configurations().UpdateByID(ctx, other.ID.Hex(), bson.M{"name": "rsa", "$unset": bson.M{"serviceName": 1}}); !errors.Is(err, notify.ErrDuplicate) {
			t.Errorf("unsetting the service into a duplicate: %v, want ErrDuplicate", err)
		}
		if err := s.Configurations().UpdateByID(ctx, other.ID.Hex(), bson.M{"$unset": bson.M{"serviceName": 1}}); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Configurations().FindByID(ctx, other.ID.Hex())
		if got.ServiceName != "" || got.Extra.Has("serviceName") {
			t.Errorf("after $unset: %s", toJSON(t, got))
		}
	})
}

func TestUnknownAndMalformedIDsAreNotFound(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		ids := map[string]string{
			"unknown ObjectId": notify.NewID().Hex(),
			"malformed hex":    "not-an-id",
			"too short":        "5f1e",
			"empty":            "",
		}
		for name, id := range ids {
			t.Run(name, func(t *testing.T) {
				subs := s.Subscriptions()
				checks := map[string]error{}
				_, checks["FindByID"] = subs.FindByID(ctx, id)
				checks["UpdateByID"] = subs.UpdateByID(ctx, id, bson.M{"state": "confirmed"})
				checks["DeleteByID"] = subs.DeleteByID(ctx, id)
				_, checks["configuration FindByID"] = s.Configurations().FindByID(ctx, id)
				_, checks["AccessToken FindByID"] = s.AccessTokens().FindByID(ctx, id)
				checks["AccessToken DeleteByID"] = s.AccessTokens().DeleteByID(ctx, id)
				if oid, err := notify.ParseID(id); err == nil {
					checks["Replace"] = subs.Replace(ctx, &notify.Subscription{Meta: notify.Meta{ID: oid}, ServiceName: "s"})
				}
				for op, err := range checks {
					if !errors.Is(err, notify.ErrNotFound) {
						t.Errorf("%s(%q) = %v, want ErrNotFound", op, id, err)
					}
				}
			})
		}
	})
}

func seedConfigurations(t *testing.T, s *mongostore.Store) {
	t.Helper()
	ctx := context.Background()
	for i, svc := range []string{"a", "b", "c", "d", "e"} {
		c := &notify.Configuration{Name: "n", ServiceName: svc, Value: notify.NewFields("rank", int32(i)), Extra: notify.NewFields("group", []string{"odd", "even"}[i%2])}
		if err := s.Configurations().Insert(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFindFiltersSortsAndPages(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		seedConfigurations(t, s)
		services := func(cs []*notify.Configuration) string {
			var out []string
			for _, c := range cs {
				out = append(out, c.ServiceName)
			}
			return strings.Join(out, ",")
		}
		tests := []struct {
			name string
			q    mongostore.Query
			want string
		}{
			{"no filter returns everything in insertion order", mongostore.Query{Sort: bson.D{{Key: "created", Value: 1}, {Key: "id", Value: 1}}}, "a,b,c,d,e"},
			{"sort descending by a word", mongostore.Query{Sort: bson.D{{Key: "serviceName", Value: "desc"}}}, "e,d,c,b,a"},
			{"skip and limit", mongostore.Query{Sort: bson.D{{Key: "serviceName", Value: 1}}, Skip: 1, Limit: 2}, "b,c"},
			{"$in on a field", mongostore.Query{Filter: bson.M{"serviceName": bson.M{"$in": bson.A{"b", "d", "x"}}}, Sort: bson.D{{Key: "serviceName", Value: 1}}}, "b,d"},
			{"$or of conditions", mongostore.Query{Filter: bson.D{{Key: "$or", Value: bson.A{bson.M{"serviceName": "a"}, bson.M{"value.rank": bson.M{"$gte": 4}}}}}, Sort: bson.D{{Key: "serviceName", Value: 1}}}, "a,e"},
			{"an unknown field is matched like any other", mongostore.Query{Filter: map[string]any{"group": "even"}, Sort: bson.D{{Key: "serviceName", Value: -1}}}, "d,b"},
			{"$ne and $nin", mongostore.Query{Filter: bson.M{"serviceName": bson.M{"$ne": "a", "$nin": bson.A{"b"}}}, Sort: bson.D{{Key: "serviceName", Value: 1}}}, "c,d,e"},
			{"$regex", mongostore.Query{Filter: bson.M{"serviceName": bson.M{"$regex": "^[ce]$"}}, Sort: bson.D{{Key: "serviceName", Value: 1}}}, "c,e"},
			{"$exists", mongostore.Query{Filter: bson.M{"missing": bson.M{"$exists": true}}}, ""},
			{"filter as notify.Fields", mongostore.Query{Filter: notify.NewFields("serviceName", "c")}, "c"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.Configurations().Find(ctx, tt.q)
				if err != nil {
					t.Fatal(err)
				}
				if services(got) != tt.want {
					t.Errorf("got %q, want %q", services(got), tt.want)
				}
			})
		}
		t.Run("projection returns only the selected fields", func(t *testing.T) {
			got, err := s.Configurations().Find(ctx, mongostore.Query{Filter: bson.M{"serviceName": "a"}, Projection: bson.M{"serviceName": true}})
			if err != nil || len(got) != 1 {
				t.Fatal(got, err)
			}
			f := got[0].Fields()
			if !slices.Equal(f.Keys(), []string{"id", "serviceName"}) {
				t.Errorf("keys %v", f.Keys())
			}
		})
		t.Run("count applies the filter", func(t *testing.T) {
			n, err := s.Configurations().Count(ctx, bson.M{"group": "odd"})
			if err != nil || n != 3 {
				t.Errorf("count = %d, %v", n, err)
			}
			n, err = s.Configurations().Count(ctx, nil)
			if err != nil || n != 5 {
				t.Errorf("count all = %d, %v", n, err)
			}
		})
		t.Run("a bad filter document is an error, not a panic", func(t *testing.T) {
			if _, err := s.Configurations().Find(ctx, mongostore.Query{Filter: 42}); err == nil {
				t.Error("accepted")
			}
		})
	})
}

func TestUpdatesAndDeletes(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		seedConfigurations(t, s)
		confs := s.Configurations()
		t.Run("update-many counts the records it changed", func(t *testing.T) {
			n, err := confs.UpdateMany(ctx, bson.M{"group": "odd"}, bson.M{"$set": bson.M{"value": "x"}})
			if err != nil || n != 3 {
				t.Fatalf("modified %d, %v; want 3", n, err)
			}
			n, err = confs.UpdateMany(ctx, bson.M{"group": "none"}, bson.M{"value": "y"})
			if err != nil || n != 0 {
				t.Fatalf("modified %d, %v; want 0", n, err)
			}
			c, _ := confs.Count(ctx, bson.M{"value": "x"})
			if c != 3 {
				t.Errorf("%d records have the new value", c)
			}
		})
		t.Run("update stamps updated and keeps created", func(t *testing.T) {
			c, err := confs.FindOne(ctx, mongostore.Query{Filter: bson.M{"serviceName": "b"}})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			if err := confs.UpdateByID(ctx, c.ID.Hex(), bson.M{"value": "new", "created": "2000-01-01T00:00:00Z", "id": "x"}); err != nil {
				t.Fatal(err)
			}
			got, _ := confs.FindByID(ctx, c.ID.Hex())
			if got.Value != "new" || !got.Created.Equal(c.Created) || !got.Updated.After(c.Updated) {
				t.Errorf("after update: value %v created %v (was %v) updated %v (was %v)", got.Value, got.Created, c.Created, got.Updated, c.Updated)
			}
		})
		t.Run("$unset and $addToSet pass through", func(t *testing.T) {
			n := &notify.Notification{ServiceName: "s", IsBroadcast: true}
			if err := s.Notifications().Insert(ctx, n); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := s.Notifications().UpdateByID(ctx, n.ID.Hex(), bson.M{"$addToSet": bson.M{"readBy": "u1"}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Notifications().UpdateByID(ctx, n.ID.Hex(), bson.M{"$unset": bson.M{"serviceName": 1}}); err != nil {
				t.Fatal(err)
			}
			got, _ := s.Notifications().FindByID(ctx, n.ID.Hex())
			if !slices.Equal(got.ReadBy, []string{"u1"}) || got.ServiceName != "" {
				t.Errorf("readBy %v serviceName %q", got.ReadBy, got.ServiceName)
			}
		})
		t.Run("find-one-and-update returns the updated record or not found", func(t *testing.T) {
			got, err := confs.FindOneAndUpdate(ctx, bson.M{"serviceName": "c"}, nil, bson.M{"value": "claimed"})
			if err != nil || got.Value != "claimed" {
				t.Fatalf("%v %v", got, err)
			}
			if _, err := confs.FindOneAndUpdate(ctx, bson.M{"serviceName": "zz"}, nil, bson.M{"value": 1}); !errors.Is(err, notify.ErrNotFound) {
				t.Fatalf("err %v", err)
			}
		})
		t.Run("replace keeps created and drops fields not given", func(t *testing.T) {
			c, _ := confs.FindOne(ctx, mongostore.Query{Filter: bson.M{"serviceName": "d"}})
			repl := &notify.Configuration{Meta: notify.Meta{ID: c.ID}, Name: "n2", Value: int32(1)}
			if err := confs.Replace(ctx, repl); err != nil {
				t.Fatal(err)
			}
			got, _ := confs.FindByID(ctx, c.ID.Hex())
			if got.Name != "n2" || got.ServiceName != "" || got.Extra.Has("group") || !got.Created.Equal(c.Created) {
				t.Errorf("after replace %s", toJSON(t, got))
			}
		})
		t.Run("delete-many counts", func(t *testing.T) {
			// b is the one left in group even: d lost its group in the replace.
			n, err := confs.DeleteMany(ctx, bson.M{"group": "even"})
			if err != nil || n != 1 {
				t.Fatalf("deleted %d, %v", n, err)
			}
			c, _ := confs.FindOne(ctx, mongostore.Query{})
			if err := confs.DeleteByID(ctx, c.ID.Hex()); err != nil {
				t.Fatal(err)
			}
			if _, err := confs.FindByID(ctx, c.ID.Hex()); !errors.Is(err, notify.ErrNotFound) {
				t.Fatalf("deleted record found: %v", err)
			}
		})
	})
}

func TestAccessTokensAndCredentials(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		if _, err := s.EnsureIndexes(ctx); err != nil {
			t.Fatal(err)
		}
		admin := &notify.Administrator{Email: "a@b.c"}
		if err := s.Administrators().Insert(ctx, admin); err != nil {
			t.Fatal(err)
		}
		ttl := int64(3600)
		tok := &notify.AccessToken{ID: strings.Repeat("aB3", 21) + "x", TTL: &ttl, Name: "ci", UserID: admin.ID}
		if err := s.AccessTokens().Insert(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if err := s.AccessTokens().Insert(ctx, &notify.AccessToken{UserID: admin.ID}); err == nil {
			t.Error("a token without its id was stored")
		}
		got, err := s.AccessTokens().FindByID(ctx, tok.ID)
		if err != nil || got.UserID != admin.ID || *got.TTL != 3600 {
			t.Fatalf("%+v %v", got, err)
		}
		// userId is an ObjectId in storage; the API filters with its hex.
		list, err := s.AccessTokens().Find(ctx, mongostore.Query{Filter: bson.M{"userId": admin.ID.Hex()}})
		if err != nil || len(list) != 1 {
			t.Fatalf("by userId hex: %v %v", list, err)
		}
		raw := rawDB(t, s)
		var doc bson.M
		if err := raw.Collection("AccessToken").FindOne(ctx, bson.M{"_id": tok.ID}).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if _, ok := doc["userId"].(bson.ObjectID); !ok {
			t.Errorf("userId stored as %T", doc["userId"])
		}
		cred := &notify.UserCredential{Password: "$2a$10$hash", UserID: admin.ID}
		if err := s.UserCredentials().Insert(ctx, cred); err != nil {
			t.Fatal(err)
		}
		if err := s.UserCredentials().Insert(ctx, &notify.UserCredential{Password: "x", UserID: admin.ID}); !errors.Is(err, notify.ErrDuplicate) {
			t.Errorf("second credential: %v, want ErrDuplicate", err)
		}
	})
}

func TestWithTransaction(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		admin := &notify.Administrator{Email: "tx@b.c"}
		err := s.WithTransaction(ctx, func(ctx context.Context) error {
			if err := s.Administrators().Insert(ctx, admin); err != nil {
				return err
			}
			return s.UserCredentials().Insert(ctx, &notify.UserCredential{Password: "h", UserID: admin.ID})
		})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := s.UserCredentials().Count(ctx, bson.M{"userId": admin.ID.Hex()})
		if n != 1 {
			t.Errorf("%d credentials", n)
		}
		if s.SupportsTransactions() {
			boom := fmt.Errorf("boom")
			err := s.WithTransaction(ctx, func(ctx context.Context) error {
				if err := s.Administrators().Insert(ctx, &notify.Administrator{Email: "rolled@b.c"}); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("err %v", err)
			}
			if _, err := s.FindAdministratorByEmail(ctx, "rolled@b.c"); !errors.Is(err, notify.ErrNotFound) {
				t.Errorf("rolled-back insert visible: %v", err)
			}
		}
	})
}

func TestPing(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		if err := s.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOpenRefusesABadURI(t *testing.T) {
	if _, err := mongostore.Open(context.Background(), "postgres://x", mongostore.Options{}); err == nil {
		t.Fatal("accepted")
	}
}

func TestUpdateOfUpdatedItselfIsNotStampedTwice(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		c := &notify.Configuration{Name: "n", Value: "v"}
		if err := s.Configurations().Insert(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := s.Configurations().UpdateByID(ctx, c.ID.Hex(), bson.M{"$unset": bson.M{"updated": ""}}); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Configurations().FindByID(ctx, c.ID.Hex())
		if !got.Updated.IsZero() {
			t.Errorf("updated = %v, want unset", got.Updated)
		}
	})
}

func TestDistinctStrings(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		for _, sub := range []notify.Subscription{
			{ServiceName: "b", State: notify.StateConfirmed},
			{ServiceName: "a", State: notify.StateConfirmed},
			{ServiceName: "b", State: notify.StateConfirmed},
			{ServiceName: "c", State: notify.StateUnconfirmed},
		} {
			if err := s.Subscriptions().Insert(ctx, &sub); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Subscriptions().DistinctStrings(ctx, "serviceName", bson.M{"state": notify.StateConfirmed})
		if err != nil || !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("got %v, %v", got, err)
		}
	})
}

func TestDataBreakingAUniqueIndexDoesNotStopTheStart(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		raw := rawDB(t, s)
		for range 2 {
			if _, err := raw.Collection("configuration").InsertOne(ctx, bson.D{{Key: "name", Value: "subscription"}, {Key: "serviceName", Value: "x"}, {Key: "value", Value: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		reports, err := s.EnsureIndexes(ctx)
		if err != nil {
			t.Fatalf("start failed: %v", err)
		}
		for _, r := range reports {
			if r.Collection == "configuration" && r.Name == "unique_name_serviceName" && r.Action != mongostore.IndexFailed {
				t.Errorf("%+v, want failed", r)
			}
		}
	})
}
