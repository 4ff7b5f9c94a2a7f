package cron_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/cron"
)

func TestDispatchLiveNotificationsSendsHeldOnesWhenTheirTimeComes(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	sub := f.subscribe(notify.Subscription{UserChannelID: "bar@foo.com", UnsubscriptionCode: "12345"})
	f.subscribe(notify.Subscription{UserChannelID: "baz@foo.com", UnsubscriptionCode: "54321"})
	at := start.Add(90 * time.Second)
	broadcast := f.insert(notify.Notification{Channel: notify.ChannelEmail, IsBroadcast: true, HTTPHost: "http://foo.com",
		Message: emailMessage("held broadcast", "this is a test {http_host}"), InvalidBefore: at, AsyncBroadcastPushNotification: false})
	unicast := f.insert(notify.Notification{Channel: notify.ChannelEmail, UserChannelID: "BAR@foo.com", HTTPHost: "http://foo.com",
		Message: emailMessage("held unicast", "another test {http_host}"), InvalidBefore: at})
	later := f.insert(notify.Notification{Channel: notify.ChannelEmail, UserChannelID: "bar@foo.com",
		Message: emailMessage("much later", "x"), InvalidBefore: start.Add(100 * 365 * day)})
	inApp := f.insert(notify.Notification{Channel: notify.ChannelInApp, UserChannelID: "bar@foo.com",
		Message: emailMessage("in app", "x"), InvalidBefore: ago(time.Hour)})

	if n, err := f.svc.DispatchLiveNotifications(ctx); err != nil || n != 0 {
		t.Fatalf("before invalidBefore: dispatched %d, %v", n, err)
	}
	f.clock.Set(at.Add(time.Second))
	if n, err := f.svc.DispatchLiveNotifications(ctx); err != nil || n != 2 {
		t.Fatalf("dispatched %d, %v", n, err)
	}
	f.settle()
	if got := f.load(unicast.ID); got.State != notify.StateSent {
		t.Errorf("unicast state %s", got.State)
	}
	b := f.load(broadcast.ID)
	if b.State != notify.StateSent || len(b.Dispatch.Successful) != 2 {
		t.Errorf("broadcast: state %s, dispatch %+v", b.State, b.Dispatch)
	}
	if b.AsyncBroadcastPushNotification != true {
		t.Errorf("asyncBroadcastPushNotification = %v, want true", b.AsyncBroadcastPushNotification)
	}
	if b.UpdatedBy == nil || *b.UpdatedBy != cron.User {
		t.Errorf("updatedBy = %+v", b.UpdatedBy)
	}
	mails := f.mailsTo("bar@foo.com")
	if len(mails) != 2 {
		t.Fatalf("bar@foo.com got %d mails", len(mails))
	}
	for _, m := range mails {
		if !strings.Contains(m.Text, "test http://foo.com") {
			t.Errorf("merged text %q", m.Text)
		}
		want := "<mailto:un-" + sub.ID.Hex() + "-12345@invalid.local>, <http://foo.com/api/subscriptions/" + sub.ID.Hex() + "/unsubscribe?unsubscriptionCode=12345>"
		if got := strings.Join(m.Headers["List-Unsubscribe"], ""); got != want {
			t.Errorf("List-Unsubscribe %q, want %q", got, want)
		}
	}
	if len(f.mailsTo("baz@foo.com")) != 1 {
		t.Errorf("baz@foo.com got %d mails", len(f.mailsTo("baz@foo.com")))
	}
	for _, n := range []*notify.Notification{later, inApp} {
		if got := f.load(n.ID); got.State != notify.StateNew {
			t.Errorf("%s: state %s, want new", n.Message, got.State)
		}
	}
}

