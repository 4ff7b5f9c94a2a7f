package event

import (
	"errors"
	"time"
)

// Form is which kind of values an Event holds.
type Form uint8

const (
	// FormNone is the form of the zero Event, which is not a valid Event.
	FormNone Form = iota
	// FormDate: start_date and an optional end_date.
	FormDate
	// FormDateTime: start_datetime and an optional end_datetime.
	FormDateTime
)

// String returns "date", "datetime" or "none".
func (f Form) String() string {
	switch f {
	case FormDate:
		return "date"
	case FormDateTime:
		return "datetime"
	}
	return "none"
}

// A Point is the start or the end of an Event: the value exactly as it was
// written and what it means.
type Point struct {
	text string    // the value as written (after JSON unescaping)
	date Date      // FormDate
	time time.Time // FormDateTime, in UTC
	form Form
}

// String returns the value exactly as it was written, e.g. "2024-12-01" or
// "2024-12-01T9:05:00.1Z".
func (p Point) String() string { return p.text }

// Form returns FormDate or FormDateTime (FormNone for a missing end).
func (p Point) Form() Form { return p.form }

// Date returns the calendar date of a date-form point. For a datetime
// point it returns false: its calendar date depends on a time zone, see
// [Event.ToDateForm].
func (p Point) Date() (Date, bool) { return p.date, p.form == FormDate }

// Time returns the instant of a datetime-form point, in UTC. For a date
// point it returns false: a date is not an instant.
func (p Point) Time() (time.Time, bool) { return p.time, p.form == FormDateTime }

// An Event is a valid Event value: one start and at most one end, both in
// the same form, each kept exactly as written. The zero Event is not valid
// (it has no start); get Events from [Parse], [Event.UnmarshalJSON] or the
// constructors. Events are comparable with [Event.Equal].
type Event struct {
	start, end Point
}

// Form returns the form of the event.
func (e Event) Form() Form { return e.start.form }

// IsZero reports whether e is the zero Event (for the omitzero tag).
func (e Event) IsZero() bool { return e.start.form == FormNone }

// Start returns the start of the event. For an event with no end, the start
// is the whole event: the moment (or day) it happened, nothing more.
func (e Event) Start() Point { return e.start }

// End returns the end of the event, if it has one. A missing end does not
// mean "ongoing": the package never invents an end.
func (e Event) End() (Point, bool) { return e.end, e.end.form != FormNone }

// Equal reports whether e and o hold the same values written the same way.
// "T9:00:00Z" and "T09:00:00Z" are the same instant but not Equal; compare
// the instants from [Point.Time] for that.
func (e Event) Equal(o Event) bool {
	return e.start.form == o.start.form && e.start.text == o.start.text &&
		e.end.form == o.end.form && e.end.text == o.end.text
}

// Validate checks the JSON text of one Event against rules 1 to 8 and
// returns nil or a [Problems] naming every broken rule. It does not
// allocate when data is valid, so it is the call for checking large
// numbers of records.
func Validate(data []byte) error {
	var d decoder
	d.decode(data)
	if len(d.problems) > 0 {
		return d.problems
	}
	return nil
}

// Parse decodes the JSON text of one Event, enforcing rules 1 to 8. On
// failure the error is a [Problems] listing every broken rule at once, and
// the Event is the zero Event.
func Parse(data []byte) (Event, error) {
	var d decoder
	d.decode(data)
	if len(d.problems) > 0 {
		return Event{}, d.problems
	}
	var e Event
	if d.slots[propStartDate].count > 0 {
		e.start = d.point(propStartDate)
		if d.slots[propEndDate].count > 0 {
			e.end = d.point(propEndDate)
		}
	} else {
		e.start = d.point(propStartDateTime)
		if d.slots[propEndDateTime].count > 0 {
			e.end = d.point(propEndDateTime)
		}
	}
	return e, nil
}

func (d *decoder) point(p int) Point {
	s := &d.slots[p]
	pt := Point{text: string(s.buf[:s.n])}
	// The value was checked during the scan; parsing it again here keeps
	// the scan free of time.Time, which only Parse needs.
	if p == propStartDate || p == propEndDate {
		pt.form = FormDate
		pt.date, _ = parseDate(s.buf[:s.n])
	} else {
		pt.form = FormDateTime
		pt.time, _ = parseDateTime(s.buf[:s.n])
	}
	return pt
}

