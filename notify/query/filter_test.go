package query_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/query"
)

// ext prints a document as relaxed extended JSON, the easiest form to
// compare.
func ext(t *testing.T, d bson.D) string {
	t.Helper()
	if d == nil {
		return "null"
	}
	b, err := bson.MarshalExtJSON(d, false, false)
	if err != nil {
		t.Fatalf("MarshalExtJSON: %v", err)
	}
	return string(b)
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", raw, err)
	}
	return q
}

func jsonFilter(s string) url.Values { return url.Values{"filter": {s}} }

// wantBadRequest checks err is a 400 *query.Error whose message contains
// every part.
func wantBadRequest(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want a 400 mentioning %q", parts)
	}
	var qe *query.Error
	if !errors.As(err, &qe) {
		t.Fatalf("error %T %v is not a *query.Error", err, err)
	}
	if qe.StatusCode() != 400 {
		t.Fatalf("status %d, want 400", qe.StatusCode())
	}
	for _, p := range parts {
		if !strings.Contains(qe.Message, p) {
			t.Fatalf("message %q does not mention %q", qe.Message, p)
		}
	}
}

func TestWhereDollarOperatorsAreAccepted(t *testing.T) {
	tests := []struct {
		name, filter, want string
	}{
		{"$eq and plain equality", `{"where":{"serviceName":"a","state":{"$eq":"confirmed"}}}`,
			`{"serviceName":"a","state":{"$eq":"confirmed"}}`},
		{"$ne $gt $gte $lt $lte on a number", `{"where":{"n":{"$ne":1,"$gt":2,"$gte":3,"$lt":4.5,"$lte":5}}}`,
			`{"n":{"$ne":1,"$gt":2,"$gte":3,"$lt":4.5,"$lte":5}}`},
		{"$in and $nin take lists", `{"where":{"state":{"$in":["a","b"],"$nin":["c"]}}}`,
			`{"state":{"$in":["a","b"],"$nin":["c"]}}`},
		{"$and $or $nor take lists of queries", `{"where":{"$and":[{"a":1}],"$or":[{"b":2},{"c":3}],"$nor":[{"d":4}]}}`,
			`{"$and":[{"a":1}],"$or":[{"b":2},{"c":3}],"$nor":[{"d":4}]}`},
		{"$regex with $options replaces like", `{"where":{"email":{"$regex":"^foo","$options":"i"}}}`,
			`{"email":{"$regex":"^foo","$options":"i"}}`},
		{"$not wraps operators", `{"where":{"email":{"$not":{"$regex":"bar"}}}}`,
			`{"email":{"$not":{"$regex":"bar"}}}`},
		{"$exists and $type", `{"where":{"data":{"$exists":true},"x":{"$type":"string"}}}`,
			`{"data":{"$exists":true},"x":{"$type":"string"}}`},
		{"$elemMatch with a query on sub-documents", `{"where":{"items":{"$elemMatch":{"k":"v","n":{"$gt":1}}}}}`,
			`{"items":{"$elemMatch":{"k":"v","n":{"$gt":1}}}}`},
		{"$elemMatch with conditions on values", `{"where":{"scores":{"$elemMatch":{"$gte":80,"$lt":85}}}}`,
			`{"scores":{"$elemMatch":{"$gte":80,"$lt":85}}}`},
		{"$size $all $mod", `{"where":{"a":{"$size":2},"b":{"$all":["x"]},"c":{"$mod":[4,0]}}}`,
			`{"a":{"$size":2},"b":{"$all":["x"]},"c":{"$mod":[4,0]}}`},
		{"$text search as the web console sends it", `{"where":{"$text":{"$search":"foo"}}}`,
			`{"$text":{"$search":"foo"}}`},
		{"$near with GeoJSON", `{"where":{"loc":{"$near":{"$geometry":{"type":"Point","coordinates":[1,2]},"$maxDistance":10}}}}`,
			`{"loc":{"$near":{"$geometry":{"type":"Point","coordinates":[1,2]},"$maxDistance":10}}}`},
		{"nested data paths stay as written", `{"where":{"data.address.city":"Victoria"}}`,
			`{"data.address.city":"Victoria"}`},
		{"an embedded document is matched as a whole", `{"where":{"data":{"a":1}}}`,
			`{"data":{"a":1}}`},
		{"null matches missing fields", `{"where":{"validTill":null}}`, `{"validTill":null}`},
		{"an empty where is every record", `{"where":{}}`, `{}`},
		{"a null where is every record", `{"where":null}`, `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := query.ParseFilter(jsonFilter(tc.filter), query.Notifications)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if got := ext(t, f.Where); got != tc.want {
				t.Fatalf("where = %s\nwant    %s", got, tc.want)
			}
		})
	}
}

func TestLegacyOperatorsAreRefusedWithTheReplacement(t *testing.T) {
	tests := []struct {
		name, where string
		want        []string
	}{
		{"eq is refused, use $eq", `{"a":{"eq":1}}`, []string{`"eq"`, `use "$eq"`, "filter.where.a.eq"}},
		{"and holding a list is refused, use $and", `{"and":[{"a":1}]}`, []string{`"and"`, `use "$and"`}},
		{"or holding a list is refused, use $or", `{"or":[{"a":1},{"b":2}]}`, []string{`"or"`, `use "$or"`}},
		{"gt is refused, use $gt", `{"a":{"gt":1}}`, []string{`use "$gt"`}},
		{"gte is refused, use $gte", `{"a":{"gte":1}}`, []string{`use "$gte"`}},
		{"lt is refused, use $lt", `{"a":{"lt":1}}`, []string{`use "$lt"`}},
		{"lte is refused, use $lte", `{"a":{"lte":1}}`, []string{`use "$lte"`}},
		{"between is refused, use $gt $and $lt", `{"a":{"between":[1,2]}}`, []string{`"between"`, `no equivalent`, `"$gt", "$and" and "$lt"`}},
		{"inq is refused, use $in", `{"a":{"inq":["x"]}}`, []string{`use "$in"`}},
		{"nin is refused, use $nin", `{"a":{"nin":["x"]}}`, []string{`use "$nin"`}},
		{"near is refused, use $near", `{"loc":{"near":[1,2]}}`, []string{`use "$near"`}},
		{"neq is refused, use $ne", `{"state":{"neq":"deleted"}}`, []string{`use "$ne"`}},
		{"like is refused, use $regex", `{"name":{"like":"foo"}}`, []string{`"like"`, `use "$regex"`}},
		{"like with options i is refused, use $regex", `{"name":{"like":"foo","options":"i"}}`, []string{`use "$regex"`}},
		{"nlike is refused, use $regex", `{"name":{"nlike":"foo"}}`, []string{`"nlike"`, `"$regex"`}},
		{"regexp is refused, use $regex", `{"name":{"regexp":"^a"}}`, []string{`"regexp"`, `use "$regex"`}},
		{"a legacy operator beside $ operators is refused", `{"a":{"$gt":1,"lt":5}}`, []string{`use "$lt"`}},
		{"a legacy operator inside $not is refused", `{"a":{"$not":{"like":"x"}}}`, []string{`use "$regex"`}},
		{"a legacy and list inside $or is refused", `{"$or":[{"and":[{"a":1}]}]}`, []string{`use "$and"`, "filter.where.$or[0].and"}},
		{"a legacy operator inside a logical clause is refused", `{"$and":[{"a":{"inq":[1]}}]}`, []string{`use "$in"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query.ParseFilter(jsonFilter(`{"where":`+tc.where+`}`), query.Subscriptions)
			wantBadRequest(t, err, tc.want...)
		})
	}
}

