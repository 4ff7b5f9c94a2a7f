package feed

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"golang.org/x/net/html/charset"

	"github.com/govkit/govkit/notify"
)

// Bounds of Parse. A feed's bytes are bounded by Fetch, but what parsing
// keeps is not proportional to them: each element costs a few hundred bytes
// of bookkeeping, so a 10 MiB feed of empty elements once grew the process
// by 480 MB, and entity-free text inside XHTML content is written back
// escaped, up to five times as long. So Parse also counts what it keeps.
const (
	MaxDepth = 64
	MaxItems = 1000
	// MaxNodes bounds the elements and attributes read from one document
	// (a feed of 1000 items has some 20,000 to 50,000).
	MaxNodes = 100_000
	// MaxKeptBytes bounds the bytes of element and attribute names,
	// attribute values and text kept from one document.
	MaxKeptBytes = 12 << 20
	// MaxTokenBytes bounds one tag (with its attributes) or one run of
	// text as read: the XML decoder builds a whole tag before Parse sees
	// it, at some 40 bytes per byte of attributes.
	MaxTokenBytes = 1 << 20
)

// ErrNotAFeed is a document whose root is not rss, rdf:RDF or an Atom feed.
var ErrNotAFeed = errors.New("feed: not a feed")

// ErrTooComplex is a document over MaxNodes, MaxKeptBytes or MaxTokenBytes:
// nothing of it is used.
var ErrTooComplex = errors.New("feed: too complex")

// tokenReader is the decoder's input: a read fails once the token being
// read has taken more than MaxTokenBytes.
type tokenReader struct {
	r          *bufio.Reader
	read, stop int64
}

var errTokenTooLarge = fmt.Errorf("%w: a tag or text of more than %d bytes", ErrTooComplex, MaxTokenBytes)

// next starts a token.
func (t *tokenReader) next() { t.stop = t.read + MaxTokenBytes }

func (t *tokenReader) ReadByte() (byte, error) {
	if t.read >= t.stop {
		return 0, errTokenTooLarge
	}
	b, err := t.r.ReadByte()
	if err == nil {
		t.read++
	}
	return b, err
}

// Read serves a character set decoder, which reads ahead: a token's bound
// then holds within its buffer.
func (t *tokenReader) Read(p []byte) (int, error) {
	if t.read >= t.stop {
		return 0, errTokenTooLarge
	}
	if left := t.stop - t.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := t.r.Read(p)
	t.read += int64(n)
	return n, err
}

// Canonical prefixes of well-known namespaces, as feedparser names them.
var namespaces = map[string]string{
	"http://www.w3.org/2005/Atom":                                    "atom",
	"http://purl.org/atom/ns#":                                       "atom",
	"http://www.w3.org/1999/02/22-rdf-syntax-ns#":                    "rdf",
	"http://purl.org/rss/1.0/":                                       "rdf",
	"http://my.netscape.com/rdf/simple/0.9/":                         "rdf",
	"http://webns.net/mvcb/":                                         "admin",
	"http://creativecommons.org/ns#":                                 "cc",
	"http://web.resource.org/cc/":                                    "cc",
	"http://purl.org/rss/1.0/modules/content/":                       "content",
	"http://backend.userland.com/creativeCommonsRSSModule":           "creativecommons",
	"http://cyber.law.harvard.edu/rss/creativeCommonsRssModule.html": "creativecommons",
	"http://purl.org/dc/elements/1.1/":                               "dc",
	"http://purl.org/dc/elements/1.0/":                               "dc",
	"http://purl.oclc.org/net/rss_2.0/enc#":                          "enc",
	"http://rssnamespace.org/feedburner/ext/1.0":                     "feedburner",
	"http://www.itunes.com/dtds/podcast-1.0.dtd":                     "itunes",
	"http://www.w3.org/2003/01/geo/wgs84_pos#":                       "geo",
	"http://www.georss.org/georss":                                   "georss",
	"http://search.yahoo.com/mrss/":                                  "media",
	"http://search.yahoo.com/mrss":                                   "media",
	"http://www.pheedo.com/namespace/pheedo":                         "pheedo",
	"http://purl.org/rss/1.0/modules/syndication/":                   "syn",
	"http://purl.org/rss/1.0/modules/taxonomy/":                      "taxo",
	"http://purl.org/syndication/thread/1.0":                         "thr",
	"http://www.w3.org/1999/xhtml":                                   "xhtml",
	"http://www.w3.org/XML/1998/namespace":                           "xml",
}

