package query_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/query"
)

// allowedOps is every $-key the parser may put in its output.
var allowedOps = map[string]bool{}

func init() {
	for _, op := range strings.Fields(`$eq $ne $gt $gte $lt $lte $in $nin $all $exists $type $regex $options
		$not $elemMatch $size $mod $bitsAllSet $bitsAnySet $bitsAllClear $bitsAnyClear $near $nearSphere
		$geoWithin $geoIntersects $maxDistance $minDistance $geometry $box $center $centerSphere $polygon
		$uniqueDocs $and $or $nor $text $search $language $caseSensitive $diacriticSensitive $comment $meta`) {
		allowedOps[op] = true
	}
}

// checkOutput fails when a parsed document holds an operator outside the
// allow-list or cannot be encoded for the driver.
func checkOutput(t *testing.T, name string, d bson.D) {
	if d == nil {
		return
	}
	if _, err := bson.Marshal(d); err != nil {
		t.Fatalf("%s does not encode: %v (%#v)", name, err, d)
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case bson.D:
			for _, e := range x {
				if strings.HasPrefix(e.Key, "$") && !allowedOps[e.Key] {
					t.Fatalf("%s holds operator %q: %#v", name, e.Key, d)
				}
				walk(e.Value)
			}
		case bson.A:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(d)
}

func fuzzFilter(t *testing.T, q url.Values) {
	for _, s := range []*query.Schema{query.Subscriptions, query.Notifications, query.Bounces, query.AccessTokens} {
		f, err := query.ParseFilter(q, s)
		if err != nil {
			var qe *query.Error
			if !errors.As(err, &qe) || qe.StatusCode() != 400 || qe.Message == "" {
				t.Fatalf("error %T %v is not a 400 *query.Error", err, err)
			}
			continue
		}
		if f.Skip < 0 || f.Limit < 0 {
			t.Fatalf("negative skip or limit: %+v", f)
		}
		checkOutput(t, "where", f.Where)
		checkOutput(t, "order", f.Order)
		checkOutput(t, "fields", f.Fields)
	}
}

// FuzzParseFilter feeds whole query strings (JSON and bracket forms) to
// ParseFilter: it must never panic, must refuse with a 400 *query.Error,
// and must only produce documents the driver can encode, with allowed
// operators only.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		`filter={"where":{"serviceName":"a"},"order":[["created","desc"]],"limit":10,"skip":5}`,
		`filter={"where":{"$or":[{"id":"65a1b2c3d4e5f60718293a4b"},{"state":{"$in":["a"]}}]}}`,
		`filter={"where":{"state":{"neq":"deleted"}}}`,
		`filter={"where":{"$where":"1"}}`,
		`filter={"order":["serviceName asc"]}`,
		`filter={"fields":{"name":true,"id":false}}`,
		`filter[where][email][$regex]=^foo&filter[limit]=1`,
		`filter[where][$or][0][a]=1&filter[where][$or][1][b][$gt]=2`,
		`filter[order][0][0]=serviceName&filter[order][0][1]=desc`,
		`filter[where][created][$gte]="2023-01-01T00:00:00Z"`,
		`filter[where]={"a":{"$elemMatch":{"b":{"$gt":1}}}}`,
		`filter={"where":`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		fuzzFilter(t, q)
	})
}

// FuzzParseFilterJSON feeds arbitrary text as the JSON filter parameter.
func FuzzParseFilterJSON(f *testing.F) {
	for _, s := range []string{
		`{"where":{"a":{"$not":{"$regex":"x","$options":"i"}}}}`,
		`{"where":{"loc":{"$near":{"$geometry":{"type":"Point","coordinates":[1,2]}}}}}`,
		`{"where":{"$text":{"$search":"x"}},"order":{"score":{"$meta":"textScore"}}}`,
		`{"where":{"validTill":{"$lt":"2026-01-02T03:04:05.000Z"}},"limit":"3"}`,
		`{"where":{"and":[{"a":1}]}}`,
		`[1,{"a":[]}]`,
		`{"where":{"a":{"$all":[{"$elemMatch":{"b":1}}]}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fuzzFilter(t, url.Values{"filter": {s}})
		if _, err := query.ParseWhere(url.Values{"where": {s}}, query.Subscriptions); err != nil {
			var qe *query.Error
			if !errors.As(err, &qe) {
				t.Fatalf("ParseWhere error %T %v is not a *query.Error", err, err)
			}
		}
	})
}