func TestLegacyNamesAreFieldsOutsideOperatorPositions(t *testing.T) {
	tests := []struct {
		name, where, want string
	}{
		{"a field named and with a value is a field", `{"and":"x"}`, `{"and":"x"}`},
		{"a field named or with an object is a field", `{"or":{"$eq":1}}`, `{"or":{"$eq":1}}`},
		{"a field named like is a field", `{"like":"yes"}`, `{"like":"yes"}`},
		{"a field named between with a list is matched as a list", `{"between":[1,2]}`, `{"between":[1,2]}`},
		{"a nested path ending in like is a field", `{"data.like":{"$exists":true}}`, `{"data.like":{"$exists":true}}`},
		{"a field named and inside $elemMatch with a value is a field", `{"items":{"$elemMatch":{"and":"x"}}}`, `{"items":{"$elemMatch":{"and":"x"}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := query.ParseFilter(jsonFilter(`{"where":`+tc.where+`}`), query.Subscriptions)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if got := ext(t, f.Where); got != tc.want {
				t.Fatalf("where = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCodeRunningAndUnknownOperatorsAreRefused(t *testing.T) {
	tests := []struct {
		name, where string
		want        []string
	}{
		{"$where runs JavaScript", `{"$where":"sleep(1000)"}`, []string{`"$where"`, "run code"}},
		{"$expr is refused", `{"$expr":{"$eq":["$a","$b"]}}`, []string{`"$expr"`, "not allowed"}},
		{"$function is refused inside $expr's place", `{"a":{"$function":{"body":"x"}}}`, []string{`"$function"`, "not allowed"}},
		{"$accumulator is refused", `{"a":{"$accumulator":{}}}`, []string{`"$accumulator"`}},
		{"$lookup reaches other collections", `{"$lookup":{"from":"UserCredential"}}`, []string{`"$lookup"`, "other collections"}},
		{"$jsonSchema is refused", `{"$jsonSchema":{}}`, []string{`"$jsonSchema"`}},
		{"$where inside $or is refused", `{"$or":[{"$where":"1"}]}`, []string{`"$where"`, "filter.where.$or[0].$where"}},
		{"$where inside $elemMatch is refused", `{"a":{"$elemMatch":{"$where":"1"}}}`, []string{`"$where"`}},
		{"$-keys inside a literal value are refused", `{"data":{"$eq":{"x":{"$where":"1"}}}}`, []string{`"$where"`}},
		{"an unknown operator is refused", `{"a":{"$foo":1}}`, []string{`"$foo"`, "not supported"}},
		{"an unknown top-level operator is refused", `{"$bar":1}`, []string{`"$bar"`}},
		{"a geo operator may hold only geo keys", `{"loc":{"$near":{"$where":"1"}}}`, []string{`"$where"`}},
		{"operators and fields cannot be mixed", `{"a":{"$gt":1,"b":2}}`, []string{"cannot be mixed"}},
		{"a field part may not start with $", `{"a.$b":1}`, []string{"starting with $"}},
		{"$options must be regex flags", `{"a":{"$regex":"x","$options":"z"}}`, []string{"$options"}},
		{"$options needs $regex", `{"a":{"$options":"i"}}`, []string{"needs $regex"}},
		{"$in needs a list, not an object", `{"a":{"$in":{"x":1}}}`, []string{"must be a list"}},
		{"$and needs a non-empty list", `{"$and":[]}`, []string{"non-empty list"}},
		{"$size needs an integer", `{"a":{"$size":1.5}}`, []string{"integer"}},
		{"$text is refused inside $elemMatch", `{"x":{"$elemMatch":{"$text":{"$search":"y"}}}}`, []string{"$text"}},
		{"where must be an object", `[1]`, []string{"filter.where", "object"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query.ParseFilter(jsonFilter(`{"where":`+tc.where+`}`), query.Subscriptions)
			wantBadRequest(t, err, tc.want...)
		})
	}
}

func TestWhereValuesAreCastByField(t *testing.T) {
	tests := []struct {
		name   string
		schema *query.Schema
		where  string
		want   string
	}{
		{"id is _id as an ObjectId", query.Subscriptions, `{"id":"65a1b2c3d4e5f60718293a4b"}`,
			`{"_id":{"$oid":"65a1b2c3d4e5f60718293a4b"}}`},
		{"id inside $in is an ObjectId", query.Subscriptions, `{"id":{"$in":["65a1b2c3d4e5f60718293a4b"]}}`,
			`{"_id":{"$in":[{"$oid":"65a1b2c3d4e5f60718293a4b"}]}}`},
		{"id inside a logical clause is _id", query.Subscriptions, `{"$or":[{"id":"65a1b2c3d4e5f60718293a4b"}]}`,
			`{"$or":[{"_id":{"$oid":"65a1b2c3d4e5f60718293a4b"}}]}`},
		{"date-time fields compare as dates", query.Notifications, `{"validTill":{"$lt":"2026-01-02T03:04:05.123Z"},"created":{"$gte":"2026-01-01T00:00:00Z"}}`,
			`{"validTill":{"$lt":{"$date":"2026-01-02T03:04:05.123Z"}},"created":{"$gte":{"$date":"2026-01-01T00:00:00Z"}}}`},
		{"bounce message dates inside $elemMatch compare as dates", query.Bounces, `{"bounceMessages":{"$elemMatch":{"date":{"$gt":"2026-01-02T03:04:05Z"}}}}`,
			`{"bounceMessages":{"$elemMatch":{"date":{"$gt":{"$date":"2026-01-02T03:04:05Z"}}}}}`},
		{"booleans from text on boolean fields", query.Notifications, `{"isBroadcast":"true"}`, `{"isBroadcast":true}`},
		{"numbers from text on number fields", query.Bounces, `{"hardBounceCount":{"$gt":"2"}}`, `{"hardBounceCount":{"$gt":2}}`},
		{"access token ids are strings", query.AccessTokens, `{"id":"abc","userId":"65a1b2c3d4e5f60718293a4b"}`,
			`{"_id":"abc","userId":{"$oid":"65a1b2c3d4e5f60718293a4b"}}`},
		{"schemaless data keeps JSON types", query.Subscriptions, `{"data.n":5,"data.s":"5","data.b":false}`,
			`{"data.n":5,"data.s":"5","data.b":false}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := query.ParseFilter(jsonFilter(`{"where":`+tc.where+`}`), tc.schema)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if got := ext(t, f.Where); got != tc.want {
				t.Fatalf("where = %s\nwant    %s", got, tc.want)
			}
		})
	}
}

