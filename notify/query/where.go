package query

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"net/url"
	"regexp/syntax"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// legacy maps the filter operators of versions before 5 to their
// replacement, as the seed's table does (like/nlike name $regex: the
// table's "$regexp" is not a MongoDB operator).
var legacy = map[string]string{
	"eq":      `use "$eq"`,
	"and":     `use "$and"`,
	"or":      `use "$or"`,
	"gt":      `use "$gt"`,
	"gte":     `use "$gte"`,
	"lt":      `use "$lt"`,
	"lte":     `use "$lte"`,
	"between": `it has no equivalent; use "$gt", "$and" and "$lt"`,
	"inq":     `use "$in"`,
	"nin":     `use "$nin"`,
	"near":    `use "$near"`,
	"neq":     `use "$ne"`,
	"like":    `use "$regex"`,
	"nlike":   `use "$regex" inside "$not"`,
	"regexp":  `use "$regex"`,
}

func legacyError(path, op string) *Error {
	return errorf(path, "the operator %q of versions before 5 is not supported; %s", op, legacy[op])
}

// forbidden operators run code on the server or read other collections.
var forbidden = map[string]bool{
	"$where": true, "$function": true, "$accumulator": true, "$expr": true,
	"$lookup": true, "$graphLookup": true, "$unionWith": true, "$jsonSchema": true,
	"$merge": true, "$out": true,
}

func forbiddenError(path, op string) *Error {
	return errorf(path, "the operator %q is not allowed: only query operators are accepted, none that run code or read other collections", op)
}

func unknownOpError(path, op string) *Error {
	if forbidden[op] {
		return forbiddenError(path, op)
	}
	return errorf(path, "the operator %q is not supported here", op)
}

// geoKeys may appear inside the value of a geospatial operator.
var geoKeys = map[string]bool{
	"$geometry": true, "$maxDistance": true, "$minDistance": true, "$box": true,
	"$center": true, "$centerSphere": true, "$polygon": true, "$uniqueDocs": true,
}

// whereConv converts a where value for one collection.
type whereConv struct {
	schema *Schema
}

// ParseWhere reads the where parameter (count and bulk updates) in JSON or
// bracket form. Absent means nil.
func ParseWhere(q url.Values, s *Schema) (bson.D, error) {
	v, ok, err := param(q, "where")
	if err != nil || !ok {
		return nil, err
	}
	return whereConv{s}.where("where", v)
}

// where converts the value of a where key (a query document; null means no
// condition).
func (c whereConv) where(path string, v any) (bson.D, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		// filter[where]={"a":1} in bracket form: the text is the JSON.
		s := strings.TrimSpace(t)
		if s == "" {
			return nil, nil
		}
		j, err := decodeJSON(path, s)
		if err != nil {
			return nil, err
		}
		if _, ok := j.(object); !ok {
			return nil, errorf(path, "must be a JSON object")
		}
		return c.queryDoc(path, j, "", 0)
	}
	return c.queryDoc(path, v, "", 0)
}

// queryDoc converts a query document. prefix is the dotted path of the
// array field an $elemMatch is applied to ("" at the top, where id means
// _id).
func (c whereConv) queryDoc(path string, v any, prefix string, depth int) (bson.D, error) {
	if depth > maxDepth {
		return nil, errorf(path, "is nested more than %d levels deep", maxDepth)
	}
	o, ok := v.(object)
	if !ok {
		return nil, errorf(path, "must be an object of field conditions")
	}
	d := make(bson.D, 0, len(o))
	for _, m := range o {
		p := path + "." + m.key
		if strings.HasPrefix(m.key, "$") {
			val, err := c.topOperator(p, m.key, m.val, prefix, depth)
			if err != nil {
				return nil, err
			}
			d = append(d, bson.E{Key: m.key, Value: val})
			continue
		}
		if m.key == "and" || m.key == "or" {
			if _, isList := m.val.([]any); isList {
				return nil, legacyError(p, m.key)
			}
		}
		if err := checkFieldName(p, m.key); err != nil {
			return nil, err
		}
		if err := c.schema.visible(p, prefix+m.key); err != nil {
			return nil, err
		}
		field := m.key
		if field == "id" && prefix == "" {
			field = "_id"
		}
		val, err := c.condition(p, m.val, prefix+field, depth+1)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: field, Value: val})
	}
	return d, nil
}

