package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/dispatch"
	"github.com/govkit/govkit/notify/jmesfilter"
	"github.com/govkit/govkit/notify/mongostore"
	"github.com/govkit/govkit/notify/outbound"
	"github.com/govkit/govkit/notify/sms/twilio"
)

func TestCheckUnicast(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "Bar@Foo.com", UserID: "bar"})
	f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "pending@foo.com", State: notify.StateUnconfirmed})
	f.subscribe(notify.Subscription{ServiceName: "svc", Channel: notify.ChannelSMS, UserChannelID: "12345"})

	tests := []struct {
		name    string
		n       notify.Notification
		wantErr error
		wantSub bool
		wantUCI string
	}{
		{name: "userChannelId matches ignoring case", n: notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "bar@foo.COM"}, wantSub: true, wantUCI: "Bar@Foo.com"},
		{name: "userId alone fills userChannelId", n: notify.Notification{ServiceName: "svc", Channel: "email", UserID: "bar"}, wantSub: true, wantUCI: "Bar@Foo.com"},
		{name: "a part of an address does not match", n: notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "ar@foo.com"}, wantErr: dispatch.ErrInvalidUser},
		{name: "regex characters are literal", n: notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "B.r@Foo.com"}, wantErr: dispatch.ErrInvalidUser},
		{name: "an unconfirmed subscription does not count", n: notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "pending@foo.com"}, wantErr: dispatch.ErrInvalidUser},
		{name: "another channel does not count", n: notify.Notification{ServiceName: "svc", Channel: "sms", UserChannelID: "bar@foo.com"}, wantErr: dispatch.ErrInvalidUser},
		{name: "userId and userChannelId must both match", n: notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "bar@foo.com", UserID: "other"}, wantErr: dispatch.ErrInvalidUser},
		{name: "neither userChannelId nor userId is refused", n: notify.Notification{ServiceName: "svc", Channel: "email"}, wantErr: dispatch.ErrInvalidUser},
		{name: "skipping the check needs a userChannelId", n: notify.Notification{ServiceName: "svc", Channel: "email", UserID: "bar", SkipSubscriptionConfirmationCheck: true}, wantErr: dispatch.ErrInvalidUser},
		{name: "skipping the check accepts any address", n: notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "x@y.z", SkipSubscriptionConfirmationCheck: true}, wantUCI: "x@y.z"},
		{name: "broadcasts need no subscriber", n: notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true}},
		{name: "in-app notifications need no subscription", n: notify.Notification{ServiceName: "svc", Channel: "inApp", UserChannelID: "nobody"}, wantUCI: "nobody"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			got, err := f.d.Check(context.Background(), &n)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if (got != nil) != tc.wantSub {
				t.Fatalf("subscription = %v, want one: %v", got, tc.wantSub)
			}
			if got != nil && got.ID != sub.ID {
				t.Errorf("matched %s, want %s", got.ID, sub.ID)
			}
			if tc.wantErr == nil && n.UserChannelID != tc.wantUCI {
				t.Errorf("userChannelId = %q, want %q", n.UserChannelID, tc.wantUCI)
			}
		})
	}
}

func TestCheckRefusesBadSubscriptionFilter(t *testing.T) {
	f := newFixture(t)
	for _, filter := range []string{"a === 'b'", "unknown_fn(a)"} {
		n := notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, BroadcastPushNotificationSubscriptionFilter: filter}
		_, err := f.d.Check(context.Background(), &n)
		var se *jmesfilter.SyntaxError
		if !errors.As(err, &se) || se.StatusCode() != 400 {
			t.Errorf("filter %q: err = %v, want a 400 SyntaxError", filter, err)
		}
	}
	n := notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, BroadcastPushNotificationSubscriptionFilter: "a == 'b'"}
	if _, err := f.d.Check(context.Background(), &n); err != nil {
		t.Errorf("valid filter refused: %v", err)
	}
}

