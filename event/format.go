package event

import "time"

// A Date is a calendar date without a time or a zone, as start_date and
// end_date carry it.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateOf returns the calendar date of t in t's own location. To get the
// date in another zone, pass t.In(zone).
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{y, m, d}
}

// IsValid reports whether d is a real day of a year 0000 to 9999 (the
// range a four-digit year can write).
func (d Date) IsValid() bool {
	return d.Year >= 0 && d.Year <= 9999 && d.Month >= 1 && d.Month <= 12 &&
		d.Day >= 1 && d.Day <= daysIn(d.Month, d.Year)
}

// String returns the date as YYYY-MM-DD. For an invalid date the result is
// not a valid start_date.
func (d Date) String() string {
	var b [10]byte
	return string(appendDate(b[:0], d))
}

// Compare returns -1, 0 or +1 as d is before, equal to or after o.
func (d Date) Compare(o Date) int {
	switch {
	case d.Year != o.Year:
		return cmp(d.Year, o.Year)
	case d.Month != o.Month:
		return cmp(int(d.Month), int(o.Month))
	}
	return cmp(d.Day, o.Day)
}

func cmp(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func isLeap(year int) bool {
	return year%4 == 0 && (year%100 != 0 || year%400 == 0)
}

func daysIn(m time.Month, year int) int {
	switch m {
	case time.February:
		if isLeap(year) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// digits returns the value of the ASCII decimal digits b[i:j], or -1 if one
// of them is not an ASCII digit. Only ASCII counts: a Unicode digit such as
// U+0664 is a format error, not a number.
func digits(b []byte, i, j int) int {
	n := 0
	for ; i < j; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// Why a value is not of its format, in words. They are constants so that
// detecting a problem never allocates; only reporting it does.
const (
	whyDateShape     = "must be YYYY-MM-DD (ten ASCII characters, leading zeroes)"
	whyMonth         = "month must be 01-12"
	whyDay           = "not a real day of that month and year"
	whyDateTimeShape = "must be YYYY-MM-DDTHH:MM:SS[.F]Z in UTC (uppercase T and Z, hour of one or two digits, 1-7 fraction digits)"
	whyHour          = "hour must be 0-23"
	whyMinute        = "minute must be 00-59"
	whySecond        = "second must be 00-59 (no leap second)"
	whyFraction      = "fraction must be a '.' and 1 to 7 ASCII digits"
	whyZone          = "must end in an uppercase Z: only UTC, no offset"
)

// parseDate checks a start_date/end_date value. It returns the reason as a
// constant when the value is not a valid date.
func parseDate(b []byte) (Date, string) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return Date{}, whyDateShape
	}
	y, m, d := digits(b, 0, 4), digits(b, 5, 7), digits(b, 8, 10)
	if y < 0 || m < 0 || d < 0 {
		return Date{}, whyDateShape
	}
	if m < 1 || m > 12 {
		return Date{}, whyMonth
	}
	if d < 1 || d > daysIn(time.Month(m), y) {
		return Date{}, whyDay
	}
	return Date{y, time.Month(m), d}, ""
}

// parseDateTime checks a start_datetime/end_datetime value and returns it
// as a UTC instant.
func parseDateTime(b []byte) (time.Time, string) {
	dt, why := checkDateTime(b)
	if why != "" {
		return time.Time{}, why
	}
	return time.Date(dt.Year, dt.Month, dt.Day, dt.hour, dt.min, dt.sec, dt.nsec, time.UTC), ""
}

// dateTime is a checked datetime value in pieces. Validation stops here:
// building a time.Time costs more than the whole check, and only Parse
// needs one.
type dateTime struct {
	Date
	hour, min, sec, nsec int
}

// checkDateTime checks a start_datetime/end_datetime value.
func checkDateTime(b []byte) (dateTime, string) {
	// Shortest: YYYY-MM-DDTH:MM:SSZ (19); longest: two-digit hour and
	// seven fraction digits (28).
	if len(b) < 19 || len(b) > 28 || b[10] != 'T' {
		return dateTime{}, whyDateTimeShape
	}
	d, why := parseDate(b[:10])
	if why != "" {
		return dateTime{}, why
	}
	i := 11
	var hour int
	switch {
	case b[12] == ':':
		hour = digits(b, 11, 12)
		i = 12
	case b[13] == ':':
		hour = digits(b, 11, 13)
		i = 13
	default:
		return dateTime{}, whyDateTimeShape
	}
	if hour < 0 {
		return dateTime{}, whyDateTimeShape
	}
	if hour > 23 {
		return dateTime{}, whyHour
	}
	// i is at the ':' before the minute: ":MM:SS" then the rest.
	if len(b) < i+7 || b[i+3] != ':' {
		return dateTime{}, whyDateTimeShape
	}
	min, sec := digits(b, i+1, i+3), digits(b, i+4, i+6)
	if min < 0 || sec < 0 {
		return dateTime{}, whyDateTimeShape
	}
	if min > 59 {
		return dateTime{}, whyMinute
	}
	if sec > 59 {
		return dateTime{}, whySecond
	}
	i += 6
	nsec := 0
	if b[i] == ',' {
		return dateTime{}, whyFraction
	}
	if b[i] == '.' {
		j := i + 1
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		n := j - i - 1
		if n < 1 || n > 7 {
			return dateTime{}, whyFraction
		}
		nsec = digits(b, i+1, j)
		for k := n; k < 9; k++ {
			nsec *= 10
		}
		i = j
	}
	if i != len(b)-1 || b[i] != 'Z' {
		return dateTime{}, whyZone
	}
	return dateTime{d, hour, min, sec, nsec}, ""
}

func appendDigits(dst []byte, v, width int) []byte {
	var b [9]byte
	for i := width - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, b[:width]...)
}

func appendDate(dst []byte, d Date) []byte {
	dst = appendDigits(dst, d.Year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, int(d.Month), 2)
	dst = append(dst, '-')
	return appendDigits(dst, d.Day, 2)
}

// appendDateTime writes t (already UTC, truncated to 100 ns, year
// 0000-9999) with a two-digit hour and the shortest fraction that keeps
// every non-zero digit.
func appendDateTime(dst []byte, t time.Time) []byte {
	dst = appendDate(dst, DateOf(t))
	dst = append(dst, 'T')
	dst = appendDigits(dst, t.Hour(), 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, t.Minute(), 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, t.Second(), 2)
	if f := t.Nanosecond() / 100; f != 0 {
		n := 7
		for f%10 == 0 {
			f /= 10
			n--
		}
		dst = append(dst, '.')
		dst = appendDigits(dst, f, n)
	}
	return append(dst, 'Z')
}
