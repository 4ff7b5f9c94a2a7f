package mongostore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/mongostore"
)

func fields(kv ...any) notify.Fields {
	f := make(notify.Fields, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		f = append(f, notify.Field{Key: kv[i].(string), Value: kv[i+1]})
	}
	return f
}

// subscribe stores n confirmed email subscriptions of svc and returns their
// ids in insertion order.
func subscribe(t *testing.T, s *mongostore.Store, svc string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		sub := notify.Subscription{
			ServiceName: svc, Channel: notify.ChannelEmail, State: notify.StateConfirmed,
			UserChannelID: svc + string(rune('a'+i%26)) + "@example.org", UnsubscriptionCode: "12345",
			ConfirmationRequest: fields("confirmationCode", "54321", "textBody", "a long template"),
			Data:                fields("n", int32(i)),
		}
		if err := s.Subscriptions().Insert(context.Background(), &sub); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sub.ID.Hex())
	}
	return ids
}

func TestPlanChunksSnapshotsConfirmedSubscribersOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		want := subscribe(t, s, "svc", 25)
		// Not candidates: other state, service or channel.
		for _, sub := range []notify.Subscription{
			{ServiceName: "svc", Channel: "email", State: notify.StateUnconfirmed, UserChannelID: "u@x"},
			{ServiceName: "other", Channel: "email", State: notify.StateConfirmed, UserChannelID: "o@x"},
			{ServiceName: "svc", Channel: "sms", State: notify.StateConfirmed, UserChannelID: "123"},
		} {
			if err := s.Subscriptions().Insert(ctx, &sub); err != nil {
				t.Fatal(err)
			}
		}
		nid := notify.NewID()
		chunks, cands, err := s.PlanChunks(ctx, nid, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 10})
		if err != nil {
			t.Fatal(err)
		}
		if chunks != 3 || cands != 25 {
			t.Fatalf("chunks %d, candidates %d; want 3 and 25", chunks, cands)
		}
		var got []string
		for i := range chunks {
			subs, err := s.BroadcastChunk(ctx, nid, i)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.BroadcastResults(ctx, nid, i)
			if err != nil {
				t.Fatal(err)
			}
			if len(subs) != len(res.Candidates) || res.Complete {
				t.Errorf("chunk %d: %d subscriptions, candidates %v, complete %v", i, len(subs), res.Candidates, res.Complete)
			}
			for j, sub := range subs {
				got = append(got, sub.ID.Hex())
				if sub.ID.Hex() != res.Candidates[j] {
					t.Errorf("chunk %d: candidates out of step with the snapshot", i)
				}
				code, _ := sub.ConfirmationRequest.String("confirmationCode")
				if sub.UserChannelID == "" || sub.UnsubscriptionCode != "12345" || code != "54321" || sub.Data == nil {
					t.Errorf("snapshot lacks what sending needs: %+v", sub)
				}
				if sub.ConfirmationRequest.Has("textBody") {
					t.Error("snapshot keeps the confirmation template")
				}
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("snapshot ids %v, want %v", got, want)
		}
		// A plan written again over an interrupted one with fewer
		// subscribers leaves no chunk of the old one behind.
		chunks, _, err = s.PlanChunks(ctx, nid, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 20})
		if err != nil || chunks != 2 {
			t.Fatalf("re-plan: %d chunks, %v", chunks, err)
		}
		if _, err := s.BroadcastChunk(ctx, nid, 2); !errors.Is(err, notify.ErrNotFound) {
			t.Errorf("chunk 2 of the old plan: %v", err)
		}
	})
}

func TestPlanChunksPicksCandidates(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		ids := subscribe(t, s, "svc", 4)
		nid := notify.NewID()
		// ids[0] is not a candidate, ids[1] is one already done.
		_, cands, err := s.PlanChunks(ctx, nid, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 10, Pick: func(id string) (bool, bool) {
			return id != ids[0], id != ids[1]
		}})
		if err != nil || cands != 3 {
			t.Fatalf("candidates %d, %v", cands, err)
		}
		subs, _ := s.BroadcastChunk(ctx, nid, 0)
		res, _ := s.BroadcastResults(ctx, nid, 0)
		if len(subs) != 2 || len(res.Candidates) != 3 || slices.Contains(res.Candidates, ids[0]) {
			t.Errorf("%d to send, candidates %v", len(subs), res.Candidates)
		}
	})
}

