package feed_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/feed"
	"github.com/govkit/govkit/notify/outbound"
)

func parseFile(t *testing.T, name string) []notify.Fields {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	items, err := feed.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return items
}

func get(t *testing.T, f notify.Fields, path ...string) any {
	t.Helper()
	var cur any = f
	for _, k := range path {
		m, ok := cur.(notify.Fields)
		if !ok {
			t.Fatalf("%v: %q is not an object in %v", path, k, cur)
		}
		v, ok := m.Get(k)
		if !ok {
			t.Fatalf("%v: no %q in %v", path, k, m.Keys())
		}
		cur = v
	}
	return cur
}

func want(t *testing.T, f notify.Fields, v any, path ...string) {
	t.Helper()
	got := get(t, f, path...)
	if tv, ok := v.(time.Time); ok {
		if gt, ok := got.(time.Time); !ok || !gt.Equal(tv) {
			t.Errorf("%v = %v, want %v", path, got, tv)
		}
		return
	}
	if got != v {
		t.Errorf("%v = %#v, want %#v", path, got, v)
	}
}

func TestRSS2ItemsLookLikeTheOriginalParsersItems(t *testing.T) {
	items := parseFile(t, "rss2.xml")
	if len(items) != 3 {
		t.Fatalf("%d items", len(items))
	}
	first := items[0]
	want(t, first, "Highway 1 closed", "title")
	want(t, first, "Closed between <i>exit 10</i> and exit 12.", "description")
	want(t, first, "Closed between <i>exit 10</i> and exit 12.", "summary")
	want(t, first, "https://roads.example.org/events/101", "link")
	want(t, first, "event-101", "guid")
	want(t, first, "Operations", "author")
	pub := time.Date(2026, 3, 3, 16, 15, 0, 0, time.UTC)
	want(t, first, pub, "pubDate")
	want(t, first, pub, "pubdate")
	want(t, first, pub, "date")
	want(t, first, nil, "comments")
	want(t, first, nil, "origlink")
	if _, ok := first.Get("permalink"); ok {
		t.Error("a guid with isPermaLink=false is no permalink")
	}
	cats := get(t, first, "categories").([]any)
	if len(cats) != 2 || cats[0] != "closure" || cats[1] != "highway-1" {
		t.Errorf("categories = %v", cats)
	}
	enc := get(t, first, "enclosures").([]any)
	if len(enc) != 1 || get(t, enc[0].(notify.Fields), "url") != "https://roads.example.org/cam/101.jpg" || get(t, enc[0].(notify.Fields), "length") != "12345" {
		t.Errorf("enclosures = %v", enc)
	}
	// The feed's own elements, namespaced, with attributes and text.
	want(t, first, "event-101", "rss:guid", "#")
	want(t, first, "false", "rss:guid", "@", "ispermalink")
	want(t, first, "Tue, 03 Mar 2026 08:15:00 PST", "rss:pubdate", "#")
	if c, ok := get(t, first, "rss:category").([]any); !ok || len(c) != 2 {
		t.Errorf("repeated elements are an array: %v", get(t, first, "rss:category"))
	}

	second := items[1]
	want(t, second, "Ferry delays & cancellations", "title")
	want(t, second, "<p>Long text</p>", "description")
	want(t, second, "Short text", "summary")
	want(t, second, "Marine desk", "author")
	want(t, second, "https://roads.example.org/events/102#comments", "comments")
	want(t, second, "https://roads.example.org/events/102", "permalink")
	want(t, second, time.Date(2026, 3, 4, 16, 0, 0, 0, time.UTC), "pubDate")
	want(t, second, "<p>Long text</p>", "content:encoded", "#")

	third := items[2]
	want(t, third, "https://roads.example.org/events/103", "guid")
	want(t, third, nil, "pubDate")
	want(t, third, "Road Desk", "author") // the channel's managingEditor
}

