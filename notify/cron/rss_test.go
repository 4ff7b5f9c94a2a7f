package cron_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/cron"
	"github.com/govkit/govkit/notify/feed"
	"github.com/govkit/govkit/notify/mongostore"
)

// feedServer serves a feed on loopback whose body the test changes.
type feedServer struct {
	*httptest.Server
	mu     sync.Mutex
	body   string
	status int
	hits   atomic.Int64
}

func newFeedServer(t *testing.T, body string) *feedServer {
	fs := &feedServer{body: body, status: 200}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.hits.Add(1)
		fs.mu.Lock()
		defer fs.mu.Unlock()
		w.WriteHeader(fs.status)
		fmt.Fprint(w, fs.body)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *feedServer) set(status int, body string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.status, fs.body = status, body
}

type rssItem struct{ guid, title, pubDate string }

func rss2(items ...rssItem) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>t</title><link>http://myservice</link>`)
	for _, it := range items {
		fmt.Fprintf(&b, `<item><title><![CDATA[%s]]></title><link>http://myservice/%s</link><guid isPermaLink="false">%s</guid><pubDate>%s</pubDate><author>foo</author><category>cat</category><description><![CDATA[ lorem ipsum %s ]]></description></item>`,
			it.title, it.guid, it.guid, it.pubDate, it.guid)
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

func atom(entries ...rssItem) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title><author><name>foo</name></author>`)
	for _, e := range entries {
		fmt.Fprintf(&b, `<entry><title>%s</title><link href="http://myservice/%s"/><id>%s</id><updated>%s</updated><summary>lorem ipsum %s</summary></entry>`,
			e.title, e.guid, e.guid, e.pubDate, e.guid)
	}
	b.WriteString(`</feed>`)
	return b.String()
}

// rssConfig stores a notification configuration with a feed.
func (f *fixture) rssConfig(url string, rss notify.Fields) *notify.Configuration {
	f.t.Helper()
	r := notify.Fields{{Key: "url", Value: url}, {Key: "timeSpec", Value: "0 0 1 1 0"}}
	for _, e := range rss {
		r.Set(e.Key, e.Value)
	}
	c := &notify.Configuration{Name: "notification", ServiceName: "myService", Value: notify.Fields{
		{Key: "rss", Value: r},
		{Key: "messageTemplates", Value: notify.Fields{{Key: "email", Value: notify.Fields{
			{Key: "from", Value: "no_reply@invalid.local"}, {Key: "subject", Value: "{title}"},
			{Key: "textBody", Value: "{description} {link} {pubDate} by {author}"}}}}},
		{Key: "httpHost", Value: "http://foo"},
	}}
	if err := f.store.Configurations().Insert(context.Background(), c); err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) subjects(rcpt string) []string {
	var out []string
	for _, m := range f.mailsTo(rcpt) {
		out = append(out, m.Subject)
	}
	return out
}

func TestRssFirstPollNotifiesEveryItemAndMergesTheOriginalFields(t *testing.T) {
	for _, format := range []struct {
		name string
		doc  func(...rssItem) string
		date string
	}{
		{"RSS 2.0", rss2, "Wed, 28 Jun 2017 08:00:00 EDT"},
		{"Atom", atom, "2017-06-28T12:00:00Z"},
	} {
		t.Run(format.name, func(t *testing.T) {
			f := newFixture(t, nil)
			ctx := context.Background()
			f.subscribe(notify.Subscription{UserChannelID: "bar@foo.com", UnsubscriptionCode: "12345"})
			srv := newFeedServer(t, format.doc(rssItem{"1", "Item 1", format.date}, rssItem{"2", "Item 2", format.date}))
			c := f.rssConfig(srv.URL+"/rss", nil)
			n, err := f.svc.PollFeed(ctx, c)
			if err != nil || n != 2 {
				t.Fatalf("created %d notifications, %v", n, err)
			}
			f.settle()
			subjects := f.subjects("bar@foo.com")
			if len(subjects) != 2 {
				t.Fatalf("mails %v", subjects)
			}
			for _, m := range f.mailsTo("bar@foo.com") {
				if !strings.Contains(m.Text, "lorem ipsum") || !strings.Contains(m.Text, "http://myservice/") ||
					!strings.Contains(m.Text, "2017-06-28T12:00:00.000Z") || !strings.Contains(m.Text, "by foo") {
					t.Errorf("merged text %q", m.Text)
				}
			}
			notes, err := f.store.Notifications().Find(ctx, mongostore.Query{Sort: notify.Fields{{Key: "id", Value: 1}}})
			if err != nil || len(notes) != 2 {
				t.Fatalf("%d notifications, %v", len(notes), err)
			}
			n0 := notes[0]
			if !n0.IsBroadcast || n0.Channel != "email" || n0.HTTPHost != "http://foo" || n0.AsyncBroadcastPushNotification != true || n0.State != notify.StateSent {
				t.Errorf("notification %+v", n0)
			}
			data := n0.Data.(notify.Fields)
			for k, want := range map[string]any{"title": "Item 1", "guid": "1", "link": "http://myservice/1", "pubDate": "2017-06-28T12:00:00.000Z", "author": "foo"} {
				if got, _ := data.Get(k); got != want {
					t.Errorf("data.%s = %#v, want %#v", k, got, want)
				}
			}
			if _, ok := data.Get("_notifyBCLastPoll"); !ok {
				t.Error("data lacks _notifyBCLastPoll")
			}
			rec, err := f.store.Rss().FindOne(ctx, mongostore.Query{Filter: notify.Fields{{Key: "serviceName", Value: "myService"}}})
			if err != nil || len(rec.Items) != 2 || !rec.LastPoll.Equal(start) {
				t.Fatalf("rss record %+v, %v", rec, err)
			}
			// The record keeps what the next poll compares, not the
			// item's content.
			if g, _ := rec.Items[0].Get("guid"); g != "1" || rec.Items[0].Has("author") || rec.Items[0].Has("description") || !rec.Items[0].Has("_notifyBCLastPoll") {
				t.Errorf("stored item %v", rec.Items[0])
			}
			if p, _ := rec.Items[0].Get("pubDate"); !p.(time.Time).Equal(time.Date(2017, 6, 28, 12, 0, 0, 0, time.UTC)) {
				t.Errorf("stored pubDate %v", p)
			}
		})
	}
}

func TestRssLaterPolls(t *testing.T) {
	const d1, d2 = "Wed, 28 Jun 2017 08:00:00 EDT", "Thu, 29 Jun 2017 08:00:00 EDT"
	f := newFixture(t, nil)
	ctx := context.Background()
	f.subscribe(notify.Subscription{UserChannelID: "bar@foo.com"})
	srv := newFeedServer(t, rss2(rssItem{"1", "One", d1}, rssItem{"2", "Two", d1}))
	c := f.rssConfig(srv.URL, nil)
	poll := func(want int) {
		t.Helper()
		f.clock.Advance(time.Minute)
		if n, err := f.svc.PollFeed(ctx, c); err != nil || n != want {
			t.Fatalf("created %d notifications, %v; want %d", n, err, want)
		}
	}
	poll(2)
	poll(0) // unchanged
	srv.set(200, rss2(rssItem{"2", "Two", d2}, rssItem{"3", "Three", d1}))
	poll(1) // only 3: without includeUpdatedItems a changed pubDate is no news
	srv.set(500, "")
	f.clock.Advance(time.Minute)
	if _, err := f.svc.PollFeed(ctx, c); err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("a failing feed: %v", err)
	}
	// Item 1 left the feed at the third poll; kept for the default one
	// generation, it was forgotten then, and is notified again now that
	// it is back.
	srv.set(200, rss2(rssItem{"1", "One again", d1}, rssItem{"2", "Two", d2}, rssItem{"3", "Three", d1}))
	poll(1)
	f.settle()
	got := f.subjects("bar@foo.com")
	if len(got) != 4 || !strings.Contains(strings.Join(got, "|"), "One again") {
		t.Errorf("subjects %v", got)
	}
}

func TestRssUpdatedItemsAndRetainedGenerations(t *testing.T) {
	const d1, d2 = "Wed, 28 Jun 2017 08:00:00 EDT", "Thu, 29 Jun 2017 08:00:00 EDT"
	f := newFixture(t, nil)
	ctx := context.Background()
	f.subscribe(notify.Subscription{UserChannelID: "bar@foo.com"})
	srv := newFeedServer(t, rss2(rssItem{"1", "One", d1}, rssItem{"2", "Two", d1}))
	c := f.rssConfig(srv.URL, notify.Fields{{Key: "includeUpdatedItems", Value: true}, {Key: "outdatedItemRetentionGenerations", Value: 100.0}})
	poll := func(want int) {
		t.Helper()
		f.clock.Advance(time.Minute)
		if n, err := f.svc.PollFeed(ctx, c); err != nil || n != want {
			t.Fatalf("created %d notifications, %v; want %d", n, err, want)
		}
	}
	poll(2)
	srv.set(200, rss2(rssItem{"2", "Two", d2}))
	poll(1) // 2's pubDate changed
	srv.set(200, rss2(rssItem{"1", "One", d1}, rssItem{"2", "Two", d2}))
	poll(0) // 1 was kept while away (100 generations)
	rec, err := f.store.Rss().FindOne(ctx, mongostore.Query{})
	if err != nil || len(rec.Items) != 2 {
		t.Fatalf("rss record %+v, %v", rec, err)
	}
}

func TestRssOverlappingPollsNotifyOnce(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.subscribe(notify.Subscription{UserChannelID: "bar@foo.com"})
	srv := newFeedServer(t, rss2(rssItem{"1", "One", "Wed, 28 Jun 2017 08:00:00 EDT"}))
	c := f.rssConfig(srv.URL, nil)
	if _, err := f.svc.PollFeed(ctx, c); err != nil { // creates the rss record
		t.Fatal(err)
	}
	srv.set(200, rss2(rssItem{"1", "One", "x"}, rssItem{"2", "Two", "x"}, rssItem{"3", "Three", "x"}))
	f.clock.Advance(time.Minute)
	var wg sync.WaitGroup
	var total atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := f.svc.PollFeed(ctx, c)
			if err != nil {
				t.Error(err)
			}
			total.Add(int64(n))
		}()
	}
	wg.Wait()
	if total.Load() != 2 {
		t.Errorf("overlapping polls created %d notifications, want 2", total.Load())
	}
}

func TestReadRssConfigRefusesWhatCannotRun(t *testing.T) {
	cases := map[string]struct {
		rss   notify.Fields
		field string
	}{
		"a time spec that cannot be read": {notify.Fields{{Key: "url", Value: "http://x/"}, {Key: "timeSpec", Value: "every minute"}}, "value.rss.timeSpec"},
		"no time spec":                    {notify.Fields{{Key: "url", Value: "http://x/"}}, "value.rss.timeSpec"},
		"a file url":                      {notify.Fields{{Key: "url", Value: "file:///etc/passwd"}, {Key: "timeSpec", Value: "* * * * *"}}, "value.rss.url"},
		"no url":                          {notify.Fields{{Key: "timeSpec", Value: "* * * * *"}}, "value.rss.url"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := cron.ReadRssConfig(&notify.Configuration{Name: "notification", Value: notify.Fields{{Key: "rss", Value: tc.rss}}})
			fe, ok := err.(*notify.FieldError)
			if !ok || fe.Field != tc.field {
				t.Fatalf("err = %v, want a field error on %s", err, tc.field)
			}
		})
	}
}

func TestRssFeedTooComplexToReadNotifiesNothing(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	f.subscribe(notify.Subscription{UserChannelID: "bar@foo.com", UnsubscriptionCode: "12345"})
	// Just under the byte cap, of empty elements: 857 MB allocated and 426
	// MB kept before the parser counted what it keeps.
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><title>x</title>`)
	for b.Len() < feed.DefaultMaxBytes-100<<10 {
		b.WriteString("<a/>")
	}
	b.WriteString(`</item></channel></rss>`)
	srv := newFeedServer(t, b.String())
	c := f.rssConfig(srv.URL+"/rss", nil)
	n, err := f.svc.PollFeed(ctx, c)
	if !errors.Is(err, feed.ErrTooComplex) || n != 0 {
		t.Fatalf("created %d notifications, error %v; want feed.ErrTooComplex", n, err)
	}
	if recs, err := f.store.Rss().Find(ctx, mongostore.Query{}); err != nil || len(recs) != 0 {
		t.Fatalf("rss records %v, %v", recs, err)
	}
	t.Run("the next poll of a readable feed notifies", func(t *testing.T) {
		srv.set(200, rss2(rssItem{"1", "Item 1", "Wed, 28 Jun 2017 08:00:00 EDT"}))
		if n, err := f.svc.PollFeed(ctx, c); err != nil || n != 1 {
			t.Fatalf("created %d notifications, %v", n, err)
		}
	})
}
