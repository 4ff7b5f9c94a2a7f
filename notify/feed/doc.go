// Package feed fetches RSS and Atom feeds and reads their items in the
// shape NotifyBC's feed parser (feedparser for Node.js, with addmeta off)
// gives them, so that the message templates of an existing deployment's
// RSS notification configurations — {title}, {link}, {description},
// {pubDate}, {author}, … — keep merging the same values.
//
// # Items
//
// Every item has the generic fields, null (nil) when the feed has no value
// for them: title (HTML tags stripped), description (the full content when
// the feed has content:encoded or Atom content, else the description or
// summary), summary, date (the latest update), pubdate and pubDate (the
// publication date; dates are time.Time in UTC), link, guid (the link when
// the feed gives no guid or id), author, comments, origlink, plus image and
// source (objects, empty when absent), categories and enclosures (arrays),
// and permalink when an RSS guid is a permalink. After them come the
// feed's own elements under their namespaced names ("rss:title",
// "atom:link", "content:encoded", "dc:creator", …), each an object with
// its attributes under "@" and its text under "#", nested elements under
// their names and repeated elements as arrays. Names are lower case, as
// the original gives them; a "." in a name becomes "_" so that the item
// can be stored in MongoDB as it is.
//
// RSS 0.9x/2.0, RSS 1.0 (RDF) and Atom 0.3/1.0 are read. The original
// resolves relative links against xml:base; this package does not.
//
// # Hostile input
//
// A feed is fetched from a server that the configuration names but nobody
// here controls, so Fetch bounds everything it accepts: only http and
// https, at most MaxRedirects redirects (each checked the same way), the
// addresses notify/outbound's client admits at every hop (never the
// service's own loopback address), a whole-request timeout, and a body of
// at most MaxBytes after decompression. encoding/xml expands only the
// predefined and HTML entities, never ones a document declares, so neither
// external entities nor entity expansion ("billion laughs") can happen;
// elements nest at most MaxDepth deep and at most MaxItems items are read
// from one feed. Since what parsing keeps is not proportional to the bytes
// read (empty elements and attributes cost far more to keep than to send),
// Parse also bounds the elements and attributes it reads (MaxNodes), the
// names and text it keeps (MaxKeptBytes) and each tag and run of text
// (MaxTokenBytes): a feed over a bound is ErrTooComplex, which the cron
// logs, and nothing of it is used.
package feed