func TestAtomEntries(t *testing.T) {
	items := parseFile(t, "atom.xml")
	if len(items) != 2 {
		t.Fatalf("%d items", len(items))
	}
	e := items[0]
	want(t, e, "Office hours change", "title")
	want(t, e, "https://bulletins.example.org/2026/hours", "link")
	want(t, e, "urn:uuid:6b2ad6c4-0a8f-4a2b-9f2a-d1c5a3b8a002", "guid")
	want(t, e, time.Date(2026, 3, 1, 17, 0, 0, 0, time.UTC), "pubDate")
	want(t, e, time.Date(2026, 3, 5, 10, 0, 0, 250e6, time.UTC), "date")
	want(t, e, "Hours change on Monday.", "summary")
	if d, _ := get(t, e, "description").(string); !strings.Contains(d, "<p>Open <b>9 to 5</b> from Monday.</p>") {
		t.Errorf("xhtml content kept as markup: %q", d)
	}
	want(t, e, "Bulletin office", "author") // the feed's author
	cats := get(t, e, "categories").([]any)
	if len(cats) != 1 || cats[0] != "hours" {
		t.Errorf("categories = %v", cats)
	}
	enc := get(t, e, "enclosures").([]any)
	if len(enc) != 1 || get(t, enc[0].(notify.Fields), "type") != "application/pdf" {
		t.Errorf("enclosures = %v", enc)
	}
	if _, ok := get(t, e, "atom:link").([]any); !ok {
		t.Errorf("atom:link = %v", get(t, e, "atom:link"))
	}
	s := items[1]
	want(t, s, "Jane Writer", "author")
	want(t, s, "https://bulletins.example.org/2026/second", "link")
	want(t, s, time.Date(2026, 3, 6, 10, 0, 0, 0, time.UTC), "pubDate")
}

func TestRDFItems(t *testing.T) {
	items := parseFile(t, "rdf.xml")
	if len(items) != 1 {
		t.Fatalf("%d items", len(items))
	}
	want(t, items[0], "First story", "title")
	want(t, items[0], "https://news.example.org/1", "guid")
	want(t, items[0], time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC), "pubDate")
	cats := get(t, items[0], "categories").([]any)
	if len(cats) != 2 || cats[1] != "budget" {
		t.Errorf("categories = %v", cats)
	}
	want(t, items[0], "First story", "rdf:title", "#")
}

func TestEncodingsTheDeclarationNames(t *testing.T) {
	items := parseFile(t, "latin1.xml")
	want(t, items[0], "Crème brûlée", "title")
}

func TestParseRefuses(t *testing.T) {
	deep := strings.Repeat("<a>", 200) + strings.Repeat("</a>", 200)
	cases := map[string]struct {
		doc string
		err error
	}{
		"an HTML page":                     {"<html><body>hi</body></html>", feed.ErrNotAFeed},
		"an empty body":                    {"", feed.ErrNotAFeed},
		"a feed element outside Atom's ns": {"<feed><entry><title>x</title></entry></feed>", feed.ErrNotAFeed},
		"elements nested without end":      {`<rss version="2.0"><channel><item>` + deep + `</item></channel></rss>`, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			items, err := feed.Parse(strings.NewReader(c.doc))
			if err == nil {
				t.Fatalf("parsed: %v", items)
			}
			if c.err != nil && !errors.Is(err, c.err) {
				t.Errorf("err = %v, want %v", err, c.err)
			}
		})
	}
}

func TestEntitiesADocumentDeclaresAreNeverExpanded(t *testing.T) {
	doc := `<?xml version="1.0"?>
<!DOCTYPE rss [
  <!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa">
  <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
  <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
  <!ENTITY secret SYSTEM "file:///etc/passwd">
]>
<rss version="2.0"><channel><item><title>&c;</title><description>&secret;</description><guid>1</guid></item></channel></rss>`
	items, err := feed.Parse(strings.NewReader(doc))
	if err != nil {
		return // refusing the document is fine too
	}
	for _, it := range items {
		for _, k := range []string{"title", "description"} {
			if s, _ := it.Get(k); s != nil && (strings.Contains(s.(string), "aaaa") || strings.Contains(s.(string), "root:")) {
				t.Fatalf("%s expanded: %q", k, s)
			}
		}
	}
}

