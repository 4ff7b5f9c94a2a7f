package query

import (
	"time"
)

// DateTimeExample is the format date-time fields accept, as shown in
// messages.
const DateTimeExample = "2026-01-02T03:04:05.000Z"

// ParseDateTime reads a date-time field: ISO 8601 extended format with date,
// time and Z, YYYY-MM-DDTHH:mm:ss with an optional fraction of 1 to 9
// digits. A date-only value, an offset other than Z, a one-digit hour or an
// impossible date is an *Error naming field.
func ParseDateTime(field, s string) (time.Time, error) {
	if !dateTimeShape(s) {
		return time.Time{}, errorf(field, "must be an ISO 8601 date-time in UTC with time and Z, like %s; got %q", DateTimeExample, s)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, errorf(field, "is not a real date-time: %q", s)
	}
	return t, nil
}

// ParseDateTimeValue is ParseDateTime for a value decoded from a JSON body,
// which must be a string.
func ParseDateTimeValue(field string, v any) (time.Time, error) {
	s, ok := v.(string)
	if !ok {
		return time.Time{}, errorf(field, "must be a date-time string like %s", DateTimeExample)
	}
	return ParseDateTime(field, s)
}

// FormatDateTime writes t as the original writes dates: UTC with exactly
// three fraction digits.
func FormatDateTime(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// dateTimeShape checks YYYY-MM-DDTHH:mm:ss[.f{1,9}]Z without a regexp.
func dateTimeShape(s string) bool {
	const fixed = len("2006-01-02T15:04:05")
	if len(s) < fixed+1 || s[len(s)-1] != 'Z' {
		return false
	}
	for i := 0; i < fixed; i++ {
		c := s[i]
		switch i {
		case 4, 7:
			if c != '-' {
				return false
			}
		case 10:
			if c != 'T' {
				return false
			}
		case 13, 16:
			if c != ':' {
				return false
			}
		default:
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	frac := s[fixed : len(s)-1]
	if frac == "" {
		return true
	}
	if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
		return false
	}
	for i := 1; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return false
		}
	}
	return true
}