func TestUnicastEmailCarriesListHeadersAndBounceSender(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(notify.Subscription{ServiceName: "my service", UserChannelID: "bar@foo.com", UnsubscriptionCode: "54321",
		ConfirmationRequest: fields("confirmationCode", "12345"), Data: fields("gender", "male")})
	ctx := context.Background()
	bounce := &notify.Bounce{Channel: "email", UserChannelID: "bar@foo.com", HardBounceCount: 1}
	if err := f.store.Bounces().Insert(ctx, bounce); err != nil {
		t.Fatal(err)
	}

	got := f.mustPost(notify.Notification{ServiceName: "my service", Channel: "email", UserChannelID: "BAR@foo.com",
		Message: emailMessage("code {confirmation_code} for {service_name} at {http_host}{rest_api_root} id {subscription_id} un {unsubscription_code} {subscription::gender}")})
	if got.State != notify.StateSent {
		t.Fatalf("state = %q, want sent", got.State)
	}
	msgs := f.sink.to("bar@foo.com")
	if len(msgs) != 1 {
		t.Fatalf("%d mails received, want 1", len(msgs))
	}
	m := msgs[0]
	id := sub.ID.Hex()
	wantBody := "code 12345 for my service at http://127.0.0.1:3000/api id " + id + " un 54321 male"
	if !strings.Contains(m.Body, wantBody) {
		t.Errorf("body %q lacks %q", m.Body, wantBody)
	}
	if got, want := m.Header.Get("List-Id"), "<http://127.0.0.1:3000/my%20service>"; got != want {
		t.Errorf("List-Id = %q, want %q", got, want)
	}
	unsubURL := "http://127.0.0.1:3000/api/subscriptions/" + id + "/unsubscribe?unsubscriptionCode=54321"
	lu := m.Header.Get("List-Unsubscribe")
	if !strings.Contains(lu, "<mailto:un-"+id+"-54321@invalid.local>") || !strings.Contains(lu, "<"+unsubURL+">") {
		t.Errorf("List-Unsubscribe = %q", lu)
	}
	if got, want := m.From, "bn-"+id+"-54321@invalid.local"; got != want {
		t.Errorf("envelope sender = %q, want %q", got, want)
	}
	if got := m.Header.Get("From"); got != "<no_reply@invalid.local>" && got != "no_reply@invalid.local" {
		t.Errorf("From header = %q", got)
	}

	b, err := f.store.Bounces().FindByID(ctx, bounce.ID.Hex())
	if err != nil {
		t.Fatal(err)
	}
	if b.LatestNotificationStarted == nil || b.LatestNotificationEnded == nil || b.LatestNotificationEnded.Before(*b.LatestNotificationStarted) {
		t.Errorf("bounce record not stamped: started %v ended %v", b.LatestNotificationStarted, b.LatestNotificationEnded)
	}
}

func TestUnicastWithoutSubscriptionHasNoUnsubscribeAddresses(t *testing.T) {
	f := newFixture(t)
	got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "x@foo.com", SkipSubscriptionConfirmationCheck: true,
		Message: emailMessage("hello {unsubscription_url}")})
	if got.State != notify.StateSent {
		t.Fatalf("state = %q", got.State)
	}
	m := f.sink.to("x@foo.com")[0]
	if m.Header.Get("List-Unsubscribe") != "" {
		t.Errorf("List-Unsubscribe = %q, want none", m.Header.Get("List-Unsubscribe"))
	}
	if m.From != "no_reply@invalid.local" {
		t.Errorf("envelope sender = %q, want the From address", m.From)
	}
	if !strings.Contains(m.Body, "hello {unsubscription_url}") {
		t.Errorf("body %q: an unknown link must stay a token, never 'undefined'", m.Body)
	}
}

func TestUnicastStates(t *testing.T) {
	f := newFixture(t)
	f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "reject@invalid.local"})
	f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "ok@invalid.local"})
	tests := []struct {
		name      string
		n         notify.Notification
		wantState string
		wantMails int
	}{
		{name: "a refused recipient ends in error", n: notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "reject@invalid.local", Message: emailMessage("x")}, wantState: notify.StateError},
		{name: "a future invalidBefore holds the notification", n: notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "ok@invalid.local", InvalidBefore: time.Now().Add(time.Hour), Message: emailMessage("x")}, wantState: notify.StateNew},
		{name: "a past invalidBefore sends at once", n: notify.Notification{ServiceName: "svc", Channel: "email", UserChannelID: "ok@invalid.local", InvalidBefore: time.Now().Add(-time.Hour), Message: emailMessage("x")}, wantState: notify.StateSent, wantMails: 1},
		{name: "in-app notifications are only stored", n: notify.Notification{ServiceName: "svc", Channel: "inApp", UserChannelID: "ok@invalid.local", Message: fields("title", "t")}, wantState: notify.StateNew},
		{name: "no SMS sender is an error state", n: notify.Notification{ServiceName: "svc", Channel: "sms", UserChannelID: "123", SkipSubscriptionConfirmationCheck: true, Message: fields("textBody", "x")}, wantState: notify.StateError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(f.sink.to("ok@invalid.local"))
			got := f.mustPost(tc.n)
			if stored := f.load(got.ID); stored.State != tc.wantState {
				t.Errorf("state = %q, want %q", stored.State, tc.wantState)
			}
			if n := len(f.sink.to("ok@invalid.local")) - before; n != tc.wantMails {
				t.Errorf("%d mails, want %d", n, tc.wantMails)
			}
		})
	}
}