// A chunk whose subscriptions are large ends before its count, so that no
// document nears MongoDB's 16 MB limit.
func TestPlanChunksBoundsSnapshotSize(t *testing.T) {
	s := openStore(t, embeddedURI, nil)
	ctx := context.Background()
	big := strings.Repeat("x", 700<<10)
	for i := range 15 {
		sub := notify.Subscription{ServiceName: "svc", Channel: "email", State: notify.StateConfirmed, UserChannelID: "a@b", Data: fields("blob", big, "i", int32(i))}
		if err := s.Subscriptions().Insert(ctx, &sub); err != nil {
			t.Fatal(err)
		}
	}
	nid := notify.NewID()
	chunks, cands, err := s.PlanChunks(ctx, nid, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if chunks < 2 || cands != 15 {
		t.Fatalf("%d chunks, %d candidates", chunks, cands)
	}
}

func TestRecordChunkAndTheAPIView(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		ids := subscribe(t, s, "svc", 6)
		n := notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, State: notify.StateSending, Message: fields()}
		if err := s.Notifications().Insert(ctx, &n); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.PlanChunks(ctx, n.ID, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 3}); err != nil {
			t.Fatal(err)
		}
		r0 := []notify.DispatchResult{
			{SubscriptionID: ids[0], Outcome: notify.DispatchSuccessful},
			{SubscriptionID: ids[1], UserChannelID: "x@y", Outcome: notify.DispatchFailed, Error: fields("message", "550 no", "responseCode", int32(550))},
		}
		part, err := s.RecordChunk(ctx, n.ID, 0, 0, r0)
		if err != nil || part != 1 {
			t.Fatal(part, err)
		}
		// A repeated record (a retried batch, or a worker that lost its
		// lease writing the part another has written) counts once.
		if part, err := s.RecordChunk(ctx, n.ID, 0, 0, append(r0, notify.DispatchResult{SubscriptionID: ids[2], Outcome: notify.DispatchSkipped})); err != nil || part != 2 {
			t.Fatal(part, err)
		}
		if _, err := s.RecordChunk(ctx, n.ID, 1, 0, []notify.DispatchResult{{SubscriptionID: ids[3], Outcome: notify.DispatchSuccessful}}); err != nil {
			t.Fatal(err)
		}
		res, err := s.BroadcastResults(ctx, n.ID, 0)
		if err != nil || res.Complete || res.Parts != 2 {
			t.Fatalf("chunk 0: %+v, %v", res, err)
		}
		if err := s.CompleteChunk(ctx, n.ID, 0, res); err != nil {
			t.Fatal(err)
		}
		res, err = s.BroadcastResults(ctx, n.ID, 0)
		if err != nil || !res.Complete || res.Parts != 0 {
			t.Fatalf("chunk 0 complete: %+v, %v", res, err)
		}
		if o := res.Outcomes(); o[ids[0]] != notify.DispatchSuccessful || o[ids[1]] != notify.DispatchFailed || o[ids[2]] != notify.DispatchSkipped {
			t.Errorf("outcomes %v", o)
		}
		got, err := s.Notifications().FindByID(ctx, n.ID.Hex())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.LoadDispatch(ctx, got); err != nil {
			t.Fatal(err)
		}
		d := got.Dispatch
		if d == nil || len(d.Candidates) != 6 || len(d.Successful) != 2 || len(d.Failed) != 1 || len(d.Skipped) != 1 {
			t.Fatalf("dispatch %+v", d)
		}
		if d.Failed[0].UserChannelID != "x@y" {
			t.Errorf("failure %+v", d.Failed[0])
		}
		want := notify.DispatchCounts{Candidates: 6, Successful: 2, Failed: 1, Skipped: 1, Pending: 2}
		if *d.Counts != want {
			t.Errorf("counts %+v, want %+v", *d.Counts, want)
		}
		c, err := s.DispatchCounts(ctx, n.ID)
		if err != nil || c != want {
			t.Errorf("DispatchCounts = %+v, %v", c, err)
		}
		// The API's JSON shows the counts; a client sending them back has
		// them dropped.
		var back notify.Notification
		if err := back.SetFields(got.Fields()); err != nil {
			t.Fatal(err)
		}
		if back.Dispatch.Counts != nil || back.Dispatch.Extra.Has("counts") {
			t.Error("counts kept from client input")
		}

		n2, err := s.DeleteDispatch(ctx, n.ID)
		if err != nil || n2 != 5 {
			t.Errorf("DeleteDispatch = %d, %v; want the two chunks' snapshots and results and chunk 1's partial results", n2, err)
		}
		got.Dispatch = nil
		if err := s.LoadDispatch(ctx, got); err != nil || got.Dispatch != nil {
			t.Errorf("after delete: %+v, %v", got.Dispatch, err)
		}
	})
}

