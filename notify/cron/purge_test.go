package cron_test

import (
	"context"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/cron"
	"github.com/govkit/govkit/notify/mongostore"
)

func ago(d time.Duration) time.Time { return start.Add(-d) }

const day = 24 * time.Hour

func TestPurgeDataDeletesWhatTheOriginalDeletes(t *testing.T) {
	f := newFixture(t, map[string]any{"cron": map[string]any{"purgeData": map[string]any{
		"pushNotificationRetentionDays": 10.0, "expiredInAppNotificationRetentionDays": 5.0,
		"nonConfirmedSubscriptionRetentionDays": 3.0, "deletedBounceRetentionDays": 2.0,
		"expiredAccessTokenRetentionDays": 1.0,
	}}})
	ctx := context.Background()
	type rec struct {
		name string
		n    notify.Notification
		gone bool
	}
	notes := []rec{
		{"old sent email", notify.Notification{Channel: notify.ChannelEmail, State: notify.StateSent, Meta: notify.Meta{Created: ago(11 * day)}}, true},
		{"old failed sms", notify.Notification{Channel: notify.ChannelSMS, State: notify.StateError, Meta: notify.Meta{Created: ago(11 * day)}}, true},
		{"old sent broadcast", notify.Notification{Channel: notify.ChannelEmail, IsBroadcast: true, State: notify.StateSent, Meta: notify.Meta{Created: ago(30 * day)}}, true},
		{"recent sent email", notify.Notification{Channel: notify.ChannelEmail, State: notify.StateSent, Meta: notify.Meta{Created: ago(9 * day)}}, false},
		{"old email still new (held)", notify.Notification{Channel: notify.ChannelEmail, State: notify.StateNew, Meta: notify.Meta{Created: ago(100 * day)}}, false},
		{"old broadcast still sending", notify.Notification{Channel: notify.ChannelEmail, IsBroadcast: true, State: notify.StateSending, Meta: notify.Meta{Created: ago(100 * day)}}, false},
		{"in-app expired long ago", notify.Notification{Channel: notify.ChannelInApp, ValidTill: ago(6 * day), Meta: notify.Meta{Created: ago(100 * day)}}, true},
		{"in-app expired lately", notify.Notification{Channel: notify.ChannelInApp, ValidTill: ago(4 * day)}, false},
		{"in-app never expiring, old", notify.Notification{Channel: notify.ChannelInApp, Meta: notify.Meta{Created: ago(100 * day)}}, false},
		{"in-app deleted just now", notify.Notification{Channel: notify.ChannelInApp, State: notify.StateDeleted}, true},
		{"email in state deleted, recent", notify.Notification{Channel: notify.ChannelEmail, State: notify.StateDeleted, Meta: notify.Meta{Created: ago(day)}}, false},
	}
	for i := range notes {
		notes[i].n = *f.insert(notes[i].n)
	}
	// The old broadcast has results beside it; so has the live one.
	oldB, liveB := notes[2].n.ID, notes[5].n.ID
	s1 := f.subscribe(notify.Subscription{ServiceName: "purgedBroadcasts", UserChannelID: "s1@foo.com"})
	f.subscribe(notify.Subscription{ServiceName: "purgedBroadcasts", UserChannelID: "s2@foo.com"})
	for _, n := range []notify.Notification{notes[2].n, notes[5].n} {
		n.ServiceName = "purgedBroadcasts"
		f.plan(&n, notify.DispatchResult{SubscriptionID: s1.ID.Hex(), Outcome: notify.DispatchSuccessful})
	}

	subs := []struct {
		name string
		s    notify.Subscription
		gone bool
	}{
		{"unconfirmed, old", notify.Subscription{State: notify.StateUnconfirmed, UserChannelID: "a@x", Meta: notify.Meta{Updated: ago(4 * day)}}, true},
		{"deleted, old", notify.Subscription{State: notify.StateDeleted, UserChannelID: "b@x", Meta: notify.Meta{Updated: ago(4 * day)}}, true},
		{"unconfirmed, recent", notify.Subscription{State: notify.StateUnconfirmed, UserChannelID: "c@x", Meta: notify.Meta{Updated: ago(2 * day)}}, false},
		{"confirmed, old", notify.Subscription{State: notify.StateConfirmed, UserChannelID: "d@x", Meta: notify.Meta{Updated: ago(400 * day)}}, false},
	}
	for i := range subs {
		subs[i].s = *f.subscribe(subs[i].s)
	}
	bounces := []struct {
		name string
		b    notify.Bounce
		gone bool
	}{
		{"deleted, old", notify.Bounce{Channel: "email", UserChannelID: "a@x", State: notify.BounceDeleted, Meta: notify.Meta{Updated: ago(3 * day)}}, true},
		{"deleted, recent", notify.Bounce{Channel: "email", UserChannelID: "b@x", State: notify.BounceDeleted, Meta: notify.Meta{Updated: ago(day)}}, false},
		{"active, old", notify.Bounce{Channel: "email", UserChannelID: "c@x", State: notify.BounceActive, Meta: notify.Meta{Updated: ago(300 * day)}}, false},
	}
	for i := range bounces {
		if err := f.store.Bounces().Insert(ctx, &bounces[i].b); err != nil {
			t.Fatal(err)
		}
	}
	ttl := func(s int64) *int64 { return &s }
	admin := notify.NewID()
	tokens := []struct {
		tok  notify.AccessToken
		gone bool
	}{
		// ttl 0 created 2 days ago: expired 2 days ago, past the 1-day retention.
		{notify.AccessToken{ID: "t-zero-ttl", TTL: ttl(0), UserID: admin, Created: ago(2 * day)}, true},
		// a day's ttl from 2.5 days ago: expired 1.5 days ago.
		{notify.AccessToken{ID: "t-expired", TTL: ttl(86400), UserID: admin, Created: ago(60 * time.Hour)}, true},
		// a day's ttl from 1.5 days ago: expired half a day ago, within retention.
		{notify.AccessToken{ID: "t-lately-expired", TTL: ttl(86400), UserID: admin, Created: ago(36 * time.Hour)}, false},
		{notify.AccessToken{ID: "t-no-ttl", UserID: admin, Created: ago(1000 * day)}, false},
	}
	for i := range tokens {
		if err := f.store.AccessTokens().Insert(ctx, &tokens[i].tok); err != nil {
			t.Fatal(err)
		}
	}

	p, err := f.svc.PurgeData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.PushNotifications != 3 || p.ExpiredInAppNotifications != 1 || p.DeletedInAppNotifications != 1 ||
		// the old broadcast's header, chunk snapshot, chunk results and one
		// batch of outcomes
		p.NonConfirmedSubscriptions != 2 || p.DeletedBounces != 1 || p.ExpiredAccessTokens != 2 || p.DispatchRecords != 4 {
		t.Errorf("purged %+v", p)
	}
	for _, r := range notes {
		_, err := f.store.Notifications().FindByID(ctx, r.n.ID.Hex())
		if gone := err != nil; gone != r.gone {
			t.Errorf("notification %q: gone = %v, want %v", r.name, gone, r.gone)
		}
	}
	for _, r := range subs {
		_, err := f.store.Subscriptions().FindByID(ctx, r.s.ID.Hex())
		if gone := err != nil; gone != r.gone {
			t.Errorf("subscription %q: gone = %v, want %v", r.name, gone, r.gone)
		}
	}
	for _, r := range bounces {
		_, err := f.store.Bounces().FindByID(ctx, r.b.ID.Hex())
		if gone := err != nil; gone != r.gone {
			t.Errorf("bounce %q: gone = %v, want %v", r.name, gone, r.gone)
		}
	}
	for _, r := range tokens {
		_, err := f.store.AccessTokens().FindByID(ctx, r.tok.ID)
		if gone := err != nil; gone != r.gone {
			t.Errorf("token %q: gone = %v, want %v", r.tok.ID, gone, r.gone)
		}
	}
	counts, err := f.store.DispatchCounts(ctx, oldB)
	if err != nil || counts.Candidates != 0 || counts.Successful != 0 {
		t.Errorf("purged broadcast's records: %+v, %v", counts, err)
	}
	counts, err = f.store.DispatchCounts(ctx, liveB)
	if err != nil || counts.Candidates != 2 || counts.Successful != 1 {
		t.Errorf("live broadcast's records: %+v, %v", counts, err)
	}

	// A second run finds nothing more.
	if p, err := f.svc.PurgeData(ctx); err != nil || p != (cron.Purged{}) {
		t.Errorf("second run purged %+v, %v", p, err)
	}
}