func TestBroadcastRecordsEachSubscriber(t *testing.T) {
	f := newFixture(t, func(o *dispatch.Options) { o.ChunkSize = 2; o.Concurrency = 3 })
	var ids []string
	for _, a := range []string{"a@foo.com", "b@foo.com", "bar2@invalid", "c@foo.com", "d@foo.com"} {
		ids = append(ids, f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: a, UnsubscriptionCode: "1"}).ID.Hex())
	}
	f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "pending@foo.com", State: notify.StateUnconfirmed})
	f.subscribe(notify.Subscription{ServiceName: "other", UserChannelID: "other@foo.com"})
	f.subscribe(notify.Subscription{ServiceName: "svc", Channel: "sms", UserChannelID: "123"})

	got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("hi {subscription_id}")})
	if got.State != notify.StateSent {
		t.Fatalf("state = %q, want sent", got.State)
	}
	d := got.Dispatch
	if d == nil {
		t.Fatal("no dispatch")
	}
	slices.Sort(d.Candidates)
	if !slices.Equal(d.Candidates, ids) {
		t.Errorf("candidates = %v, want %v", d.Candidates, ids)
	}
	if len(d.Successful) != 4 {
		t.Errorf("successful = %v, want 4", d.Successful)
	}
	if len(d.Failed) != 1 || d.Failed[0].SubscriptionID != ids[2] || d.Failed[0].UserChannelID != "bar2@invalid" {
		t.Fatalf("failed = %+v", d.Failed)
	}
	errDoc, _ := d.Failed[0].Error.(notify.Fields)
	if code, _ := errDoc.Get("responseCode"); code != int32(550) {
		t.Errorf("failure error = %v, want responseCode 550", d.Failed[0].Error)
	}
	if n := len(f.sink.messages()); n != 4 {
		t.Errorf("%d mails, want 4", n)
	}
	for _, m := range f.sink.messages() {
		if !strings.Contains(m.Body, "hi ") || strings.Contains(m.Body, "{subscription_id}") {
			t.Errorf("body %q not merged", m.Body)
		}
	}
}

func TestBroadcastFilters(t *testing.T) {
	calls := 0
	var mu sync.Mutex
	filters, err := jmesfilter.New(jmesfilter.Functions{
		"contains_ci": {
			Signature: []jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{jmesfilter.TypeString}}, {Types: []jmesfilter.ArgType{jmesfilter.TypeString}}},
			Call: func(_ context.Context, args []any) (any, error) {
				mu.Lock()
				calls++
				mu.Unlock()
				return strings.Contains(strings.ToLower(args[0].(string)), strings.ToLower(args[1].(string))), nil
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *dispatch.Options) { o.Filters = filters; o.LogSkipped = true })
	match := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "match@foo.com", BroadcastPushNotificationFilter: "contains_ci(name,'FOO')", Data: fields("city", "Victoria")})
	noMatch := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "nomatch@foo.com", BroadcastPushNotificationFilter: "name == 'bar'"})
	cityMismatch := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "city@foo.com", Data: fields("city", "Vancouver")})
	noData := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "nodata@foo.com"})

	got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x"),
		Data: fields("name", "foo"), BroadcastPushNotificationSubscriptionFilter: "city == 'Victoria'"})
	d := got.Dispatch
	slices.Sort(d.Successful)
	wantOK := []string{match.ID.Hex(), noData.ID.Hex()}
	slices.Sort(wantOK)
	if !slices.Equal(d.Successful, wantOK) {
		t.Errorf("successful = %v, want %v (the filter match and the subscriber without data)", d.Successful, wantOK)
	}
	slices.Sort(d.Skipped)
	wantSkip := []string{noMatch.ID.Hex(), cityMismatch.ID.Hex()}
	slices.Sort(wantSkip)
	if !slices.Equal(d.Skipped, wantSkip) {
		t.Errorf("skipped = %v, want %v", d.Skipped, wantSkip)
	}
	if calls == 0 {
		t.Error("the custom function was never called")
	}
	if len(f.sink.to("nomatch@foo.com"))+len(f.sink.to("city@foo.com")) != 0 {
		t.Error("a filtered subscriber got mail")
	}
}