// Arrays the original stored inline are shown with the side results, each
// subscriber once.
func TestDispatchViewMergesInlineArrays(t *testing.T) {
	s := openStore(t, embeddedURI, nil)
	ctx := context.Background()
	ids := subscribe(t, s, "svc", 3)
	n := notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: fields(),
		Dispatch: &notify.Dispatch{Candidates: ids, Successful: ids[:1], Extra: fields("req", fields("hostname", "h"))}}
	if err := s.Notifications().Insert(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PlanChunks(ctx, n.ID, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 10, Pick: func(id string) (bool, bool) { return true, id != ids[0] }}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordChunk(ctx, n.ID, 0, 0, []notify.DispatchResult{{SubscriptionID: ids[1], Outcome: notify.DispatchSuccessful}}); err != nil {
		t.Fatal(err)
	}
	if err := s.LoadDispatch(ctx, &n); err != nil {
		t.Fatal(err)
	}
	d := n.Dispatch
	if len(d.Candidates) != 3 || !slices.Equal(d.Successful, ids[:2]) || !d.Extra.Has("req") || d.Counts.Pending != 1 {
		t.Errorf("dispatch %+v counts %+v", d, d.Counts)
	}
}

func TestDispatchViewIsBounded(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, embeddedURI, nil)
	bounded, err := mongostore.Open(ctx, embeddedURI, mongostore.Options{Database: s.Database(), DispatchListLimit: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer bounded.Close(ctx)
	ids := subscribe(t, s, "svc", 10)
	n := notify.Notification{ServiceName: "svc", Channel: "email", IsBroadcast: true, Message: fields()}
	if err := s.Notifications().Insert(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PlanChunks(ctx, n.ID, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 3}); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if _, err := s.RecordChunk(ctx, n.ID, i/3, i%3, []notify.DispatchResult{{SubscriptionID: id, Outcome: notify.DispatchSuccessful}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := bounded.LoadDispatch(ctx, &n); err != nil {
		t.Fatal(err)
	}
	d := n.Dispatch
	if len(d.Candidates) != 4 || len(d.Successful) != 4 || d.Counts.Candidates != 10 || d.Counts.Successful != 10 {
		t.Errorf("lists %d/%d, counts %+v", len(d.Candidates), len(d.Successful), d.Counts)
	}
}

func TestStartBroadcastKeepsTheFirstHeader(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		nid := notify.NewID()
		started := time.Now().UTC().Truncate(time.Millisecond)
		first := mongostore.Broadcast{NotificationID: nid, Run: "r1", HTTPHost: "http://h", User: fields("securityId", "admin"), Started: started}
		got, created, err := s.StartBroadcast(ctx, first)
		if err != nil || !created || got.Run != "r1" {
			t.Fatalf("first: %+v %v %v", got, created, err)
		}
		got, created, err = s.StartBroadcast(ctx, mongostore.Broadcast{NotificationID: nid, Run: "r2"})
		if err != nil || created || got.Run != "r1" || got.HTTPHost != "http://h" || !got.Started.Equal(started) {
			t.Fatalf("second: %+v %v %v", got, created, err)
		}
		if id, _ := got.User.String("securityId"); id != "admin" {
			t.Errorf("user %v", got.User)
		}
		if err := s.SetBroadcastPlanned(ctx, nid, "r2", 3, 7); !errors.Is(err, notify.ErrNotFound) {
			t.Errorf("another run's plan: %v", err)
		}
		if err := s.SetBroadcastPlanned(ctx, nid, "r1", 3, 7); err != nil {
			t.Fatal(err)
		}
		got, err = s.Broadcast(ctx, nid)
		if err != nil || !got.Planned || got.Chunks != 3 || got.Candidates != 7 {
			t.Errorf("planned header %+v, %v", got, err)
		}
	})
}

// A plan interrupted after some chunks (its node died) is continued after
// them, each subscriber a candidate once.
func TestPlanContinuesAnInterruptedPlan(t *testing.T) {
	eachStore(t, func(t *testing.T, s *mongostore.Store) {
		ctx := context.Background()
		want := subscribe(t, s, "svc", 7)
		nid := notify.NewID()
		died := errors.New("node died")
		_, _, err := s.PlanChunks(ctx, nid, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 3, Written: func(i, _ int) error {
			if i == 1 {
				return died
			}
			return nil
		}})
		if !errors.Is(err, died) {
			t.Fatalf("err = %v", err)
		}
		planned, from, err := s.PlannedCandidates(ctx, nid)
		if err != nil || from != 2 || len(planned) != 6 {
			t.Fatalf("planned %d in %d chunks, %v", len(planned), from, err)
		}
		chunks, cands, err := s.PlanChunks(ctx, nid, mongostore.Plan{ServiceName: "svc", Channel: "email", Size: 3, From: from,
			Pick: func(id string) (bool, bool) { return !planned[id], !planned[id] }})
		if err != nil || chunks != 3 || cands != 1 {
			t.Fatalf("continued: %d chunks, %d candidates, %v", chunks, cands, err)
		}
		var got []string
		for i := range chunks {
			r, err := s.BroadcastResults(ctx, nid, i)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Candidates...)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("candidates %v, want %v", got, want)
		}
	})
}