func checkFieldName(path, name string) error {
	if name == "" {
		return errorf(path, "a field name may not be empty")
	}
	for _, seg := range strings.Split(name, ".") {
		if strings.HasPrefix(seg, "$") {
			return errorf(path, "a field name may not have a part starting with $")
		}
		if seg == "" {
			// The database cannot resolve "a..b", ".a" or "a.", and no
			// stored field is named so.
			return errorf(path, "a field name may not have an empty part (a leading, trailing or double dot)")
		}
	}
	if strings.IndexByte(name, 0) >= 0 {
		return errorf(path, "a field name may not contain a NUL character")
	}
	return nil
}

// topOperator converts an operator at query-document level.
func (c whereConv) topOperator(path, op string, v any, prefix string, depth int) (any, error) {
	switch op {
	case "$and", "$or", "$nor":
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return nil, errorf(path, "must be a non-empty list of query objects")
		}
		out := make(bson.A, len(list))
		for i, e := range list {
			d, err := c.queryDoc(path+"["+strconv.Itoa(i)+"]", e, prefix, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = d
		}
		return out, nil
	case "$text":
		if prefix != "" {
			return nil, errorf(path, "$text is only allowed at the top of where")
		}
		if c.schema.hides() {
			return nil, errorf(path, "$text is not available to this caller: a text search reads fields hidden from it")
		}
		o, ok := v.(object)
		if !ok {
			return nil, errorf(path, "must be an object with $search")
		}
		d := bson.D{}
		for _, m := range o {
			p := path + "." + m.key
			switch m.key {
			case "$search", "$language":
				s, ok := m.val.(string)
				if !ok {
					return nil, errorf(p, "must be a string")
				}
				d = append(d, bson.E{Key: m.key, Value: s})
			case "$caseSensitive", "$diacriticSensitive":
				b, err := toBool(p, m.val)
				if err != nil {
					return nil, err
				}
				d = append(d, bson.E{Key: m.key, Value: b})
			default:
				return nil, unknownOpError(p, m.key)
			}
		}
		if _, ok := o.get("$search"); !ok {
			return nil, errorf(path, "needs $search")
		}
		return d, nil
	case "$comment":
		s, ok := v.(string)
		if !ok {
			return nil, errorf(path, "must be a string")
		}
		return s, nil
	}
	return nil, unknownOpError(path, op)
}

// condition converts the value of a field: an operator object, or a value
// to match.
func (c whereConv) condition(path string, v any, field string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errorf(path, "is nested more than %d levels deep", maxDepth)
	}
	o, ok := v.(object)
	if !ok {
		return c.cast(path, v, field)
	}
	hasOp := false
	for _, m := range o {
		if _, old := legacy[m.key]; old {
			return nil, legacyError(path+"."+m.key, m.key)
		}
		if strings.HasPrefix(m.key, "$") {
			hasOp = true
		}
	}
	if !hasOp {
		// An embedded document to match as a whole.
		return c.cast(path, v, field)
	}
	d := make(bson.D, 0, len(o))
	for _, m := range o {
		p := path + "." + m.key
		if !strings.HasPrefix(m.key, "$") {
			return nil, errorf(p, "operators and field names cannot be mixed in one condition")
		}
		val, err := c.operator(p, m.key, m.val, field, o, depth)
		if err != nil {
			return nil, err
		}
		d = append(d, bson.E{Key: m.key, Value: val})
	}
	return d, nil
}