func TestBroadcastWithoutDataIgnoresSubscriptionFilters(t *testing.T) {
	f := newFixture(t)
	f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "a@foo.com", BroadcastPushNotificationFilter: "name == 'bar'"})
	got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x")})
	if len(got.Dispatch.Successful) != 1 {
		t.Errorf("dispatch = %+v, want the subscriber reached", got.Dispatch)
	}
}

func TestSkippedAndSuccessfulAreRecordedOnlyWhenConfigured(t *testing.T) {
	tests := []struct {
		name                   string
		guaranteed, bounce     bool
		logSkipped             bool
		wantSuccess, wantSkips int
	}{
		{name: "guaranteed processing records successes, not skips", guaranteed: true, wantSuccess: 1},
		{name: "guaranteed processing with logSkipped records skips", guaranteed: true, logSkipped: true, wantSuccess: 1, wantSkips: 1},
		{name: "bounce handling alone records successes", bounce: true, wantSuccess: 1},
		{name: "neither records no successes", logSkipped: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *dispatch.Options) {
				o.Guaranteed, o.Bounce, o.LogSkipped = tc.guaranteed, tc.bounce, tc.logSkipped
			})
			f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "a@foo.com"})
			f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "b@foo.com", BroadcastPushNotificationFilter: "x == 'y'"})
			got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x"), Data: fields("x", "z")})
			if got.State != notify.StateSent {
				t.Errorf("state = %q", got.State)
			}
			if len(got.Dispatch.Candidates) != 2 || len(got.Dispatch.Successful) != tc.wantSuccess || len(got.Dispatch.Skipped) != tc.wantSkips {
				t.Errorf("dispatch = %+v", got.Dispatch)
			}
			if n := len(f.sink.messages()); n != 1 {
				t.Errorf("%d mails, want 1", n)
			}
		})
	}
}

func TestBroadcastHonoursResultsGivenInline(t *testing.T) {
	f := newFixture(t, func(o *dispatch.Options) { o.ChunkSize = 1 })
	done := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "done@foo.com"})
	failed := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "failed@foo.com"})
	fresh := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "fresh@foo.com"})
	got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x"),
		Dispatch: &notify.Dispatch{Successful: []string{done.ID.Hex()}, Failed: []notify.DispatchFailure{{SubscriptionID: failed.ID.Hex()}}}})
	if n := len(f.sink.messages()); n != 1 || len(f.sink.to("fresh@foo.com")) != 1 {
		t.Fatalf("%d mails; only fresh@foo.com should get one", n)
	}
	if !slices.Contains(got.Dispatch.Candidates, done.ID.Hex()) || !slices.Contains(got.Dispatch.Candidates, failed.ID.Hex()) || !slices.Contains(got.Dispatch.Successful, fresh.ID.Hex()) {
		t.Errorf("dispatch = %+v", got.Dispatch)
	}
}

func TestRedispatchOfAFinishedBroadcastSendsNothingAgain(t *testing.T) {
	f := newFixture(t, func(o *dispatch.Options) { o.ChunkSize = 2 })
	for _, a := range []string{"a@foo.com", "b@foo.com", "c@foo.com"} {
		f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: a})
	}
	got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x")})
	// A later subscriber is not a candidate of a broadcast already chosen.
	f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "late@foo.com"})
	if err := f.store.Notifications().UpdateByID(context.Background(), got.ID.Hex(), fields("$set", fields("state", notify.StateSending))); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Redispatch(context.Background(), got.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "state sent again", func() bool { return f.load(got.ID).State == notify.StateSent })
	if n := len(f.sink.messages()); n != 3 {
		t.Errorf("%d mails after dispatching twice, want 3", n)
	}
	if n := f.load(got.ID); len(n.Dispatch.Candidates) != 3 || len(n.Dispatch.Successful) != 3 {
		t.Errorf("dispatch %+v", n.Dispatch)
	}
}