// node is one element as feedparser keeps it: attributes, text, and the
// child elements by key in the order they first appear.
type node struct {
	key      string
	attrs    notify.Fields
	text     strings.Builder
	children []*node
	// xhtml collects the markup inside an element of type="xhtml" as text.
	xhtml int
}

func (n *node) textValue() any {
	t := strings.TrimSpace(n.text.String())
	if t == "" {
		return nil
	}
	return t
}

func (n *node) attr(name string) any {
	v, _ := n.attrs.Get(name)
	return v
}

// group is the children of n with one key, in document order.
type group struct {
	key   string
	nodes []*node
}

func (n *node) groups() []group {
	var out []group
	idx := map[string]int{}
	for _, c := range n.children {
		i, ok := idx[c.key]
		if !ok {
			i = len(out)
			idx[c.key] = i
			out = append(out, group{key: c.key})
		}
		out[i].nodes = append(out[i].nodes, c)
	}
	return out
}

func (n *node) child(key string) *node {
	for _, c := range n.children {
		if c.key == key {
			return c
		}
	}
	return nil
}

// value is the element in feedparser's raw form.
func (n *node) value() notify.Fields {
	f := notify.Fields{{Key: "@", Value: n.attrs}}
	if t := n.textValue(); t != nil {
		f = append(f, notify.Field{Key: "#", Value: t})
	}
	for _, g := range n.groups() {
		f = append(f, notify.Field{Key: g.key, Value: groupValue(g)})
	}
	return f
}

func groupValue(g group) any {
	if len(g.nodes) == 1 {
		return g.nodes[0].value()
	}
	arr := make([]any, len(g.nodes))
	for i, c := range g.nodes {
		arr[i] = c.value()
	}
	return arr
}

// parser reads one document.
type parser struct {
	typ      string            // rss, rdf or atom
	prefixes map[string]string // namespace URI → prefix declared in the document
	stack    []*node
	items    []notify.Fields
	// nodes and kept count toward MaxNodes and MaxKeptBytes.
	nodes, kept int
	// author is the feed's own author, for items without one; it is read
	// from the channel as it stands at the first item, as the original.
	author    any
	authorSet bool
}

// Parse reads a feed document (RSS, RDF or Atom, in any encoding its XML
// declaration names) and returns its items. A document whose root is not a
// feed is ErrNotAFeed.
//
// Parse reads at most MaxItems items and keeps at most MaxNodes elements
// and attributes and MaxKeptBytes of names and text, reading no tag or text
// longer than MaxTokenBytes; a document over a bound is ErrTooComplex.
// What it allocates is then a small multiple of what it reads, whatever
// the document (see BenchmarkParse).
func Parse(r io.Reader) ([]notify.Fields, error) {
	in := &tokenReader{r: bufio.NewReader(r)}
	dec := xml.NewDecoder(in)
	dec.Strict = false
	dec.Entity = xml.HTMLEntity
	dec.CharsetReader = charset.NewReaderLabel
	p := &parser{prefixes: map[string]string{}}
	for len(p.items) < MaxItems {
		in.next()
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if errors.Is(err, ErrTooComplex) {
			return nil, err
		}
		if err != nil {
			if p.typ != "" && len(p.stack) == 0 {
				break // trailing garbage after the document
			}
			return nil, fmt.Errorf("feed: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := p.start(t); err != nil {
				return nil, err
			}
		case xml.EndElement:
			p.end(t)
		case xml.CharData:
			if len(p.stack) > 0 {
				top := p.stack[len(p.stack)-1]
				before := top.text.Len()
				if top.xhtml > 0 {
					_ = xml.EscapeText(&top.text, t)
				} else {
					top.text.Write(t)
				}
				if err := p.keep(0, top.text.Len()-before); err != nil {
					return nil, err
				}
			}
		}
	}
	if p.typ == "" {
		return nil, ErrNotAFeed
	}
	return p.items, nil
}

