package dispatch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/dispatch"
)

func TestProgressOfAFinishedBroadcast(t *testing.T) {
	f := newFixture(t, func(o *dispatch.Options) { o.ChunkSize = 2 })
	ctx := context.Background()
	for i := range 4 {
		f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: fmt.Sprintf("u%d@invalid.local", i)})
	}
	f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "reject@invalid.local"})
	n := f.mustPost(notify.Notification{ServiceName: "svc", Channel: notify.ChannelEmail, IsBroadcast: true, Message: emailMessage("hi")})
	want, err := f.store.DispatchCounts(ctx, n.ID)
	if err != nil || want != (notify.DispatchCounts{Candidates: 5, Successful: 4, Failed: 1}) {
		t.Fatalf("store counts %+v %v", want, err)
	}
	t.Run("the header keeps the final counts", func(t *testing.T) {
		hdr, err := f.store.Broadcast(ctx, n.ID)
		if err != nil || hdr.Counts == nil || *hdr.Counts != want {
			t.Fatalf("header %+v %v", hdr.Counts, err)
		}
		p, err := f.d.Progress(ctx, n.ID)
		if err != nil || !p.Found || !p.Planned || p.Counts != want || p.Started.IsZero() {
			t.Errorf("progress %+v %v", p, err)
		}
	})
	t.Run("without them, the chunks' results are counted", func(t *testing.T) {
		if err := f.store.SetBroadcastCounts(ctx, n.ID, nil); err != nil {
			t.Fatal(err)
		}
		p, err := f.d.Progress(ctx, n.ID)
		if err != nil || p.Counts != want {
			t.Errorf("progress %+v %v", p, err)
		}
	})
	t.Run("a notification never broadcast has no progress", func(t *testing.T) {
		p, err := f.d.Progress(ctx, notify.NewID())
		if err != nil || p.Found {
			t.Errorf("progress %+v %v", p, err)
		}
	})
}

func TestPreviewMergesWithoutSending(t *testing.T) {
	f := newFixture(t)
	sub := f.subscribe(notify.Subscription{ServiceName: "svc", UserChannelID: "a@invalid.local", UnsubscriptionCode: "99", Data: fields("name", "Ann")})
	n := &notify.Notification{ServiceName: "svc", Channel: notify.ChannelEmail, IsBroadcast: true,
		Message: fields("from", "x@invalid.local", "subject", "Hi {subscription::name}", "textBody", "{unsubscription_code} {http_host}", "htmlBody", "<b>{subscription::name}</b>")}
	m, err := f.d.Preview(n, sub, "http://req.invalid")
	if err != nil {
		t.Fatal(err)
	}
	if m.Channel != "email" || m.To != "a@invalid.local" || m.From != "x@invalid.local" || m.Subject != "Hi Ann" || m.Text != "99 http://req.invalid" || m.HTML != "<b>Ann</b>" {
		t.Errorf("preview %+v", m)
	}
	if got := len(f.sink.messages()); got != 0 {
		t.Errorf("%d messages sent", got)
	}
	n.Channel = notify.ChannelInApp
	if _, err := f.d.Preview(n, sub, ""); err == nil {
		t.Error("an in-app notification was merged")
	}
}