// operator converts one field-level operator.
func (c whereConv) operator(path, op string, v any, field string, siblings object, depth int) (any, error) {
	switch op {
	case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte":
		return c.cast(path, v, field)
	case "$in", "$nin", "$all":
		list, ok := v.([]any)
		if !ok {
			if _, isObj := v.(object); isObj || v == nil {
				return nil, errorf(path, "must be a list")
			}
			// One bracket-form value is a list of one, as the original casts it.
			list = []any{v}
		}
		out := make(bson.A, len(list))
		for i, e := range list {
			p := path + "[" + strconv.Itoa(i) + "]"
			if eo, isObj := e.(object); isObj && op == "$all" {
				if em, ok := eo.get("$elemMatch"); ok && len(eo) == 1 {
					val, err := c.operator(p+".$elemMatch", "$elemMatch", em, field, eo, depth+1)
					if err != nil {
						return nil, err
					}
					out[i] = bson.D{{Key: "$elemMatch", Value: val}}
					continue
				}
			}
			val, err := c.cast(p, e, field)
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	case "$exists":
		return toBool(path, v)
	case "$type":
		return typeSpec(path, v)
	case "$regex":
		s, ok := v.(string)
		if !ok {
			return nil, errorf(path, "must be a regular expression string")
		}
		if err := checkRegex(path, s); err != nil {
			return nil, err
		}
		return s, nil
	case "$options":
		s, ok := v.(string)
		if !ok || strings.Trim(s, "imsxu") != "" {
			return nil, errorf(path, "must be regular expression options from i, m, s, x and u")
		}
		if _, ok := siblings.get("$regex"); !ok {
			return nil, errorf(path, "needs $regex beside it")
		}
		return s, nil
	case "$not":
		o, ok := v.(object)
		if !ok {
			return nil, errorf(path, "must be an object of operators")
		}
		for _, m := range o {
			if !strings.HasPrefix(m.key, "$") {
				if _, old := legacy[m.key]; old {
					return nil, legacyError(path+"."+m.key, m.key)
				}
				return nil, errorf(path, "must be an object of operators")
			}
		}
		return c.condition(path, v, field, depth+1)
	case "$elemMatch":
		o, ok := v.(object)
		if !ok {
			return nil, errorf(path, "must be an object")
		}
		conditions := len(o) > 0
		for _, m := range o {
			if !strings.HasPrefix(m.key, "$") || m.key == "$and" || m.key == "$or" || m.key == "$nor" || m.key == "$text" || m.key == "$comment" {
				conditions = false
			}
		}
		if conditions {
			return c.condition(path, v, field, depth+1)
		}
		return c.queryDoc(path, v, field+".", depth+1)
	case "$size":
		n, err := toInt(path, v)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, errorf(path, "must be a non-negative integer")
		}
		return n, nil
	case "$mod":
		list, ok := v.([]any)
		if !ok || len(list) != 2 {
			return nil, errorf(path, "must be a list [divisor, remainder]")
		}
		out := make(bson.A, 2)
		for i, e := range list {
			n, err := toNumber(path+"["+strconv.Itoa(i)+"]", e)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case "$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear":
		if list, ok := v.([]any); ok {
			out := make(bson.A, len(list))
			for i, e := range list {
				n, err := toInt(path+"["+strconv.Itoa(i)+"]", e)
				if err != nil {
					return nil, err
				}
				out[i] = n
			}
			return out, nil
		}
		return toInt(path, v)
	case "$near", "$nearSphere", "$geoWithin", "$geoIntersects":
		return geoValue(path, v, 0)
	case "$maxDistance", "$minDistance":
		return toNumber(path, v)
	}
	return nil, unknownOpError(path, op)
}

// cast converts a value compared with field, by the field's type.
func (c whereConv) cast(path string, v any, field string) (any, error) {
	t := c.schema.typeOf(field)
	if v == nil {
		return nil, nil
	}
	switch t {
	case Mixed, String:
		return literal(path, v, 0)
	case DateTime:
		s, ok := v.(string)
		if !ok {
			return nil, errorf(path, "must be %s", t)
		}
		// The original's documentation shows bracket-form dates in quotes
		// (filter[where][created][$gte]="…"); take them without.
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			s = s[1 : len(s)-1]
		}
		tm, err := ParseDateTime(path, s)
		if err != nil {
			return nil, err
		}
		return bson.NewDateTimeFromTime(tm), nil
	case ObjectID:
		s, ok := v.(string)
		if !ok || len(s) != 24 {
			return nil, errorf(path, "must be %s", t)
		}
		var id bson.ObjectID
		if _, err := hex.Decode(id[:], []byte(s)); err != nil {
			return nil, errorf(path, "must be %s", t)
		}
		return id, nil
	case Number:
		return toNumber(path, v)
	case Bool:
		return toBool(path, v)
	}
	return literal(path, v, 0)
}

// literal converts a value to match as is: objects become documents,
// lists arrays, JSON numbers int64 or float64. $-keys are refused inside
// literals: they would be read as operators by some servers and are never
// a legitimate field name.
func literal(path string, v any, depth int) (any, error) {
	return walkValue(path, v, depth, nil, false)
}