// keep counts nodes and bytes kept against MaxNodes and MaxKeptBytes.
func (p *parser) keep(nodes, bytes int) error {
	p.nodes += nodes
	p.kept += bytes
	switch {
	case p.nodes > MaxNodes:
		return fmt.Errorf("%w: more than %d elements and attributes", ErrTooComplex, MaxNodes)
	case p.kept > MaxKeptBytes:
		return fmt.Errorf("%w: more than %d bytes of names and text", ErrTooComplex, MaxKeptBytes)
	}
	return nil
}

func (p *parser) start(t xml.StartElement) error {
	size := len(t.Name.Local)
	for _, a := range t.Attr {
		size += len(a.Name.Local) + len(a.Value)
	}
	// Names are kept up to twice (as read, and lower case with a prefix).
	if err := p.keep(1+len(t.Attr), 2*size); err != nil {
		return err
	}
	for _, a := range t.Attr {
		switch {
		case a.Name.Space == "xmlns":
			p.prefixes[a.Value] = a.Name.Local
		case a.Name.Space == "" && a.Name.Local == "xmlns":
			p.prefixes[a.Value] = ""
		}
	}
	if p.typ == "" {
		local := strings.ToLower(t.Name.Local)
		ns := namespaces[t.Name.Space]
		switch {
		case local == "rss":
			p.typ = "rss"
		case local == "rdf" && ns == "rdf":
			p.typ = "rdf"
		case local == "feed" && ns == "atom":
			p.typ = "atom"
		default:
			return ErrNotAFeed
		}
	}
	if len(p.stack) >= MaxDepth {
		return fmt.Errorf("feed: elements nested more than %d deep", MaxDepth)
	}
	if len(p.stack) > 0 {
		if top := p.stack[len(p.stack)-1]; top.xhtml > 0 {
			// Inside XHTML content: markup is text.
			top.xhtml++
			top.text.WriteString("<" + t.Name.Local)
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || a.Name.Local == "xmlns" {
					continue
				}
				top.text.WriteString(" " + a.Name.Local + `="`)
				_ = xml.EscapeText(&top.text, []byte(a.Value))
				top.text.WriteString(`"`)
			}
			top.text.WriteString(">")
			return nil
		}
	}
	n := &node{key: p.name(t.Name), attrs: notify.Fields{}}
	for _, a := range t.Attr {
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
			continue
		}
		v := strings.TrimSpace(a.Value)
		n.attrs = append(n.attrs, notify.Field{Key: p.attrName(a.Name), Value: v})
		if strings.EqualFold(a.Name.Local, "type") && v == "xhtml" {
			n.xhtml = 1
		}
	}
	p.stack = append(p.stack, n)
	return nil
}

func (p *parser) end(t xml.EndElement) {
	if len(p.stack) == 0 {
		return
	}
	n := p.stack[len(p.stack)-1]
	if n.xhtml > 1 {
		n.xhtml--
		n.text.WriteString("</" + t.Name.Local + ">")
		return
	}
	p.stack = p.stack[:len(p.stack)-1]
	if n.key == "item" || n.key == "entry" {
		for _, anc := range p.stack {
			if anc.key == "item" || anc.key == "entry" {
				return // an item inside an item: dropped, as the original does
			}
		}
		if !p.authorSet && len(p.stack) > 0 {
			p.author, p.authorSet = feedAuthor(p.stack[len(p.stack)-1]), true
		}
		p.items = append(p.items, p.item(n))
		return
	}
	if len(p.stack) > 0 {
		parent := p.stack[len(p.stack)-1]
		parent.children = append(parent.children, n)
	}
}

// prefix names a namespace: its well-known prefix, else the one the
// document declares for it.
func (p *parser) prefix(space string) string {
	if space == "" {
		return ""
	}
	if pre, ok := namespaces[space]; ok {
		return pre
	}
	if pre, ok := p.prefixes[space]; ok {
		return pre
	}
	if !strings.ContainsAny(space, ":/") {
		return space // an undeclared prefix, as written
	}
	return ""
}

