package notify

import (
	"errors"
	"regexp"
	"time"
)

// TimeLayout is how the original writes dates: UTC, three fraction digits.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// ErrTimeFormat is returned for a date-time that is not ISO 8601 extended
// with a time and "Z", such as a date-only value or one with an offset.
var ErrTimeFormat = errors.New("must be an ISO 8601 date-time in UTC, e.g. 2026-01-02T03:04:05.000Z")

var timeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$`)

// ParseTime reads a date-time as the API accepts it:
// YYYY-MM-DDTHH:mm:ss[.f{1,9}]Z. The result is UTC, truncated to
// milliseconds as MongoDB stores it.
func ParseTime(s string) (time.Time, error) {
	if !timeRE.MatchString(s) {
		return time.Time{}, ErrTimeFormat
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, ErrTimeFormat
	}
	return t.UTC().Truncate(time.Millisecond), nil
}

// FormatTime writes t as the original does: 2026-01-02T03:04:05.000Z.
func FormatTime(t time.Time) string {
	return t.UTC().Format(TimeLayout)
}

// Now returns the current time in UTC, truncated to milliseconds so that a
// record compares equal before and after a round trip through the database.
func Now() time.Time {
	return time.Now().UTC().Truncate(time.Millisecond)
}