func TestAtMostMaxItemsAreRead(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<rss version="2.0"><channel>`)
	for range feed.MaxItems + 50 {
		b.WriteString("<item><title>x</title></item>")
	}
	b.WriteString("</channel></rss>")
	items, err := feed.Parse(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != feed.MaxItems {
		t.Fatalf("%d items", len(items))
	}
}

func TestParseDate(t *testing.T) {
	cases := map[string]time.Time{
		"Wed, 28 Jun 2017 08:00:00 EDT":   time.Date(2017, 6, 28, 12, 0, 0, 0, time.UTC),
		"Wed, 28 Jun 2017 08:00:00 GMT":   time.Date(2017, 6, 28, 8, 0, 0, 0, time.UTC),
		"28 Jun 2017 08:00 -0700":         time.Date(2017, 6, 28, 15, 0, 0, 0, time.UTC),
		"Sun, 1 January 17 01:02:03 UT":   time.Date(2017, 1, 1, 1, 2, 3, 0, time.UTC),
		"2017-06-28T08:00:00.123456Z":     time.Date(2017, 6, 28, 8, 0, 0, 123e6, time.UTC),
		"2017-06-28T08:00:00+02:00":       time.Date(2017, 6, 28, 6, 0, 0, 0, time.UTC),
		"2017-06-28":                      time.Date(2017, 6, 28, 0, 0, 0, 0, time.UTC),
		"Wed, 28 Jun 2017 08:00:00 +0530": time.Date(2017, 6, 28, 2, 30, 0, 0, time.UTC),
	}
	for in, w := range cases {
		got, ok := feed.ParseDate(in)
		if !ok || !got.Equal(w) {
			t.Errorf("ParseDate(%q) = %v, %v; want %v", in, got, ok, w)
		}
	}
	for _, bad := range []string{"", "yesterday", "31 Apr 2017 10:00 GMT", "28 Jun 2017 08:00:00 XYZ", "28 Foo 2017 08:00 GMT"} {
		if got, ok := feed.ParseDate(bad); ok {
			t.Errorf("ParseDate(%q) = %v", bad, got)
		}
	}
}

func TestStripHTML(t *testing.T) {
	cases := map[string]string{
		"a <b>bold</b> move":             "a bold move",
		"<!-- c -->x<br/>y":              "xy",
		"<<<NotHTML>>> stays":            "<<<NotHTML>>> stays",
		"1 < 2 and <span a='1'>3</span>": "1 < 2 and 3",
	}
	for in, w := range cases {
		if got := feed.StripHTML(in); got != w {
			t.Errorf("StripHTML(%q) = %q, want %q", in, got, w)
		}
	}
}

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestFetch(t *testing.T) {
	rss, _ := os.ReadFile("testdata/rss2.xml")
	mux := http.NewServeMux()
	mux.HandleFunc("/feed", func(w http.ResponseWriter, r *http.Request) { w.Write(rss) })
	mux.HandleFunc("/gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write(rss)
		zw.Close()
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/feed", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<rss version="2.0"><channel><item><title>`))
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 64 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		// A small compressed body that inflates far past the limit.
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write([]byte(`<rss version="2.0"><channel><item><title>`))
		zeros := make([]byte, 1<<20)
		for range 32 {
			zw.Write(zeros)
		}
		zw.Close()
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusMultipleChoices) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`<rss version="2.0">`))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := serve(t, mux.ServeHTTP)
	loopback, err := outbound.New(outbound.Policy{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	f := feed.NewFetcher(feed.Options{Client: loopback.Client(0), MaxBytes: 1 << 20, Timeout: 2 * time.Second, MaxRedirects: 3})
	ctx := context.Background()

	for _, path := range []string{"/feed", "/gz", "/moved"} {
		items, err := f.Fetch(ctx, srv.URL+path)
		if err != nil || len(items) != 3 {
			t.Errorf("%s: %d items, %v", path, len(items), err)
		}
	}
	refusals := map[string]string{
		srv.URL + "/loop":    "redirects",
		srv.URL + "/to-file": "scheme",
		srv.URL + "/huge":    "too large",
		srv.URL + "/bomb":    "too large",
		srv.URL + "/status":  "bad status code 300",
		srv.URL + "/slow":    "deadline",
		"file:///etc/passwd": "scheme",
		"ftp://example.org/": "scheme",
		"http:///nohost":     "no host",
	}
	for u, says := range refusals {
		_, err := f.Fetch(ctx, u)
		if err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: err = %v, want one saying %q", u, err, says)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"rss2.xml", "atom.xml", "rdf.xml", "latin1.xml"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`<rss><channel><item><content type="xhtml"><p a="&quot;">""</p></content></item><item/></channel></rss>`))
	f.Add([]byte(`<?xml version="1.0" encoding="utf-16"?><feed xmlns="http://www.w3.org/2005/Atom"><entry><a b="" c=""/></entry></feed>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Memory is bounded whatever the input: what one parse allocates
		// is a small multiple of what it reads, plus the fixed cost of at
		// most MaxItems items (about 2 KB each).
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		items, err := feed.Parse(bytes.NewReader(b))
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(200*len(b))+4<<20 {
			t.Fatalf("parsing %d bytes allocated %d", len(b), alloc)
		}
		if err != nil {
			return
		}
		if len(items) > feed.MaxItems {
			t.Fatalf("%d items", len(items))
		}
		for _, it := range items {
			for _, k := range []string{"title", "link", "guid", "pubDate", "categories", "enclosures"} {
				if !it.Has(k) {
					t.Fatalf("item lacks %s: %v", k, it.Keys())
				}
			}
		}
	})
}