// name is an element's key: its lower-case local name, qualified by its
// namespace's prefix unless that is the feed's own.
func (p *parser) name(n xml.Name) string {
	local := safeKey(strings.ToLower(n.Local))
	pre := p.prefix(n.Space)
	if pre == "" || pre == p.typ {
		return local
	}
	return pre + ":" + local
}

func (p *parser) attrName(n xml.Name) string {
	local := safeKey(strings.ToLower(n.Local))
	pre := p.prefix(n.Space)
	if pre == "" || pre == p.typ {
		return local
	}
	return pre + ":" + local
}

// safeKey keeps a name storable as a MongoDB field name.
func safeKey(s string) string {
	s = strings.ReplaceAll(s, ".", "_")
	if strings.HasPrefix(s, "$") {
		s = "_" + s[1:]
	}
	return s
}

var (
	reMailbox = regexp.MustCompile(`^\s*(.*?)\s*<\s*([^<>]*?)\s*>\s*$`)
	reComment = regexp.MustCompile(`^\s*(\S+)\s*\((.*)\)\s*$`)
)

// personName reads an RSS author the way an address parser does:
// "jane@example.org (Jane Doe)" and "Jane Doe <jane@example.org>" give
// the name, a bare address gives the address.
func personName(s string) string {
	if m := reMailbox.FindStringSubmatch(s); m != nil {
		if name := strings.Trim(m[1], `" `); name != "" {
			return name
		}
		return m[2]
	}
	if m := reComment.FindStringSubmatch(s); m != nil && strings.TrimSpace(m[2]) != "" {
		return strings.TrimSpace(m[2])
	}
	return strings.TrimSpace(s)
}

// feedAuthor is the channel's or feed's author, nil when it has none.
func feedAuthor(ch *node) any {
	for _, c := range ch.children {
		switch c.key {
		case "author", "managingeditor":
			if t, ok := c.textValue().(string); ok {
				return personName(t)
			}
			if v := atomPerson(c); v != nil {
				return v
			}
		case "dc:creator", "itunes:author":
			if t := c.textValue(); t != nil {
				return t
			}
		}
	}
	return nil
}

// atomPerson is an Atom person construct's name, email or uri.
func atomPerson(n *node) any {
	for _, k := range []string{"name", "email", "uri"} {
		if c := n.child(k); c != nil {
			if t := c.textValue(); t != nil {
				return t
			}
		}
	}
	return nil
}

func textOf(ns []*node) any { return ns[0].textValue() }

func attrOf(n *node, name string) any {
	if v, ok := n.attr(name).(string); ok && v != "" {
		return v
	}
	return nil
}

