package mongostore

import (
	"regexp"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// textFallback answers a top-level {$text: {$search: "…"}} on a server
// without text indexes (the embedded store: FerretDB v1 refuses $text) as
// a case-insensitive search for any of the words in the collection's
// textFields: the original's console sends $text from its search box on
// every page, and a one-machine install has no text index to ask. It
// finds what MongoDB's $text finds for plain words, and more (a word
// inside a longer one; no stemming, no stop words); words after "-" are
// ignored, as $text ignores them for matching, and a quoted phrase is
// one word. Elsewhere the filter is left to the server.
func (c *Collection[T, P]) textFallback(filter bson.D) bson.D {
	if !c.s.ferretDB {
		return filter
	}
	i := -1
	for j, e := range filter {
		if e.Key == "$text" {
			i = j
		}
	}
	if i < 0 {
		return filter
	}
	search := ""
	if spec, ok := filter[i].Value.(bson.D); ok {
		for _, e := range spec {
			if e.Key == "$search" {
				search, _ = e.Value.(string)
			}
		}
	}
	var anyWord bson.A
	for _, w := range searchWords(search) {
		for _, f := range c.schema.textFields {
			anyWord = append(anyWord, bson.D{{Key: f, Value: bson.D{{Key: "$regex", Value: regexp.QuoteMeta(w)}, {Key: "$options", Value: "i"}}}})
		}
	}
	rest := append(append(bson.D{}, filter[:i]...), filter[i+1:]...)
	// No word (or no field): $text would match nothing either.
	words := bson.D{{Key: "$or", Value: anyWord}}
	if len(anyWord) == 0 {
		words = bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{}}}}}
	}
	if len(rest) == 0 {
		return words
	}
	return bson.D{{Key: "$and", Value: bson.A{rest, words}}}
}

// searchWords splits a $text search string into the words and quoted
// phrases it matches on; negated ones ("-word") are left out.
func searchWords(s string) []string {
	var words []string
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \t\n")
		switch {
		case s == "":
		case s[0] == '"':
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				end = len(s) - 1
			}
			if p := strings.TrimSpace(s[1 : 1+end]); p != "" {
				words = append(words, p)
			}
			s = s[min(len(s), end+2):]
		default:
			end := strings.IndexAny(s, " \t\n")
			if end < 0 {
				end = len(s)
			}
			if w := s[:end]; !strings.HasPrefix(w, "-") {
				words = append(words, w)
			}
			s = s[end:]
		}
	}
	return words
}