// plant sets a broadcast up as a node that died mid-way leaves it: planned
// in one chunk, a's outcome recorded, b's send begun (marked) with no
// outcome, d sent with its outcome kept with its mark but not stored, c
// not touched.
func (f *fixture) plant(subs ...*notify.Subscription) *notify.Notification {
	f.t.Helper()
	ctx := context.Background()
	n := notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, State: notify.StateSending, Message: emailMessage("x")}
	if err := f.store.Notifications().Insert(ctx, &n); err != nil {
		f.t.Fatal(err)
	}
	if _, _, err := f.store.StartBroadcast(ctx, mongostore.Broadcast{NotificationID: n.ID, Run: "r1", HTTPHost: "http://h", Started: time.Now()}); err != nil {
		f.t.Fatal(err)
	}
	chunks, _, err := f.store.PlanChunks(ctx, n.ID, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 10})
	if err != nil || chunks != 1 {
		f.t.Fatal(chunks, err)
	}
	if err := f.store.SetBroadcastPlanned(ctx, n.ID, "r1", 1, int64(len(subs))); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.store.RecordChunk(ctx, n.ID, 0, 0, []notify.DispatchResult{{SubscriptionID: subs[0].ID.Hex(), UserChannelID: subs[0].UserChannelID, Outcome: notify.DispatchSuccessful}}); err != nil {
		f.t.Fatal(err)
	}
	key := f.queue.Prefix + "broadcast:" + n.ID.Hex() + ":r1:inflight:0"
	if err := f.queue.Client.HSet(ctx, key, subs[1].ID.Hex(), "", subs[3].ID.Hex(), `{"o":"successful","u":"d@foo.com"}`).Err(); err != nil {
		f.t.Fatal(err)
	}
	return &n
}

// A broadcast resumed after its node died sends to nobody recorded and to
// nobody whose send ended with its outcome kept; a send marked without an
// outcome is in doubt and is sent again. Every subscriber is recorded
// once, and nobody is recorded failed for the node's death.
func TestResumedBroadcastSendsAgainOnlyWhatIsInDoubt(t *testing.T) {
	f := newFixture(t)
	a := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "a@foo.com"})
	b := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "b@foo.com"})
	c := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "c@foo.com"})
	dd := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "d@foo.com"})
	n := f.plant(a, b, c, dd)
	if err := f.d.Redispatch(context.Background(), n.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, "state sent", func() bool { return f.load(n.ID).State == notify.StateSent })
	if len(f.sink.to("a@foo.com"))+len(f.sink.to("d@foo.com")) != 0 || len(f.sink.to("b@foo.com")) != 1 || len(f.sink.to("c@foo.com")) != 1 {
		t.Errorf("mails: a %d, b %d, c %d, d %d; want b and c", len(f.sink.to("a@foo.com")), len(f.sink.to("b@foo.com")), len(f.sink.to("c@foo.com")), len(f.sink.to("d@foo.com")))
	}
	got := f.load(n.ID)
	slices.Sort(got.Dispatch.Successful)
	want := []string{a.ID.Hex(), b.ID.Hex(), c.ID.Hex(), dd.ID.Hex()}
	slices.Sort(want)
	if !slices.Equal(got.Dispatch.Successful, want) || len(got.Dispatch.Failed) != 0 {
		t.Fatalf("dispatch %+v", got.Dispatch)
	}
	if got.Dispatch.Counts.Pending != 0 || got.Dispatch.Counts.Successful != 4 {
		t.Errorf("counts %+v", got.Dispatch.Counts)
	}
}

