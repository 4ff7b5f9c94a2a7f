package query_test

import (
	"testing"
	"time"

	"github.com/govkit/govkit/notify/query"
)

func TestParseDateTime(t *testing.T) {
	ok := []struct {
		name, in string
		want     time.Time
	}{
		{"seconds and Z", "2026-01-02T03:04:05Z", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"milliseconds", "2026-01-02T03:04:05.123Z", time.Date(2026, 1, 2, 3, 4, 5, 123_000_000, time.UTC)},
		{"one fraction digit", "2026-01-02T03:04:05.1Z", time.Date(2026, 1, 2, 3, 4, 5, 100_000_000, time.UTC)},
		{"nine fraction digits", "2026-01-02T03:04:05.123456789Z", time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)},
	}
	for _, tc := range ok {
		t.Run(tc.name+" is accepted", func(t *testing.T) {
			got, err := query.ParseDateTime("validTill", tc.in)
			if err != nil || !got.Equal(tc.want) {
				t.Fatalf("ParseDateTime(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
	bad := []struct{ name, in string }{
		{"a date-only value", "2026-01-02"},
		{"an offset instead of Z", "2026-01-02T03:04:05+00:00"},
		{"a negative offset", "2026-01-02T03:04:05.000-07:00"},
		{"no zone", "2026-01-02T03:04:05"},
		{"a one-digit hour", "2026-01-02T3:04:05Z"},
		{"no seconds", "2026-01-02T03:04Z"},
		{"ten fraction digits", "2026-01-02T03:04:05.1234567890Z"},
		{"a dot without digits", "2026-01-02T03:04:05.Z"},
		{"a space instead of T", "2026-01-02 03:04:05Z"},
		{"a lower-case z", "2026-01-02T03:04:05z"},
		{"an impossible date", "2026-02-30T03:04:05Z"},
		{"an impossible hour", "2026-01-02T24:04:05Z"},
		{"an empty value", ""},
	}
	for _, tc := range bad {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			_, err := query.ParseDateTime("validTill", tc.in)
			wantBadRequest(t, err, "validTill")
		})
	}
}

func TestParseDateTimeValue(t *testing.T) {
	if _, err := query.ParseDateTimeValue("invalidBefore", "2026-01-02T03:04:05Z"); err != nil {
		t.Fatalf("string value: %v", err)
	}
	_, err := query.ParseDateTimeValue("invalidBefore", 1767322800000.0)
	wantBadRequest(t, err, "invalidBefore", "date-time string")
}

func TestFormatDateTime(t *testing.T) {
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"whole seconds get three zero digits", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000Z"},
		{"nanoseconds are cut to milliseconds", time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), "2026-01-02T03:04:05.123Z"},
		{"other zones are written in UTC", time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("PST", -8*3600)), "2026-01-02T11:04:05.000Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := query.FormatDateTime(tc.in); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