func (p *parser) item(n *node) notify.Fields {
	var (
		title, description, summary, date, pubdate any
		link, guid, author, comments, origlink     any
		permalink                                  any
		image, source                              = notify.Fields{}, notify.Fields{}
		categories, enclosures                     []any
		raw                                        notify.Fields
	)
	addEnclosure := func(e notify.Fields, replace bool) {
		url, _ := e.Get("url")
		typ, _ := e.Get("type")
		for i, x := range enclosures {
			xf := x.(notify.Fields)
			xu, _ := xf.Get("url")
			xt, _ := xf.Get("type")
			if xu == url && xt == typ {
				if replace {
					enclosures[i] = e
				}
				return
			}
		}
		enclosures = append(enclosures, e)
	}
	for _, g := range n.groups() {
		first := g.nodes[0]
		switch g.key {
		case "title":
			title = textOf(g.nodes)
		case "description", "summary":
			summary = textOf(g.nodes)
			if description == nil {
				description = summary
			}
		case "content", "content:encoded":
			description = textOf(g.nodes)
		case "pubdate", "published", "issued", "modified", "updated", "dc:date":
			s, _ := textOf(g.nodes).(string)
			d, ok := ParseDate(s)
			if !ok {
				break
			}
			if pubdate == nil || g.key == "pubdate" || g.key == "published" || g.key == "issued" {
				pubdate = d
			}
			if date == nil || g.key == "modified" || g.key == "updated" {
				date = d
			}
		case "link":
			for _, l := range g.nodes {
				if href := attrOf(l, "href"); href != nil {
					switch attrOf(l, "rel") {
					case nil:
						link = href
					case "canonical":
						origlink = href
					case "alternate":
						link = href
					case "self":
						if link == nil {
							link = href
						}
					case "replies":
						comments = href
					case "enclosure":
						addEnclosure(notify.Fields{{Key: "url", Value: href}, {Key: "type", Value: attrOf(l, "type")}, {Key: "length", Value: attrOf(l, "length")}}, false)
					}
				} else if len(l.attrs) == 0 && link == nil {
					link = l.textValue()
				}
			}
			if guid == nil {
				guid = link
			}
		case "guid", "id":
			guid = textOf(g.nodes)
			isPerma, _ := first.attr("ispermalink").(string)
			if guid != nil && p.typ == "rss" && g.key == "guid" && !strings.Contains(strings.ToLower(isPerma), "false") {
				permalink = guid
			}
		case "author":
			if t, ok := first.textValue().(string); ok {
				author = personName(t)
			} else {
				author = atomPerson(first)
			}
		case "dc:creator":
			author = textOf(g.nodes)
		case "comments":
			comments = textOf(g.nodes)
		case "source":
			switch p.typ {
			case "rss":
				source = notify.Fields{{Key: "title", Value: first.textValue()}, {Key: "url", Value: attrOf(first, "url")}}
			case "atom":
				if c := first.child("title"); c != nil && c.textValue() != nil {
					source.Set("title", c.textValue())
				}
				if c := first.child("link"); c != nil && attrOf(c, "href") != nil {
					source.Set("url", attrOf(c, "href"))
				}
			}
		case "enclosure":
			for _, e := range g.nodes {
				addEnclosure(notify.Fields{{Key: "url", Value: attrOf(e, "url")}, {Key: "type", Value: attrOf(e, "type")}, {Key: "length", Value: attrOf(e, "length")}}, true)
			}
		case "media:content":
			for _, e := range g.nodes {
				typ := attrOf(e, "type")
				if typ == nil {
					typ = attrOf(e, "medium")
				}
				enc := notify.Fields{{Key: "url", Value: attrOf(e, "url")}, {Key: "type", Value: typ}, {Key: "length", Value: attrOf(e, "filesize")}}
				for _, k := range []string{"bitrate", "framerate", "samplingrate", "duration", "height", "width"} {
					if v := attrOf(e, k); v != nil {
						enc.Set(k, v)
					}
				}
				addEnclosure(enc, false)
			}
		case "category", "dc:subject", "itunes:category", "media:category":
			for _, c := range g.nodes {
				categories = append(categories, p.categories(g.key, c)...)
			}
		case "feedburner:origlink", "pheedo:origlink":
			if origlink == nil {
				origlink = textOf(g.nodes)
			}
		}
		key := g.key
		if !strings.Contains(key, ":") {
			key = p.typ + ":" + key
		}
		raw = append(raw, notify.Field{Key: key, Value: groupValue(g)})
	}
	if description == nil {
		if c := n.child("itunes:summary"); c != nil {
			description = c.textValue()
		}
	}
	if author == nil {
		switch {
		case n.child("itunes:author") != nil:
			author = n.child("itunes:author").textValue()
		case n.child("itunes:owner") != nil && n.child("itunes:owner").child("itunes:name") != nil:
			author = n.child("itunes:owner").child("itunes:name").textValue()
		case n.child("dc:publisher") != nil:
			author = n.child("dc:publisher").textValue()
		}
	}
	if url := imageURL(n); url != nil {
		image.Set("url", url)
	}
	if link == nil {
		if g, ok := guid.(string); ok && (strings.HasPrefix(g, "http:") || strings.HasPrefix(g, "https:")) {
			link = g
		}
	}
	if t, ok := title.(string); ok {
		title = StripHTML(t)
	}
	if author == nil {
		author = p.author
	}
	item := notify.Fields{
		{Key: "title", Value: title},
		{Key: "description", Value: description},
		{Key: "summary", Value: summary},
		{Key: "date", Value: date},
		{Key: "pubdate", Value: pubdate},
		{Key: "pubDate", Value: pubdate},
		{Key: "link", Value: link},
		{Key: "guid", Value: guid},
		{Key: "author", Value: author},
		{Key: "comments", Value: comments},
		{Key: "origlink", Value: origlink},
		{Key: "image", Value: image},
		{Key: "source", Value: source},
		{Key: "categories", Value: uniq(categories)},
		{Key: "enclosures", Value: nonNil(enclosures)},
	}
	if permalink != nil {
		item = append(item, notify.Field{Key: "permalink", Value: permalink})
	}
	return append(item, raw...)
}

