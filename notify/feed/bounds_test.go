package feed_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/feed"
)

// feedSize is just under Fetch's default byte cap: what a hostile feed
// server can send.
const feedSize = feed.DefaultMaxBytes - 100<<10

// hostileFeeds are documents of feedSize that cost far more to keep than
// to send, by the shapes that grew the process most before Parse counted
// what it keeps.
var hostileFeeds = []struct {
	name string
	body func(b *bytes.Buffer)
}{
	{"empty elements in the channel", func(b *bytes.Buffer) { repeatTo(b, "<a/>") }},
	{"empty elements in one item", func(b *bytes.Buffer) {
		b.WriteString("<item>")
		repeatTo(b, "<a/>")
		b.WriteString("</item>")
	}},
	{"empty elements spread over a thousand items", func(b *bytes.Buffer) {
		for b.Len() < feedSize-200 {
			b.WriteString("<item>")
			for range 2000 {
				b.WriteString("<a/>")
			}
			b.WriteString("</item>")
		}
	}},
	{"one tag with a million attributes", func(b *bytes.Buffer) {
		b.WriteString("<item><a")
		for i := 0; b.Len() < feedSize-200; i++ {
			fmt.Fprintf(b, ` a%d=""`, i)
		}
		b.WriteString("/></item>")
	}},
	{"elements with many attributes", func(b *bytes.Buffer) {
		b.WriteString("<item>")
		for b.Len() < feedSize-200 {
			b.WriteString(`<a b="" c="" d="" e="" f="" g="" h="" i=""/>`)
		}
		b.WriteString("</item>")
	}},
	{"XHTML content that grows when escaped", func(b *bytes.Buffer) {
		b.WriteString(`<item><content type="xhtml">`)
		for b.Len() < feedSize-200 {
			b.WriteString(`<p>""""""""""""""""""""""""""""""""</p>`)
		}
		b.WriteString("</content></item>")
	}},
}

// doc wraps body in an RSS 2.0 document of about feedSize bytes.
func doc(body func(*bytes.Buffer)) []byte {
	var b bytes.Buffer
	b.Grow(feedSize + 1<<10)
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>`)
	body(&b)
	b.WriteString("</channel></rss>")
	return b.Bytes()
}

func repeatTo(b *bytes.Buffer, s string) {
	for b.Len() < feedSize-200 {
		b.WriteString(s)
	}
}

// realisticFeed is a feed of feedSize with MaxItems items of news, each
// with a long description.
func realisticFeed() []byte {
	return doc(func(b *bytes.Buffer) {
		for i := 0; b.Len() < feedSize-12<<10; i++ {
			fmt.Fprintf(b, `<item><title>Item %d: road closures</title><link>https://example.org/news/%d</link><guid>https://example.org/news/%d</guid><pubDate>Mon, 02 Mar 2026 10:00:00 GMT</pubDate><category>roads</category><dc:creator>Ministry</dc:creator><description>%s</description></item>`,
				i, i, i, strings.Repeat("Highway 1 is closed between Hope and Boston Bar. ", 200))
		}
	})
}

// allocated returns the bytes allocated while parsing b, and the result.
// Allocation is counted, not time: every byte the heap grows by was
// allocated, so this bounds what parsing adds to the process's memory.
func allocated(b []byte) (uint64, []notify.Fields, error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	items, err := feed.Parse(bytes.NewReader(b))
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, items, err
}

// maxParseAlloc bounds what parsing any document may allocate: under ten
// times the byte cap, so that a feed at the cap grows the process by less
// than the 150 MB the review allowed (most of it is garbage of the XML
// decoder and of growing buffers, collected as parsing goes). Before Parse
// counted what it keeps, the first of hostileFeeds allocated 857 MB and
// kept 426 MB.
const maxParseAlloc = 96 << 20

func TestParseBoundsWhatAFeedCosts(t *testing.T) {
	for _, tc := range hostileFeeds {
		t.Run(tc.name+" is refused as too complex", func(t *testing.T) {
			b := doc(tc.body)
			alloc, items, err := allocated(b)
			if !errors.Is(err, feed.ErrTooComplex) {
				t.Fatalf("%d bytes: %d items, error %v; want ErrTooComplex", len(b), len(items), err)
			}
			if alloc > maxParseAlloc {
				t.Fatalf("parsing %d bytes allocated %d MB, more than %d MB", len(b), alloc>>20, maxParseAlloc>>20)
			}
			t.Logf("%.1f MiB: %s; %d MB allocated", float64(len(b))/(1<<20), err, alloc>>20)
		})
	}
	t.Run("a real feed at the byte cap is read whole", func(t *testing.T) {
		b := realisticFeed()
		alloc, items, err := allocated(b)
		if err != nil || len(items) != feed.MaxItems {
			t.Fatalf("%d items, %v", len(items), err)
		}
		if alloc > uint64(2*len(b)) {
			t.Fatalf("parsing %d bytes allocated %d MB", len(b), alloc>>20)
		}
		t.Logf("%.1f MiB: %d items; %d MB allocated", float64(len(b))/(1<<20), len(items), alloc>>20)
	})
	t.Run("a feed just under the node bound is read whole", func(t *testing.T) {
		b := doc(func(b *bytes.Buffer) {
			// MaxItems items of 90 elements with an attribute each: 0.9
			// of MaxNodes with the items and the channel's own.
			for range feed.MaxItems {
				b.WriteString("<item>")
				for j := range 44 {
					fmt.Fprintf(b, `<e%d x="y"/>`, j%10)
				}
				b.WriteString("</item>")
			}
		})
		alloc, items, err := allocated(b)
		if err != nil || len(items) != feed.MaxItems {
			t.Fatalf("%d items, %v", len(items), err)
		}
		if alloc > maxParseAlloc {
			t.Fatalf("parsing %d bytes allocated %d MB", len(b), alloc>>20)
		}
	})
}

// BenchmarkParse parses a real feed at the byte cap and the hostile ones
// (which stop at a bound): see BENCHMARKS.md.
func BenchmarkParse(b *testing.B) {
	cases := []struct {
		name string
		doc  []byte
	}{{"realistic", realisticFeed()}}
	for _, tc := range hostileFeeds {
		cases = append(cases, struct {
			name string
			doc  []byte
		}{strings.ReplaceAll(tc.name, " ", "_"), doc(tc.body)})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.doc)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = feed.Parse(bytes.NewReader(c.doc))
			}
		})
	}
}