func TestWhereValuesThatCannotBeCastAreRefused(t *testing.T) {
	tests := []struct {
		name   string
		schema *query.Schema
		where  string
		want   []string
	}{
		{"an id that is not 24 hex digits", query.Subscriptions, `{"id":"nope"}`, []string{"filter.where.id", "24 hexadecimal"}},
		{"a date-only value on a date-time field", query.Notifications, `{"validTill":{"$lt":"2026-01-02"}}`, []string{"filter.where.validTill.$lt", "date-time"}},
		{"a date-time with an offset", query.Notifications, `{"created":"2026-01-02T03:04:05+01:00"}`, []string{"date-time"}},
		{"a number on a date-time field", query.Notifications, `{"created":{"$gt":1700000000000}}`, []string{"date-time"}},
		{"text on a number field", query.Bounces, `{"hardBounceCount":"many"}`, []string{"filter.where.hardBounceCount", "number"}},
		{"text on a boolean field", query.Notifications, `{"isBroadcast":"yes"}`, []string{"true or false"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query.ParseFilter(jsonFilter(`{"where":`+tc.where+`}`), tc.schema)
			wantBadRequest(t, err, tc.want...)
		})
	}
}

func TestBracketForm(t *testing.T) {
	tests := []struct {
		name, raw  string
		schema     *query.Schema
		wantWhere  string
		wantOrder  string
		wantFields string
		skip       int64
		limit      int64
	}{
		{"filter[where][field]=x is an equality", "filter[where][serviceName]=x", query.Subscriptions,
			`{"serviceName":"x"}`, "null", "null", 0, 0},
		{"operators nest in brackets", "filter[where][email][$regex]=^foo", query.Administrators,
			`{"email":{"$regex":"^foo"}}`, "null", "null", 0, 0},
		{"limit and skip are read from text", "filter[limit]=10&filter[skip]=20", query.Subscriptions,
			"null", "null", "null", 20, 10},
		{"indexed lists build $in", "filter[where][state][$in][0]=a&filter[where][state][$in][1]=b", query.Subscriptions,
			`{"state":{"$in":["a","b"]}}`, "null", "null", 0, 0},
		{"[] lists build $in", "filter[where][state][$in][]=a&filter[where][state][$in][]=b", query.Subscriptions,
			`{"state":{"$in":["a","b"]}}`, "null", "null", 0, 0},
		{"a single value for $in is a list of one", "filter[where][state][$in]=a", query.Subscriptions,
			`{"state":{"$in":["a"]}}`, "null", "null", 0, 0},
		{"logical clauses as indexed objects", "filter[where][$or][0][a]=1&filter[where][$or][1][b]=2", query.Subscriptions,
			`{"$or":[{"a":"1"},{"b":"2"}]}`, "null", "null", 0, 0},
		{"quoted dates as the original's docs show them", `filter[where][created][$gte]="2023-01-01T00:00:00.000Z"`, query.Subscriptions,
			`{"created":{"$gte":{"$date":"2023-01-01T00:00:00Z"}}}`, "null", "null", 0, 0},
		{"order as a field name", "filter[order]=serviceName", query.Configurations,
			"null", `{"serviceName":1}`, "null", 0, 0},
		{"order as indexed pairs", "filter[order][0][0]=serviceName&filter[order][0][1]=desc", query.Configurations,
			"null", `{"serviceName":-1}`, "null", 0, 0},
		{"fields as an object of flags", "filter[fields][name]=true&filter[fields][id]=false", query.Configurations,
			"null", "null", `{"_id":0,"name":1}`, 0, 0},
		{"where as JSON text inside the bracket form", `filter[where]={"a":{"$gt":1}}&filter[limit]=5`, query.Subscriptions,
			`{"a":{"$gt":1}}`, "null", "null", 0, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := query.ParseFilter(mustQuery(t, tc.raw), tc.schema)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			got := []string{ext(t, f.Where), ext(t, f.Order), ext(t, f.Fields)}
			want := []string{tc.wantWhere, tc.wantOrder, tc.wantFields}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("[where order fields][%d] = %s, want %s", i, got[i], want[i])
				}
			}
			if f.Skip != tc.skip || f.Limit != tc.limit {
				t.Fatalf("skip, limit = %d, %d; want %d, %d", f.Skip, f.Limit, tc.skip, tc.limit)
			}
		})
	}
}

