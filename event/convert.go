package event

import (
	"errors"
	"strconv"
	"time"

	// Embedded so that loading America/Vancouver works in a container
	// without a zone database; see the package documentation.
	_ "time/tzdata"
)

func itoa(i int) string { return strconv.Itoa(i) }

// CheckOrder reports an end before its start as a [Problem] wrapping
// [ErrOrder]. It is not a validity rule: such an Event is valid and Parse
// accepts it. Points are compared as instants or calendar dates, never as
// strings ("T9:00:00Z" is before "T10:00:00Z"). An event with no end, or
// whose end equals its start, is in order.
func (e Event) CheckOrder() error {
	end, ok := e.End()
	if !ok {
		return nil
	}
	var before bool
	var prop string
	switch e.Form() {
	case FormDate:
		before, prop = end.date.Compare(e.start.date) < 0, "end_date"
	case FormDateTime:
		before, prop = end.time.Before(e.start.time), "end_datetime"
	default:
		return nil
	}
	if before {
		return Problem{prop, RuleOrder, ErrOrder, end.text + " is before the start " + e.start.text}
	}
	return nil
}

// ToDateForm returns the date-form equivalent of e. A date-form event is
// returned unchanged. A datetime is converted to the calendar date it falls
// on in loc — the converting system's local zone — never to its UTC date:
// 2024-12-01T07:59:59Z is 2024-11-30 in America/Vancouver. The conversion
// loses the time of day and is discouraged; there is no conversion the
// other way, as it would invent a time.
//
// loc must not be nil. The conversion fails, with a Problem wrapping
// [ErrOutOfRange], only when the local date falls outside the years
// 0000-9999 (e.g. 0000-01-01T00:00:00Z west of Greenwich).
func (e Event) ToDateForm(loc *time.Location) (Event, error) {
	switch e.Form() {
	case FormDate:
		return e, nil
	case FormNone:
		return Event{}, ErrZero
	}
	if loc == nil {
		return Event{}, errors.New("event: ToDateForm needs a time zone, got nil")
	}
	start, err := localDatePoint("start_datetime", e.start, loc)
	if err != nil {
		return Event{}, err
	}
	out := Event{start: start}
	if e.end.form != FormNone {
		if out.end, err = localDatePoint("end_datetime", e.end, loc); err != nil {
			return Event{}, err
		}
	}
	return out, nil
}

func localDatePoint(prop string, p Point, loc *time.Location) (Point, error) {
	d := DateOf(p.time.In(loc))
	if d.Year < 0 || d.Year > 9999 {
		return Point{}, Problem{prop, RuleConvert, ErrOutOfRange, p.text + " falls on a day of year " + itoa(d.Year) + " in " + loc.String() + ", which a date cannot write"}
	}
	return datePoint(prop, d)
}

// Purpose is what an Event is recorded for; it decides the form to use
// (the usage rules in the package documentation).
type Purpose uint8

const (
	PurposeUnknown   Purpose = iota // use datetime if a time is known
	PurposeReporting                // always the date form
	PurposeLogging                  // datetime if a time is known
	PurposeAuditing                 // datetime if a time is known
)

// FormFor returns the form an Event recorded for purpose should take:
// reporting uses dates; logging, auditing and an unknown purpose use
// datetimes when the time of day is known, dates otherwise.
func FormFor(purpose Purpose, timeKnown bool) Form {
	if purpose == PurposeReporting || !timeKnown {
		return FormDate
	}
	return FormDateTime
}

// ForPurpose returns e in the form purpose calls for. Only a datetime
// event wanted for reporting changes: it becomes its date in loc, as
// [Event.ToDateForm] converts it. A date-form event stays as it is for
// every purpose, because its time was never known and is not invented.
func (e Event) ForPurpose(purpose Purpose, loc *time.Location) (Event, error) {
	if e.Form() == FormDateTime && FormFor(purpose, true) == FormDate {
		return e.ToDateForm(loc)
	}
	return e, nil
}