// ErrZero is returned when marshalling the zero Event, which has no start
// and so is not a valid Event.
var ErrZero = errors.New("event: the zero Event has no start and cannot be written")

// AppendJSON appends the event as a JSON object, start first, each value
// byte-for-byte as it was read or built.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	var sk, ek string
	switch e.start.form {
	case FormDate:
		sk, ek = `{"start_date":"`, `","end_date":"`
	case FormDateTime:
		sk, ek = `{"start_datetime":"`, `","end_datetime":"`
	default:
		return dst, ErrZero
	}
	// Valid values are printable ASCII without '"' or '\', so they need no
	// escaping.
	dst = append(dst, sk...)
	dst = append(dst, e.start.text...)
	if e.end.form != FormNone {
		dst = append(dst, ek...)
		dst = append(dst, e.end.text...)
	}
	return append(dst, `"}`...), nil
}

// MarshalJSON writes the event as AppendJSON does. The zero Event is an
// error, so an invalid Event is never written; use the omitzero tag for an
// optional Event field.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 64))
}

// String returns the event's JSON text, or "{}" for the zero Event.
func (e Event) String() string {
	b, err := e.AppendJSON(nil)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// UnmarshalJSON decodes an Event with the same rules as [Parse], so a
// struct that embeds an Event and is decoded with encoding/json rejects an
// invalid Event. As encoding/json's convention asks, a JSON null leaves the
// Event unchanged; use a pointer field to tell null from absent.
func (e *Event) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	v, err := Parse(data)
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// NewDate returns the date-form Event {start_date}.
func NewDate(start Date) (Event, error) {
	p, err := datePoint("start_date", start)
	return Event{start: p}, err
}

// NewDateRange returns the date-form Event {start_date, end_date}. An end
// before the start is a valid Event (see [Event.CheckOrder]).
func NewDateRange(start, end Date) (Event, error) {
	s, err := datePoint("start_date", start)
	if err != nil {
		return Event{}, err
	}
	e, err := datePoint("end_date", end)
	if err != nil {
		return Event{}, err
	}
	return Event{start: s, end: e}, nil
}

// NewDateTime returns the datetime-form Event {start_datetime}. The time is
// converted to UTC and truncated to 100 ns, the finest precision the format
// has (7 fraction digits); the fraction is written with as few digits as
// keep its value, the hour with two digits.
func NewDateTime(start time.Time) (Event, error) {
	p, err := timePoint("start_datetime", start)
	return Event{start: p}, err
}

// NewDateTimeRange returns the datetime-form Event {start_datetime,
// end_datetime}, written as [NewDateTime] writes its start.
func NewDateTimeRange(start, end time.Time) (Event, error) {
	s, err := timePoint("start_datetime", start)
	if err != nil {
		return Event{}, err
	}
	e, err := timePoint("end_datetime", end)
	if err != nil {
		return Event{}, err
	}
	return Event{start: s, end: e}, nil
}

func datePoint(prop string, d Date) (Point, error) {
	if !d.IsValid() {
		if d.Year < 0 || d.Year > 9999 {
			return Point{}, Problem{prop, RuleConvert, ErrOutOfRange, "year " + itoa(d.Year) + " cannot be written with four digits"}
		}
		return Point{}, Problem{prop, RuleFormat, ErrFormat, "year " + itoa(d.Year) + ", month " + itoa(int(d.Month)) + ", day " + itoa(d.Day) + " is not a real day"}
	}
	var b [10]byte
	return Point{text: string(appendDate(b[:0], d)), date: d, form: FormDate}, nil
}

func timePoint(prop string, t time.Time) (Point, error) {
	t = t.UTC().Truncate(100 * time.Nanosecond)
	if y := t.Year(); y < 0 || y > 9999 {
		return Point{}, Problem{prop, RuleConvert, ErrOutOfRange, "year " + itoa(y) + " cannot be written with four digits"}
	}
	var b [28]byte
	return Point{text: string(appendDateTime(b[:0], t)), time: t, form: FormDateTime}, nil
}