func TestMalformedFilterIs400(t *testing.T) {
	tests := []struct {
		name, raw string
		want      []string
	}{
		{"truncated JSON is 400, not 500", `filter={"where":`, []string{"filter", "not valid JSON"}},
		{"JSON with a syntax error names the offset", `filter={"where":{a:1}}`, []string{"not valid JSON", "offset"}},
		{"trailing data after the JSON", `filter={}{}`, []string{"unexpected data"}},
		{"a filter that is not an object", `filter=[1,2]`, []string{"filter", "JSON object"}},
		{"a filter given twice", `filter={}&filter={}`, []string{"2 times"}},
		{"JSON and bracket form together", `filter={}&filter[limit]=1`, []string{"both"}},
		{"a value and keys for the same bracket name", `filter[where]=x&filter[where][a]=1`, []string{"filter[where]", "one form"}},
		{"an unclosed bracket", `filter[where=1`, []string{"missing ]"}},
		{"an unknown filter key", `filter={"wher":{}}`, []string{"filter.wher", "where, fields, order, skip or limit"}},
		{"include is not supported", `filter={"include":["userCredential"]}`, []string{"filter.include", "not supported"}},
		{"a too deeply nested filter", `filter=` + strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40), []string{"nested"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query.ParseFilter(mustQuery(t, tc.raw), query.Subscriptions)
			wantBadRequest(t, err, tc.want...)
		})
	}
}

