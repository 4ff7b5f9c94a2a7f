// Package event is the Event data type: the raw, factual start — and
// optionally the end — of one occurrence, written either with calendar
// dates or with UTC datetimes, never with a mix of the two. What the
// occurrence is depends on the resource that embeds the Event.
//
// # Forms
//
// An Event is a JSON object in one of four shapes:
//
//	{"start_date": "2024-12-01"}
//	{"start_date": "2024-12-01", "end_date": "2024-12-31"}
//	{"start_datetime": "2024-12-01T10:00:00Z"}
//	{"start_datetime": "2024-12-01T9:05:00.1Z", "end_datetime": "2024-12-01T17:00:00.0000000Z"}
//
// A date is YYYY-MM-DD: ten ASCII characters, a four-digit year 0000-9999,
// month 01-12 and a day that exists in that month and year (2024-02-29 is a
// date, 2023-02-29 and 2024-04-31 are not; 1900 is not a leap year, 2000 is).
//
// A datetime is a date, an uppercase T, the hour 0-23 with one or two
// digits, ":", the minute 00-59, ":", the second 00-59 (no leap second),
// optionally "." and 1 to 7 digits, and an uppercase Z. Only UTC: no
// offsets (not even +00:00), no lowercase t or z, no comma before the
// fraction, no spaces or newlines, ASCII digits only.
//
// # Validity rules
//
// A record is a valid Event when all of these hold. A [Problem] names the
// rule it breaks by this number ([Rule]):
//
//  1. exactly one of start_date, start_datetime;
//  2. date form: start_date, optional end_date, no datetime property;
//  3. datetime form: start_datetime, optional end_datetime, no date property;
//  4. no mixing of forms (end_date with start_datetime, and so on);
//  5. every value is a string of its property's format;
//  6. no other properties: a typo such as end_datetme would otherwise
//     silently drop the end;
//  7. no key twice in one object: JSON parsers disagree on which copy wins;
//  8. null is not a string: a property set to null is invalid, not absent.
//
// Rules 6 to 8 are stricter than the nr-pies schema the Event comes from,
// on purpose: each closes a way for a record to mean different things to
// different readers. JSON escapes are JSON, though: "...00\u005a" is the
// string ending in Z, and "start_\u0064ate" is the key start_date.
//
// An end before its start is a valid Event; ordering is a separate check,
// [Event.CheckOrder], which compares instants and calendar dates (never
// strings: "T9:00:00Z" sorts after "T10:00:00Z" as text).
//
// # Decoding and validating
//
// [Validate] checks the JSON bytes of one record and returns nil or a
// [Problems] listing every broken rule at once, each naming its property
// and rule; every Problem wraps a sentinel error (ErrFormat, ErrNull,
// ErrDuplicate, ...) for errors.Is. Validate allocates nothing for a valid
// record: it is a hand-written scanner over the bytes, not encoding/json.
// [Parse] does the same and returns the [Event]. Text that is not a JSON
// object gets a single problem under [RuleJSON] instead (in broken JSON,
// what looks like a property may not be one); values of unknown keys are
// still checked to be JSON, nested at most 512 deep.
//
// An Event keeps each value exactly as written, so decoding and encoding
// round-trip byte for byte ("T9:05:00.1Z" stays "T9:05:00.1Z"), and its
// parsed meaning: [Point.Date] for a date, [Point.Time] (UTC) for a
// datetime. [Event.MarshalJSON] writes start first; [Event.UnmarshalJSON]
// applies every rule, so a struct field of type Event decoded with
// encoding/json rejects invalid Events too. The constructors [NewDate],
// [NewDateRange], [NewDateTime] and [NewDateTimeRange] only build valid
// Events: times are converted to UTC and truncated to 100 ns, the finest
// precision seven fraction digits can write.
//
// The JSON Schema of the type, for other languages, is [JSONSchema] (the
// file event.schema.json). It agrees with Validate on every record except
// duplicated keys, which a schema cannot see.
//
// # Meaning and usage
//
// A start without an end is the moment (or day) of the start, taken at
// face value; there is no "ongoing" Event, and the package never invents
// an end. A start with an end is a finite duration.
//
// Reporting uses the date form. Logging and auditing use the datetime form
// when the time is known; so does an unknown purpose. [FormFor] and
// [Event.ForPurpose] apply these rules.
//
// # Converting datetimes to dates
//
// Converting is lossy and discouraged. Where it must happen,
// [Event.ToDateForm] takes the converting system's time zone and returns
// the calendar date the instant falls on there — never the truncated UTC
// date: 2024-12-01T07:59:59Z is 2024-11-30 in America/Vancouver. The zone is
// an argument, not time.Local, because servers and containers often run in
// UTC, where the local zone would quietly turn the conversion into
// truncation. The package imports time/tzdata so that time.LoadLocation
// works in minimal containers without a zone database. Dates are never
// converted to datetimes: that would invent a time.
//
// The govkit command wraps the package: "govkit event validate" checks
// files of Events (one object, a JSON array or NDJSON) and "govkit event
// to-date" converts them; see package eventcli.
package event