func (p *parser) categories(key string, c *node) []any {
	var out []any
	text, _ := c.textValue().(string)
	switch key {
	case "category":
		switch {
		case p.typ == "atom":
			if t := attrOf(c, "term"); t != nil {
				out = append(out, t)
			}
		case p.typ == "rss" && text != "":
			out = append(out, text)
		}
	case "dc:subject":
		for _, s := range strings.Split(text, " ") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case "itunes:category":
		top, _ := attrOf(c, "text").(string)
		subs := 0
		for _, sc := range c.children {
			if sc.key == "itunes:category" {
				if st, ok := attrOf(sc, "text").(string); ok {
					out = append(out, top+"/"+st)
				}
				subs++
			}
		}
		if subs == 0 {
			out = append(out, top)
		}
	case "media:category":
		if text != "" {
			out = append(out, text)
		}
	}
	return out
}

func imageURL(n *node) any {
	if c := n.child("itunes:image"); c != nil {
		return attrOf(c, "href")
	}
	if c := n.child("media:thumbnail"); c != nil {
		return attrOf(c, "url")
	}
	for _, path := range [][]string{{"media:content", "media:thumbnail"}, {"media:group", "media:thumbnail"}, {"media:group", "media:content", "media:thumbnail"}} {
		c := n
		for _, k := range path {
			if c = c.child(k); c == nil {
				break
			}
		}
		if c != nil {
			return attrOf(c, "url")
		}
	}
	if c := n.child("g:image_link"); c != nil {
		return c.textValue()
	}
	return nil
}

func uniq(xs []any) []any {
	out := []any{}
	seen := map[any]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func nonNil(xs []any) []any {
	if xs == nil {
		return []any{}
	}
	return xs
}

// StripHTML removes HTML markup from a title: tags of HTML elements,
// comments, processing instructions and declarations. Other text in angle
// brackets stays, as in the original.
func StripHTML(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b bytes.Buffer
	for i := 0; i < len(s); {
		if s[i] == '<' {
			if n := markupLen(s[i:]); n > 0 {
				i += n
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

var reTag = regexp.MustCompile(`^</?([a-zA-Z][a-zA-Z0-9]*)(?:\s[^<>]*)?/?>`)

func markupLen(s string) int {
	for _, pair := range [][2]string{{"<!--", "-->"}, {"<?", "?>"}, {"<!", ">"}} {
		if strings.HasPrefix(s, pair[0]) {
			if end := strings.Index(s[len(pair[0]):], pair[1]); end >= 0 {
				return len(pair[0]) + end + len(pair[1])
			}
			return 0
		}
	}
	m := reTag.FindStringSubmatch(s)
	if m == nil || !htmlTags[strings.ToLower(m[1])] {
		return 0
	}
	return len(m[0])
}

// htmlTags are the HTML element names whose tags StripHTML removes.
var htmlTags = func() map[string]bool {
	m := map[string]bool{}
	for _, t := range strings.Fields(`a abbr acronym address applet area article aside audio b base basefont bdi bdo big
		blink blockquote body br button canvas caption center cite code col colgroup data datalist dd del details dfn
		dialog dir div dl dt em embed fieldset figcaption figure font footer form frame frameset h1 h2 h3 h4 h5 h6 head
		header hgroup hr html i iframe img input ins isindex kbd label legend li link listing main map mark marquee menu
		menuitem meta meter multicol nav nextid nobr noembed noframes noscript object ol optgroup option output p param
		picture plaintext pre progress q rb rp rt rtc ruby s samp script section select slot small source spacer span
		strike strong style sub summary sup table tbody td template textarea tfoot th thead time title tr track tt u ul
		var video wbr xmp`) {
		m[t] = true
	}
	return m
}()