func TestDispatchLiveNotificationsNeverSendsOneTwice(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.subscribe(notify.Subscription{UserChannelID: "bar@foo.com"})
	for range 20 {
		f.insert(notify.Notification{Channel: notify.ChannelEmail, UserChannelID: "bar@foo.com",
			Message: emailMessage("held", "x"), InvalidBefore: ago(time.Minute)})
	}
	f.insert(notify.Notification{Channel: notify.ChannelEmail, IsBroadcast: true, Message: emailMessage("held broadcast", "x"), InvalidBefore: ago(time.Minute)})
	// Four overlapping runs, as two nodes with slow runs would make.
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := f.svc.DispatchLiveNotifications(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	f.settle()
	if total != 21 {
		t.Errorf("dispatched %d in all, want 21", total)
	}
	if got := len(f.mailsTo("bar@foo.com")); got != 21 {
		t.Errorf("bar@foo.com got %d mails, want 21", got)
	}
}

func TestDispatchLiveNotificationsGivesUpOnAUnicastWithoutSubscriber(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	n := f.insert(notify.Notification{Channel: notify.ChannelEmail, UserChannelID: "gone@foo.com",
		Message: emailMessage("held", "x"), InvalidBefore: ago(time.Minute)})
	if n, err := f.svc.DispatchLiveNotifications(ctx); err != nil || n != 0 {
		t.Errorf("dispatched %d, %v", n, err)
	}
	if got := f.load(n.ID); got.State != notify.StateError {
		t.Errorf("state %s, want error (not retried every minute)", got.State)
	}
	if len(f.catcher.Mails()) != 0 {
		t.Error("mail sent")
	}
}

func TestReDispatchResumesStalledBroadcasts(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	done := f.subscribe(notify.Subscription{UserChannelID: "done@foo.com", UnsubscriptionCode: "1"})
	left := f.subscribe(notify.Subscription{UserChannelID: "left@foo.com", UnsubscriptionCode: "2"})
	stalled := f.insert(notify.Notification{Channel: notify.ChannelEmail, IsBroadcast: true, HTTPHost: "http://foo.com",
		State: notify.StateSending, Message: emailMessage("stalled", "test {http_host}"),
		AsyncBroadcastPushNotification: false})
	f.plan(stalled, notify.DispatchResult{SubscriptionID: done.ID.Hex(), UserChannelID: "done@foo.com", Outcome: notify.DispatchSuccessful})
	// Eleven minutes later, the broadcast and its last result are stale.
	f.clock.Advance(11 * time.Minute)
	now := f.clock.Now()
	// Written by the original: its lists inside the document.
	legacy := f.insert(notify.Notification{Channel: notify.ChannelEmail, IsBroadcast: true, State: notify.StateSending,
		Message: emailMessage("legacy", "x"), Dispatch: &notify.Dispatch{Candidates: []string{left.ID.Hex()}},
		Meta: notify.Meta{Updated: now.Add(-20 * time.Minute)}})
	recent := f.insert(notify.Notification{Channel: notify.ChannelEmail, IsBroadcast: true, State: notify.StateSending,
		Message: emailMessage("recent", "x"), Meta: notify.Meta{Updated: now.Add(-599 * time.Second)}})
	// Old document, but its results show it is alive on some node.
	alive := f.insert(notify.Notification{Channel: notify.ChannelEmail, IsBroadcast: true, State: notify.StateSending,
		Message: emailMessage("alive", "x"), Meta: notify.Meta{Updated: now.Add(-time.Hour)}})
	f.plan(alive, notify.DispatchResult{SubscriptionID: done.ID.Hex(), Outcome: notify.DispatchSuccessful})

	n, err := f.svc.ReDispatchBroadcastPushNotifications(ctx)
	if err != nil || n != 2 {
		t.Fatalf("re-dispatched %d, %v", n, err)
	}
	// A second run, right away, finds them taken.
	if n, err := f.svc.ReDispatchBroadcastPushNotifications(ctx); err != nil || n != 0 {
		t.Fatalf("second run re-dispatched %d, %v", n, err)
	}
	f.settle()
	got := f.load(stalled.ID)
	if got.State != notify.StateSent || len(got.Dispatch.Successful) != 2 {
		t.Errorf("stalled: state %s, dispatch %+v", got.State, got.Dispatch)
	}
	if got := f.load(legacy.ID); got.State != notify.StateSent {
		t.Errorf("legacy: state %s", got.State)
	}
	if len(f.mailsTo("done@foo.com")) != 0 {
		t.Error("a recorded subscriber was sent to again")
	}
	mails := f.mailsTo("left@foo.com")
	if len(mails) != 2 || !strings.Contains(mails[0].Text+mails[1].Text, "test http://foo.com") {
		t.Errorf("left@foo.com got %d mails", len(mails))
	}
	if got := f.load(recent.ID); got.State != notify.StateSending {
		t.Errorf("recent: state %s", got.State)
	}
	got = f.load(alive.ID)
	if got.State != notify.StateSending || !got.Updated.After(now.Add(-time.Minute)) {
		t.Errorf("alive: state %s, updated %s (its progress should carry over)", got.State, got.Updated)
	}
}

func TestDeleteBounces(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	tm := func(s string) *time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	cases := []struct {
		name    string
		b       notify.Bounce
		retired bool
	}{
		{"no bounce since the latest notification started", notify.Bounce{
			LatestNotificationStarted: tm("2018-09-30T17:27:44Z"), LatestNotificationEnded: tm("2018-07-30T17:27:45Z"),
			BounceMessages: []notify.BounceMessage{{Date: *tm("2018-08-30T17:27:45Z"), Message: "blah"}}}, true},
		{"a bounce since the latest notification started", notify.Bounce{
			LatestNotificationStarted: tm("2018-07-30T17:27:44Z"), LatestNotificationEnded: tm("2018-07-30T17:27:45Z"),
			BounceMessages: []notify.BounceMessage{{Date: *tm("2018-08-30T17:27:45Z"), Message: "blah"}}}, false},
		{"the latest notification ended less than an hour ago", notify.Bounce{
			LatestNotificationStarted: ptr(ago(2 * time.Hour)), LatestNotificationEnded: ptr(ago(59 * time.Minute)),
			BounceMessages: []notify.BounceMessage{{Date: ago(3 * time.Hour), Message: "blah"}}}, false},
		{"the latest notification ended more than an hour ago", notify.Bounce{
			LatestNotificationStarted: ptr(ago(2 * time.Hour)), LatestNotificationEnded: ptr(ago(61 * time.Minute)),
			BounceMessages: []notify.BounceMessage{{Date: ago(3 * time.Hour), Message: "blah"}}}, true},
		{"never notified", notify.Bounce{LatestNotificationEnded: ptr(ago(61 * time.Minute)),
			BounceMessages: []notify.BounceMessage{{Date: ago(3 * time.Hour), Message: "blah"}}}, false},
		{"no bounce messages", notify.Bounce{LatestNotificationStarted: ptr(ago(2 * time.Hour)), LatestNotificationEnded: ptr(ago(61 * time.Minute))}, false},
	}
	for i := range cases {
		cases[i].b.Channel, cases[i].b.UserChannelID, cases[i].b.HardBounceCount = "email", "foo@invalid.local", 6
		if err := f.store.Bounces().Insert(ctx, &cases[i].b); err != nil {
			t.Fatal(err)
		}
	}
	n, err := f.svc.DeleteBounces(ctx)
	if err != nil || n != 2 {
		t.Errorf("retired %d, %v", n, err)
	}
	for _, c := range cases {
		got, err := f.store.Bounces().FindByID(ctx, c.b.ID.Hex())
		if err != nil {
			t.Fatal(err)
		}
		want := notify.BounceActive
		if c.retired {
			want = notify.BounceDeleted
		}
		if got.State != want {
			t.Errorf("%s: state %s, want %s", c.name, got.State, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
