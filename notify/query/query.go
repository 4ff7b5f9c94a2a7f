// Package query implements the query-string rules of the notification
// service's HTTP API, as the HTTP handlers need them:
//
//   - ParseFilter reads the filter parameter, given as JSON
//     (filter={"where":…,"order":…}) or in bracket form
//     (filter[where][serviceName]=x&filter[limit]=10), into a Filter whose
//     Where, Fields and Order are MongoDB documents ready for the driver;
//     ParseWhere does the same for the where parameter of count and bulk
//     update endpoints.
//   - Strings reads an array parameter (additionalServices, …) in the
//     repeated form.
//   - ParseDateTime and FormatDateTime are the date-time rule of every
//     date-time field.
//
// Every refusal is an *Error: status 400 with a message that names the
// parameter or field and the rule, for the body
// {"statusCode":400,"message":…,"error":"Bad Request"}.
//
// # The rules (the seed's, then ours where it is silent)
//
// where uses MongoDB's $-prefixed query operators. The operators of older
// versions (eq, and, or, gt, gte, lt, lte, between, inq, nin, near, neq, like,
// nlike, regexp) are refused with a message naming the replacement. They are
// looked for only where an operator can stand: as a key of a field's
// condition object ({"state":{"neq":"x"}}), and as and/or holding an array
// at the top of where or inside a logical clause; elsewhere "and" and
// "like" are ordinary field names.
//
// Only query operators on an allow-list are accepted: comparison ($eq, $ne,
// $gt, $gte, $lt, $lte, $in, $nin), logical ($and, $or, $nor, $not), element
// ($exists, $type), evaluation ($regex with $options, $mod, $text), array
// ($all, $elemMatch, $size), bitwise ($bitsAllSet, …), geospatial ($near,
// $nearSphere, $geoWithin, $geoIntersects and their shape keys) and
// $comment. Operators that run code or read other collections ($where,
// $function, $accumulator, $expr, $lookup, …) and $jsonSchema are refused,
// as is any other $-key, also inside literal values.
//
// The field id is the record's _id. Values are cast by the collection's
// Schema as the original's models do: ObjectId fields from 24-hex strings,
// date-time fields from strings in the date-time format below (so they
// compare as dates), numbers and booleans from their text in the bracket
// form. A value that cannot be cast is a 400 naming the field.
//
// order is [["field","asc"|"desc"],…] (1/-1 and ascending/descending work
// too), a field name ("serviceName", "-created" for descending, several
// separated by spaces), or an object {"field": "asc"}. The legacy
// "field ASC" form, as a string or inside a list, is refused with the
// replacement. fields is a projection: {"a":true,"b":1}, ["a","b"] or
// "a b" (or all exclusions, "-c"); mixing inclusion and exclusion other than
// of id is refused. skip (alias offset) and limit are non-negative integers;
// limit 0 means no limit.
//
// A Schema made with Hiding is for a caller from whom responses hide some
// fields: where, order and fields that reach a hidden path (the path, a
// part below it, array positions included, or a parent document) are
// refused, as are $text and sorting by text score, which read every field.
// Field names may not have empty parts ("a..b", ".a"). An object holds at
// most 1000 keys and a list 1000 items, a $regex is at most 1024 bytes and
// compiles to at most 10,000 instructions, and order names at most 32
// fields (MongoDB's own limit): the embedded store evaluates the query
// against every document it scans, compiling a $regex each time.
//
// Malformed JSON is a 400 (the original answers 500). Unknown filter keys,
// and include, are refused: include would let a caller pull related records
// such as password hashes (the original's populate). Values are never split
// on commas. In the bracket form, object keys are taken in name order
// (url.Values keeps no order), so a sort on several fields should use the
// list form, filter[order][0][0]=a&filter[order][0][1]=desc.
package query

import (
	"fmt"
	"net/http"
)

// Error is a refused query parameter or field value: always 400.
type Error struct {
	// Param is the parameter or field, as a path such as
	// "filter.where.state" or "additionalServices".
	Param string
	// Message names Param and the rule; it is safe to show the caller.
	Message string
}

func (e *Error) Error() string { return e.Message }

// StatusCode is the HTTP status the API answers with: 400.
func (e *Error) StatusCode() int { return http.StatusBadRequest }

func errorf(param, format string, args ...any) *Error {
	return &Error{Param: param, Message: param + ": " + fmt.Sprintf(format, args...)}
}