func TestEmptyFilter(t *testing.T) {
	for _, raw := range []string{"", "filter=", "filter=null", "filter=%20", "other=1"} {
		f, err := query.ParseFilter(mustQuery(t, raw), query.Subscriptions)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if f.Where != nil || f.Order != nil || f.Fields != nil || f.Skip != 0 || f.Limit != 0 {
			t.Fatalf("%q: got %+v, want the zero filter", raw, f)
		}
	}
}

func TestOrder(t *testing.T) {
	tests := []struct {
		name, order, want string
	}{
		{"pairs of field and asc/desc", `[["serviceName","asc"],["created","desc"]]`, `{"serviceName":1,"created":-1}`},
		{"a plain field name", `"serviceName"`, `{"serviceName":1}`},
		{"a field name with - is descending", `"-created"`, `{"created":-1}`},
		{"several names separated by spaces", `"serviceName -created"`, `{"serviceName":1,"created":-1}`},
		{"directions 1 and -1 and long names", `[["a",1],["b",-1],["c","ascending"],["d","DESCENDING"]]`,
			`{"a":1,"b":-1,"c":1,"d":-1}`},
		{"an object keeps its key order", `{"b":"desc","a":"asc"}`, `{"b":-1,"a":1}`},
		{"id sorts by _id", `"id"`, `{"_id":1}`},
		{"text score sorting", `{"score":{"$meta":"textScore"}}`, `{"score":{"$meta":"textScore"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := query.ParseFilter(jsonFilter(`{"order":`+tc.order+`}`), query.Configurations)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if got := ext(t, f.Order); got != tc.want {
				t.Fatalf("order = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestLegacyOrderIsRefusedWithTheReplacement(t *testing.T) {
	tests := []struct {
		name, raw string
		want      []string
	}{
		{"a list of field-direction strings", `filter={"order":["serviceName asc"]}`, []string{"filter.order[0]", `"serviceName asc"`, `[["serviceName","asc"]]`, `or "serviceName"`}},
		{"upper-case DESC in a string", `filter={"order":"created DESC"}`, []string{`[["created","desc"]]`}},
		{"the legacy form in brackets", `filter[order]=serviceName asc`, []string{`[["serviceName","asc"]]`}},
		{"the legacy form in an indexed bracket list", `filter[order][0]=serviceName desc`, []string{`[["serviceName","desc"]]`}},
		{"a flat pair is not a list of pairs", `filter={"order":["serviceName","asc"]}`, []string{`[["field","asc"]`}},
		{"an unknown direction", `filter={"order":[["a","up"]]}`, []string{"filter.order[0]", "asc or desc"}},
		{"a pair of three", `filter={"order":[["a","asc","x"]]}`, []string{"pair"}},
		{"a number is not an order", `filter={"order":5}`, []string{"filter.order"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query.ParseFilter(mustQuery(t, tc.raw), query.Configurations)
			wantBadRequest(t, err, tc.want...)
		})
	}
}

func TestFields(t *testing.T) {
	tests := []struct {
		name, fields, want string
	}{
		{"an object of flags", `{"name":true,"value":1}`, `{"name":1,"value":1}`},
		{"a list of names", `["name","value"]`, `{"name":1,"value":1}`},
		{"a string of names", `"name value"`, `{"name":1,"value":1}`},
		{"exclusions with -", `"-value"`, `{"value":0}`},
		{"id may be excluded from an inclusion", `{"name":true,"id":false}`, `{"name":1,"_id":0}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := query.ParseFilter(jsonFilter(`{"fields":`+tc.fields+`}`), query.Configurations)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if got := ext(t, f.Fields); got != tc.want {
				t.Fatalf("fields = %s, want %s", got, tc.want)
			}
		})
	}
	bad := []struct {
		name, fields string
		want         []string
	}{
		{"inclusion and exclusion cannot mix", `{"name":true,"value":false}`, []string{"include and exclude"}},
		{"a flag must be boolean", `{"name":"maybe"}`, []string{"filter.fields.name", "true or false"}},
		{"projection operators are refused", `{"name":{"$slice":1}}`, []string{"true or false"}},
		{"a $ field name is refused", `["$where"]`, []string{"starting with $"}},
		{"a number is not a projection", `5`, []string{"filter.fields"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query.ParseFilter(jsonFilter(`{"fields":`+tc.fields+`}`), query.Configurations)
			wantBadRequest(t, err, tc.want...)
		})
	}
}

