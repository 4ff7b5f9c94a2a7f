package feed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/outbound"
)

// Limits of Fetch when Options leave them zero.
const (
	DefaultMaxBytes     = 10 << 20
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRedirects = 5
)

// Options configure a Fetcher.
type Options struct {
	// Client sends the requests; a CheckRedirect that bounds redirects and
	// keeps them on http and https runs before its own. Nil: a client of
	// notify/outbound with its default policy (loopback, link-local and
	// the like refused at every hop, private networks allowed); the
	// service passes one built from outboundRequests.
	Client       *http.Client
	MaxBytes     int64         // largest body read (after decompression)
	Timeout      time.Duration // whole request, body included
	MaxRedirects int
}

// Fetcher fetches and reads feeds. It is safe for concurrent use.
type Fetcher struct {
	client   *http.Client
	maxBytes int64
	timeout  time.Duration
}

// ErrStatus is a feed that answered something else than 200 OK.
var ErrStatus = errors.New("feed: bad status code")

// ErrTooLarge is a feed whose body exceeds MaxBytes.
var ErrTooLarge = errors.New("feed: body too large")

// NewFetcher returns a Fetcher.
func NewFetcher(o Options) *Fetcher {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	c := &http.Client{}
	if o.Client != nil {
		*c = *o.Client
	} else {
		t, _ := outbound.New(outbound.Policy{AllowPrivateNetworks: true}) // no entries to misread
		c = t.Client(0)
	}
	max := o.MaxRedirects
	own := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > max {
			return fmt.Errorf("feed: more than %d redirects", max)
		}
		if err := CheckURL(req.URL); err != nil {
			return err
		}
		if own != nil {
			return own(req, via)
		}
		return nil
	}
	return &Fetcher{client: c, maxBytes: o.MaxBytes, timeout: o.Timeout}
}

// CheckURL accepts the URLs a feed may be fetched from: absolute http and
// https URLs with a host.
func CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("feed: url scheme %q: only http and https are fetched", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("feed: url has no host")
	}
	return nil
}

// Fetch gets the feed at rawURL and returns its items (see the package
// documentation), in feed order.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) ([]notify.Fields, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("feed: url: %w", err)
	}
	if err := CheckURL(u); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	req.Header.Set("Accept", "application/rss+xml, application/atom+xml, application/rdf+xml;q=0.9, application/xml;q=0.8, text/xml;q=0.8, */*;q=0.5")
	req.Header.Set("User-Agent", "govkit-notify (RSS notifications)")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		return nil, fmt.Errorf("%w %d", ErrStatus, resp.StatusCode)
	}
	body := &limitedReader{r: resp.Body, left: f.maxBytes}
	items, err := Parse(body)
	if body.over {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, f.maxBytes)
	}
	return items, err
}

// limitedReader reads at most left bytes and remembers whether the
// source had more.
type limitedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.r.Read(one[:]); n > 0 {
			l.over = true
		}
		return 0, io.EOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
