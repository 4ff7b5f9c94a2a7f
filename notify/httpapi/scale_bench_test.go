package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/httpapi/apitest"
	"github.com/govkit/govkit/notify/mongostore"
)

// BenchmarkScale measures the subscriber-facing calls of the API against
// an embedded (file-backed) store that already holds 1k, 10k and 100k
// subscriptions: whether their cost grows with the collection (issue P9).
// The subscriptions are seeded straight into the store in batches, not
// through the API. Every user owns five of them, so a user's list has the
// same size at every scale. GOVKIT_BENCH_SCALES (e.g. "1000,10000")
// chooses the sizes; the default is all three.
//
//	go test ./notify/httpapi -run '^$' -bench BenchmarkScale -benchtime 200x
func BenchmarkScale(b *testing.B) {
	scales := []int{1000, 10000, 100000}
	if v := os.Getenv("GOVKIT_BENCH_SCALES"); v != "" {
		scales = nil
		for _, f := range strings.Split(v, ",") {
			var n int
			if _, err := fmt.Sscan(f, &n); err != nil || n < 100 {
				b.Fatalf("GOVKIT_BENCH_SCALES: %q is not a size of at least 100", f)
			}
			scales = append(scales, n)
		}
	}
	for _, n := range scales {
		b.Run(scaleName(n), func(b *testing.B) { benchScale(b, n) })
	}
}

// scaleName names a size as 1k, 100k; a name with "=" is no database name.
func scaleName(n int) string {
	if n%1000 == 0 {
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

const scaleUserSubs = 5

func scaleSub(i int) *notify.Subscription {
	return &notify.Subscription{
		ServiceName:   fmt.Sprintf("svc%d", i%10),
		Channel:       notify.ChannelEmail,
		UserChannelID: fmt.Sprintf("u%d@example.org", i),
		State:         notify.StateConfirmed,
		UserID:        fmt.Sprintf("user%d", i/scaleUserSubs),
		ConfirmationRequest: notify.Fields{
			{Key: "confirmationCode", Value: "12345"}, {Key: "sendRequest", Value: true},
			{Key: "from", Value: "no_reply@invalid.local"}, {Key: "subject", Value: "Subscription confirmation"},
			{Key: "textBody", Value: "Enter {subscription_confirmation_code} on screen"},
		},
		UnsubscriptionCode: "54321",
		Data:               notify.Fields{{Key: "city", Value: fmt.Sprintf("city%d", i%100)}},
	}
}

func benchScale(b *testing.B, n int) {
	ctx := context.Background()
	e := apitest.Start(b, apitest.Options{Config: []map[string]any{{
		"subscription": map[string]any{"detectDuplicatedSubscription": true},
	}}})
	// a scan of 100k documents on a busy machine can outlast the
	// client's usual 30 seconds
	e.Client.Timeout = 10 * time.Minute
	subs := e.Store.Subscriptions()
	batch := make([]*notify.Subscription, 0, 1000)
	for i := range n {
		batch = append(batch, scaleSub(i))
		if len(batch) == cap(batch) || i == n-1 {
			if err := subs.InsertMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	// A few subscriptions in the middle of the collection are the ones
	// the calls below use; the address of the first also subscribes to
	// two more services, for unsubscribe with additionalServices=_all.
	var ids []string
	for k := range 8 {
		i := n/2 + k*scaleUserSubs
		s, err := subs.FindOne(ctx, mongostore.Query{Filter: bson.D{{Key: "userChannelId", Value: scaleSub(i).UserChannelID}}})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, s.ID.Hex())
	}
	first, _ := subs.FindByID(ctx, ids[0])
	extra := []string{ids[0]}
	for _, svc := range []string{"other1", "other2"} {
		s := scaleSub(n / 2)
		s.ServiceName = svc
		s.UserID = "someone-else"
		if err := subs.Insert(ctx, s); err != nil {
			b.Fatal(err)
		}
		extra = append(extra, s.ID.Hex())
	}
	reset := func(b *testing.B, ids ...string) {
		b.StopTimer()
		for _, id := range ids {
			if err := subs.UpdateByID(ctx, id, bson.D{
				{Key: "$set", Value: bson.D{{Key: "state", Value: notify.StateConfirmed}}},
				{Key: "$unset", Value: bson.D{{Key: "unsubscribedAdditionalServices", Value: ""}}},
			}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	user := first.UserID

	b.Run("create", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			e.Do(b, "POST", "/api/subscriptions", map[string]any{
				"serviceName": "svc1", "channel": "email", "userChannelId": fmt.Sprintf("new%d@example.org", i),
			}, apitest.Anonymous...).Expect(b, http.StatusOK)
		}
	})
	b.Run("verify", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			e.Do(b, "GET", "/api/subscriptions/"+ids[i%len(ids)]+"/verify?confirmationCode=12345", nil, apitest.Anonymous...).Expect(b, http.StatusOK)
		}
	})
	b.Run("verify-replace", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			e.Do(b, "GET", "/api/subscriptions/"+ids[1+i%(len(ids)-1)]+"/verify?confirmationCode=12345&replace=true", nil, apitest.Anonymous...).Expect(b, http.StatusOK)
		}
	})
	b.Run("unsubscribe", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			id := ids[1+i%(len(ids)-1)]
			reset(b, id)
			e.Do(b, "GET", "/api/subscriptions/"+id+"/unsubscribe?unsubscriptionCode=54321", nil, apitest.Anonymous...).Expect(b, http.StatusOK)
		}
	})
	b.Run("unsubscribe-all", func(b *testing.B) {
		for b.Loop() {
			reset(b, extra...)
			e.Do(b, "GET", "/api/subscriptions/"+ids[0]+"/unsubscribe?unsubscriptionCode=54321&additionalServices=_all", nil, apitest.Anonymous...).Expect(b, http.StatusOK)
		}
		reset(b, extra...)
	})
	b.Run("user-list", func(b *testing.B) {
		for b.Loop() {
			var got []any
			e.Do(b, "GET", "/api/subscriptions", nil, apitest.SMUser(user)...).Expect(b, http.StatusOK).JSON(b, &got)
			if len(got) != scaleUserSubs {
				b.Fatalf("user %s has %d subscriptions, want %d", user, len(got), scaleUserSubs)
			}
		}
	})
	b.Run("user-get-by-id", func(b *testing.B) {
		for b.Loop() {
			var got []any
			e.Do(b, "GET", "/api/subscriptions?filter="+q(`{"where":{"id":"`+ids[0]+`"}}`), nil, apitest.SMUser(user)...).Expect(b, http.StatusOK).JSON(b, &got)
			if len(got) != 1 {
				b.Fatalf("got %d subscriptions, want 1", len(got))
			}
		}
	})
	b.Run("admin-get-by-id", func(b *testing.B) {
		for b.Loop() {
			var got []any
			e.Do(b, "GET", "/api/subscriptions?filter="+q(`{"where":{"id":"`+ids[0]+`"}}`), nil).Expect(b, http.StatusOK).JSON(b, &got)
			if len(got) != 1 {
				b.Fatalf("got %d subscriptions, want 1", len(got))
			}
		}
	})
}