func TestSkipAndLimit(t *testing.T) {
	ok := []struct {
		name, filter string
		skip, limit  int64
	}{
		{"integers", `{"skip":5,"limit":10}`, 5, 10},
		{"zero limit means no limit", `{"limit":0}`, 0, 0},
		{"integral floats are integers", `{"limit":10.0}`, 0, 10},
		{"digits as text", `{"skip":"3","limit":"4"}`, 3, 4},
		{"offset is the old name of skip", `{"offset":7}`, 7, 0},
		{"skip wins over offset", `{"skip":1,"offset":7}`, 1, 0},
		{"null is absent", `{"skip":null,"limit":null}`, 0, 0},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			f, err := query.ParseFilter(jsonFilter(tc.filter), query.Subscriptions)
			if err != nil {
				t.Fatalf("ParseFilter: %v", err)
			}
			if f.Skip != tc.skip || f.Limit != tc.limit {
				t.Fatalf("skip, limit = %d, %d; want %d, %d", f.Skip, f.Limit, tc.skip, tc.limit)
			}
		})
	}
	bad := []struct {
		name, filter, param string
	}{
		{"a negative limit", `{"limit":-1}`, "filter.limit"},
		{"a negative skip", `{"skip":-5}`, "filter.skip"},
		{"a fractional limit", `{"limit":2.5}`, "filter.limit"},
		{"text that is not a number", `{"skip":"ten"}`, "filter.skip"},
		{"a boolean limit", `{"limit":true}`, "filter.limit"},
		{"a negative offset", `{"offset":-1}`, "filter.offset"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := query.ParseFilter(jsonFilter(tc.filter), query.Subscriptions)
			wantBadRequest(t, err, tc.param, "non-negative integer")
		})
	}
}

func TestParseWhere(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"the JSON where of /count, as the web console sends it", `where={"$text":{"$search":"foo"}}`, `{"$text":{"$search":"foo"}}`},
		{"the bracket where of bulk updates", `where[state]=confirmed&where[id]=65a1b2c3d4e5f60718293a4b`,
			`{"_id":{"$oid":"65a1b2c3d4e5f60718293a4b"},"state":"confirmed"}`},
		{"no where is every record", ``, `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := query.ParseWhere(mustQuery(t, tc.raw), query.Subscriptions)
			if err != nil {
				t.Fatalf("ParseWhere: %v", err)
			}
			if got := ext(t, d); got != tc.want {
				t.Fatalf("where = %s, want %s", got, tc.want)
			}
		})
	}
	_, err := query.ParseWhere(mustQuery(t, `where={"state":{"neq":"deleted"}}`), query.Subscriptions)
	wantBadRequest(t, err, "where.state.neq", `use "$ne"`)
	_, err = query.ParseWhere(mustQuery(t, `where={bad`), query.Subscriptions)
	wantBadRequest(t, err, "where", "not valid JSON")
}