// A node without workers (a primary) only queues; sync requests to it wait
// for the nodes that do the work.
func TestBroadcastRunsOnOtherNodes(t *testing.T) {
	f := newFixture(t, func(o *dispatch.Options) { o.ChunkSize = 3 })
	primary := f.node(false)
	ctx := context.Background()
	_ = f.d.Close(ctx) // the fixture's own node leaves the work to two others
	f.node(true)
	f.node(true)
	var want []string
	for i := range 20 {
		want = append(want, f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: fmt.Sprintf("u%d@foo.com", i)}).ID.Hex())
	}
	n := notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x")}
	if err := f.store.Notifications().Insert(ctx, &n); err != nil {
		t.Fatal(err)
	}
	got, err := primary.Dispatch(ctx, &n, nil, dispatch.Request{Host: "http://h"})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != notify.StateSent || got.Dispatch.Counts.Successful != 20 || got.Dispatch.Counts.Candidates != 20 {
		t.Fatalf("state %q counts %+v", got.State, got.Dispatch.Counts)
	}
	slices.Sort(got.Dispatch.Successful)
	slices.Sort(want)
	if !slices.Equal(got.Dispatch.Successful, want) {
		t.Errorf("successful %v", got.Dispatch.Successful)
	}
	for i := range 20 {
		if m := len(f.sink.to(fmt.Sprintf("u%d@foo.com", i))); m != 1 {
			t.Errorf("u%d got %d mails", i, m)
		}
	}
}

// failingChunks fails every read of a chunk's subscriptions, as a store
// that cannot return them would.
type failingChunks struct {
	dispatch.Broadcasts
}

func (failingChunks) BroadcastChunk(context.Context, notify.ID, int) ([]*notify.Subscription, error) {
	return nil, errors.New("store unavailable")
}

func TestChunkFailure(t *testing.T) {
	tests := []struct {
		name       string
		guaranteed bool
		want       string
	}{
		{name: "without guaranteed processing a failed chunk's subscribers fail at once", guaranteed: false, want: "guaranteed processing is off"},
		{name: "with guaranteed processing they fail after the last attempt", guaranteed: true, want: "failed 3 times"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(o *dispatch.Options) {
				o.Guaranteed = tc.guaranteed
				o.Bounce = false
				o.ChunkSize = 1
				o.MaxAttempts = 3
				o.Store.Broadcasts = failingChunks{o.Store.Broadcasts}
			})
			f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "a@foo.com"})
			f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "b@foo.com"})
			got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x")})
			if got.State != notify.StateSent || len(got.Dispatch.Failed) != 2 || len(got.Dispatch.Candidates) != 2 {
				t.Fatalf("state %q, dispatch %+v", got.State, got.Dispatch)
			}
			for _, fl := range got.Dispatch.Failed {
				if msg, _ := fl.Error.(notify.Fields).String("message"); !strings.Contains(msg, tc.want) {
					t.Errorf("error %q, want one saying %q", msg, tc.want)
				}
			}
			if len(f.sink.messages()) != 0 {
				t.Error("mail sent although no subscription could be read")
			}
		})
	}
}

func TestAsyncBroadcastPostsFinalNotificationToCallback(t *testing.T) {
	type call struct {
		contentType string
		body        map[string]any
	}
	calls := make(chan call, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var c call
		c.contentType = r.Header.Get("Content-Type")
		_ = json.NewDecoder(r.Body).Decode(&c.body)
		if r.Method == http.MethodPost {
			calls <- c
		}
	}))
	defer cb.Close()
	// The receiver is on loopback, which the callback client refuses
	// unless admitted.
	loopback, err := outbound.New(outbound.Policy{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *dispatch.Options) { o.HTTPClient = loopback.Client(30 * time.Second) })
	sub := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "a@foo.com"})
	f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "bar2@invalid"})
	got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x"),
		AsyncBroadcastPushNotification: cb.URL + "/done?token=secret"})
	if got.State != notify.StateNew {
		t.Errorf("async answer state = %q, want new (sent later)", got.State)
	}
	var c call
	select {
	case c = <-calls:
	case <-time.After(20 * time.Second):
		t.Fatal("no callback")
	}
	if c.contentType != "application/json" {
		t.Errorf("callback content type %q", c.contentType)
	}
	if c.body["state"] != "sent" || c.body["id"] != got.ID.Hex() {
		t.Errorf("callback body state %v id %v", c.body["state"], c.body["id"])
	}
	d, _ := c.body["dispatch"].(map[string]any)
	if succ, _ := d["successful"].([]any); len(succ) != 1 || succ[0] != sub.ID.Hex() {
		t.Errorf("callback dispatch.successful = %v", d["successful"])
	}
	if failed, _ := d["failed"].([]any); len(failed) != 1 {
		t.Errorf("callback dispatch.failed = %v", d["failed"])
	}
}

func TestAsyncBroadcastWithoutCallbackFinishes(t *testing.T) {
	f := newFixture(t)
	f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "a@foo.com"})
	got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x"), AsyncBroadcastPushNotification: true})
	eventually(t, "state sent", func() bool { return f.load(got.ID).State == notify.StateSent })
	if len(f.sink.to("a@foo.com")) != 1 {
		t.Error("no mail")
	}
}