func TestPurgeDataInPagesLeavesNothingBehind(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	const n = 5000 + 37 // more than one page
	docs := make([]notify.Notification, n)
	for i := range docs {
		docs[i] = notify.Notification{ServiceName: "bulk", Channel: notify.ChannelSMS, State: notify.StateSent, Meta: notify.Meta{Created: ago(31 * day)}}
	}
	for i := range docs {
		f.insert(docs[i])
	}
	p, err := f.svc.PurgeData(ctx)
	if err != nil || p.PushNotifications != n {
		t.Fatalf("purged %d, %v", p.PushNotifications, err)
	}
	left, err := f.store.Notifications().Count(ctx, mongostore.Query{}.Filter)
	if err != nil || left != 0 {
		t.Fatalf("%d left, %v", left, err)
	}
}

func TestPurgeDataForgetsClaimsAfterADay(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	if ok, err := f.store.Claim(ctx, "job/x/1"); !ok || err != nil {
		t.Fatalf("claim: %v, %v", ok, err)
	}
	if ok, _ := f.store.Claim(ctx, "job/x/1"); ok {
		t.Fatal("a claim was taken twice")
	}
	if p, err := f.svc.PurgeData(ctx); err != nil || p.Claims != 0 {
		t.Fatalf("a fresh claim purged: %+v, %v", p, err)
	}
	f.clock.Advance(25 * time.Hour)
	if p, err := f.svc.PurgeData(ctx); err != nil || p.Claims != 1 {
		t.Fatalf("purged %+v, %v", p, err)
	}
	if ok, _ := f.store.Claim(ctx, "job/x/1"); !ok {
		t.Fatal("a forgotten claim cannot be taken again")
	}
}