// geoValue converts the value of a geospatial operator: GeoJSON objects and
// coordinate lists, with only the geospatial $-keys. Bracket-form
// coordinates arrive as text, so numeric strings become numbers.
func geoValue(path string, v any, depth int) (any, error) {
	return walkValue(path, v, depth, geoKeys, true)
}

// walkValue converts a value to BSON, admitting only the $-keys in allowed
// and, when numericText is set, reading numeric strings as numbers.
func walkValue(path string, v any, depth int, allowed map[string]bool, numericText bool) (any, error) {
	if depth > maxDepth {
		return nil, errorf(path, "is nested more than %d levels deep", maxDepth)
	}
	switch t := v.(type) {
	case object:
		d := make(bson.D, 0, len(t))
		for _, m := range t {
			p := path + "." + m.key
			if strings.HasPrefix(m.key, "$") && !allowed[m.key] {
				return nil, unknownOpError(p, m.key)
			}
			if strings.IndexByte(m.key, 0) >= 0 {
				return nil, errorf(p, "a field name may not contain a NUL character")
			}
			val, err := walkValue(p, m.val, depth+1, allowed, numericText)
			if err != nil {
				return nil, err
			}
			d = append(d, bson.E{Key: m.key, Value: val})
		}
		return d, nil
	case []any:
		out := make(bson.A, len(t))
		for i, e := range t {
			val, err := walkValue(path+"["+strconv.Itoa(i)+"]", e, depth+1, allowed, numericText)
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	case json.Number:
		return number(path, t)
	case string:
		if numericText {
			if f, err := strconv.ParseFloat(t, 64); err == nil {
				return f, nil
			}
		}
		return t, nil
	}
	return v, nil
}

// Bounds of a $regex. The embedded store compiles the expression for
// every document it tests, so one of a hundred kilobytes of counted
// repetitions ([a-z]{1,100} eight thousand times) cost it seconds per
// document; a MongoDB server's PCRE has its own limits, and the length
// bound applies there too.
const (
	maxRegexBytes = 1024
	maxRegexInsts = 10_000
)

// checkRegex refuses a pattern longer than maxRegexBytes, or one that
// compiles to more than maxRegexInsts instructions. A pattern Go's syntax
// does not read (PCRE's lookarounds, say) is left to the database.
func checkRegex(path, pattern string) error {
	if len(pattern) > maxRegexBytes {
		return errorf(path, "is longer than %d bytes", maxRegexBytes)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil || len(prog.Inst) > maxRegexInsts {
		return errorf(path, "is too complex: its repetitions expand to more than %d steps", maxRegexInsts)
	}
	return nil
}

func typeSpec(path string, v any) (any, error) {
	switch t := v.(type) {
	case string:
		if n, err := strconv.Atoi(t); err == nil {
			return int32(n), nil
		}
		return t, nil
	case json.Number:
		n, err := toInt(path, t)
		return int32(n), err
	case []any:
		out := make(bson.A, len(t))
		for i, e := range t {
			if _, isList := e.([]any); isList {
				return nil, errorf(path, "must be a type name, a type number or a list of them")
			}
			val, err := typeSpec(path, e)
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	}
	return nil, errorf(path, "must be a type name, a type number or a list of them")
}

// number turns a JSON number into int64 when it is a whole number that fits,
// else float64.
func number(path string, n json.Number) (any, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, errorf(path, "is not a usable number")
	}
	return f, nil
}

func toNumber(path string, v any) (any, error) {
	switch t := v.(type) {
	case json.Number:
		return number(path, t)
	case string:
		return number(path, json.Number(strings.TrimSpace(t)))
	}
	return nil, errorf(path, "must be a number")
}

func toInt(path string, v any) (int64, error) {
	var s string
	switch t := v.(type) {
	case json.Number:
		s = string(t)
	case string:
		s = strings.TrimSpace(t)
	default:
		return 0, errorf(path, "must be an integer")
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, nil
	}
	// 10.0 and 1e2 are integers written otherwise.
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, errorf(path, "must be an integer")
	}
	return int64(f), nil
}

func toBool(path string, v any) (bool, error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case string:
		switch t {
		case "true", "1":
			return true, nil
		case "false", "0":
			return false, nil
		}
	case json.Number:
		switch t {
		case "1":
			return true, nil
		case "0":
			return false, nil
		}
	}
	return false, errorf(path, "must be true or false")
}