// twilioFake answers Twilio's Messages API on loopback and records the
// requests; numbers in fail get the given status with Twilio's error body.
type twilioFake struct {
	mu   sync.Mutex
	reqs []url.Values
	auth []string
	fail map[string]int
}

func (tf *twilioFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	user, pass, _ := r.BasicAuth()
	tf.mu.Lock()
	tf.reqs = append(tf.reqs, form)
	tf.auth = append(tf.auth, r.URL.Path+" "+user+":"+pass)
	status := tf.fail[form.Get("To")]
	tf.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if status != 0 {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"code":20429,"message":"Too Many Requests","more_info":"https://www.twilio.com/docs/errors/20429","status":429}`)
		return
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"sid":"SM00000000000000000000000000000000","status":"queued","to":"`+form.Get("To")+`"}`)
}

func TestSMSBroadcastThroughTwilio(t *testing.T) {
	fake := &twilioFake{fail: map[string]int{"+15550002": http.StatusTooManyRequests}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	tw, err := twilio.New(twilio.Config{AccountSID: "AC123", AuthToken: "tok", FromNumber: "+15559999", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *dispatch.Options) { o.SMS = tw })
	ok := f.subscribe(notify.Subscription{ServiceName: "svc", Channel: "sms", UserChannelID: "+15550001", UnsubscriptionCode: "777", Data: fields("count", 0)})
	bad := f.subscribe(notify.Subscription{ServiceName: "svc", Channel: "sms", UserChannelID: "+15550002"})
	got := f.mustPost(notify.Notification{ServiceName: "svc", Channel: "sms", IsBroadcast: true,
		Message: fields("textBody", "You have {subscription::count} new items. Stop: {unsubscription_url}")})
	if got.State != notify.StateSent {
		t.Errorf("state = %q, want sent despite a failure", got.State)
	}
	if !slices.Equal(got.Dispatch.Successful, []string{ok.ID.Hex()}) || len(got.Dispatch.Failed) != 1 || got.Dispatch.Failed[0].SubscriptionID != bad.ID.Hex() {
		t.Fatalf("dispatch = %+v", got.Dispatch)
	}
	errDoc, _ := got.Dispatch.Failed[0].Error.(notify.Fields)
	if st, _ := errDoc.Get("status"); st != int32(429) {
		t.Errorf("failure error = %v, want status 429", got.Dispatch.Failed[0].Error)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	var sent url.Values
	for _, r := range fake.reqs {
		if r.Get("To") == "+15550001" {
			sent = r
		}
	}
	if sent == nil {
		t.Fatal("no request for +15550001")
	}
	// A zero merges as 0 (the original leaves falsy values as tokens).
	wantText := "You have 0 new items. Stop: http://127.0.0.1:3000/api/subscriptions/" + ok.ID.Hex() + "/unsubscribe?unsubscriptionCode=777"
	if sent.Get("From") != "+15559999" || sent.Get("Body") != wantText {
		t.Errorf("twilio form = %v, want Body %q", sent, wantText)
	}
	if !strings.Contains(fake.auth[0], "/2010-04-01/Accounts/AC123/Messages.json AC123:tok") {
		t.Errorf("twilio request = %q", fake.auth[0])
	}
}

// A node that stops leaves the broadcasts it has not done to the others.
func TestCloseHandsWorkToOtherNodes(t *testing.T) {
	f := newFixture(t)
	for _, a := range []string{"a@foo.com", "b@foo.com", "c@foo.com"} {
		f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: a})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := f.post(notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x")})
	if !errors.Is(err, dispatch.ErrClosed) {
		t.Errorf("dispatch after Close: %v, want ErrClosed", err)
	}
	other := f.node(false)
	n := notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: emailMessage("x"), AsyncBroadcastPushNotification: true}
	if err := f.store.Notifications().Insert(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Dispatch(ctx, &n, nil, dispatch.Request{}); err != nil {
		t.Fatal(err)
	}
	f.node(true)
	eventually(t, "state sent", func() bool { return f.load(n.ID).State == notify.StateSent })
	if len(f.sink.messages()) != 3 {
		t.Errorf("%d mails, want 3", len(f.sink.messages()))
	}
}
