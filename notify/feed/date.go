package feed

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// zones are the time zone names RFC 822 dates may carry, which
// JavaScript's Date (and so the original) understands.
var zones = map[string]int{
	"UT": 0, "UTC": 0, "GMT": 0, "Z": 0,
	"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
}

var months = map[string]time.Month{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
}

// rfc822 is an RSS date: optional weekday, day, month name, year, time
// with optional seconds, zone as a name or ±hhmm.
var rfc822 = regexp.MustCompile(`^(?:[A-Za-z]+,?\s+)?(\d{1,2})\s+([A-Za-z]+)\.?\s+(\d{2,4})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([A-Za-z]+|[+-]\d{2}:?\d{2})?$`)

// ParseDate reads a feed date: RFC 822 as RSS writes it (the US zone
// names included) or ISO 8601 as Atom writes it. The result is UTC,
// truncated to milliseconds as MongoDB keeps it.
func ParseDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Truncate(time.Millisecond), true
		}
	}
	m := rfc822.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, false
	}
	day, _ := strconv.Atoi(m[1])
	mon, ok := months[strings.ToLower(m[2][:min(3, len(m[2]))])]
	if !ok {
		return time.Time{}, false
	}
	year, _ := strconv.Atoi(m[3])
	if len(m[3]) == 2 {
		year += 1900
		if year < 1950 {
			year += 100
		}
	}
	hour, _ := strconv.Atoi(m[4])
	minute, _ := strconv.Atoi(m[5])
	sec := 0
	if m[6] != "" {
		sec, _ = strconv.Atoi(m[6])
	}
	offset := 0
	switch z := m[7]; {
	case z == "":
	case z[0] == '+' || z[0] == '-':
		digits := strings.ReplaceAll(z[1:], ":", "")
		h, _ := strconv.Atoi(digits[:2])
		mm, _ := strconv.Atoi(digits[2:])
		offset = h*3600 + mm*60
		if z[0] == '-' {
			offset = -offset
		}
	default:
		h, ok := zones[strings.ToUpper(z)]
		if !ok {
			return time.Time{}, false
		}
		offset = h * 3600
	}
	if day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, false
	}
	t := time.Date(year, mon, day, hour, minute, sec, 0, time.FixedZone("", offset))
	if t.Day() != day {
		return time.Time{}, false // 31 April and the like
	}
	return t.UTC(), true
}
