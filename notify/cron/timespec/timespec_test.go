package timespec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/cron/timespec"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestNext(t *testing.T) {
	cases := []struct {
		name, spec, from string
		want             []string
	}{
		{"the original's purgeData default runs daily at 1 am", "0 0 1 * * *", "2026-03-04T00:59:59Z",
			[]string{"2026-03-04T01:00:00Z", "2026-03-05T01:00:00Z"}},
		{"minutely runs at second 0 of each minute", "0 * * * * *", "2026-03-04T10:00:00Z",
			[]string{"2026-03-04T10:01:00Z", "2026-03-04T10:02:00Z"}},
		{"a time already matching is not next: next is strictly later", "0 * * * * *", "2026-03-04T10:01:00Z",
			[]string{"2026-03-04T10:02:00Z"}},
		{"a fraction of a second past a match moves on", "0 * * * * *", "2026-03-04T10:01:00.5Z",
			[]string{"2026-03-04T10:02:00Z"}},
		{"every two minutes (reDispatch default)", "0 */2 * * * *", "2026-03-04T10:01:30Z",
			[]string{"2026-03-04T10:02:00Z", "2026-03-04T10:04:00Z"}},
		{"hourly (deleteBounces default)", "0 0 * * * *", "2026-03-04T10:00:00Z",
			[]string{"2026-03-04T11:00:00Z", "2026-03-04T12:00:00Z"}},
		{"five fields mean second zero", "30 2 * * *", "2026-03-04T10:00:00Z",
			[]string{"2026-03-05T02:30:00Z"}},
		{"the original's RSS test spec: midnight on January 1 and on January Sundays", "0 0 1 1 0", "2026-12-31T00:00:00Z",
			[]string{"2027-01-01T00:00:00Z", "2027-01-03T00:00:00Z", "2027-01-10T00:00:00Z"}},
		{"both day fields restricted: either matches", "0 0 0 13 * fri", "2026-02-01T00:00:00Z",
			[]string{"2026-02-06T00:00:00Z", "2026-02-13T00:00:00Z", "2026-02-20T00:00:00Z"}},
		{"weekday 7 is Sunday", "0 0 12 * * 7", "2026-03-04T00:00:00Z",
			[]string{"2026-03-08T12:00:00Z"}},
		{"names and ranges", "0 0 9 * jan-feb mon-fri", "2026-02-27T10:00:00Z",
			[]string{"2027-01-01T09:00:00Z"}},
		{"a single value with a step runs to the field's end", "0 5/20 * * * *", "2026-03-04T10:00:00Z",
			[]string{"2026-03-04T10:05:00Z", "2026-03-04T10:25:00Z", "2026-03-04T10:45:00Z", "2026-03-04T11:05:00Z"}},
		{"lists", "10,20 0 0 * * *", "2026-03-04T00:00:15Z",
			[]string{"2026-03-04T00:00:20Z", "2026-03-05T00:00:10Z"}},
		{"February 29 waits for a leap year", "0 0 0 29 2 *", "2026-03-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z"}},
		{"month ends roll over the year", "0 0 0 1 * *", "2026-12-15T00:00:00Z",
			[]string{"2027-01-01T00:00:00Z"}},
		{"presets", "@hourly", "2026-03-04T10:20:00Z",
			[]string{"2026-03-04T11:00:00Z"}},
		{"a day-of-month range covering every day is unrestricted", "0 0 0 1-31 * mon", "2026-03-04T00:00:00Z",
			[]string{"2026-03-09T00:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp, err := timespec.Parse(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			cur := at(c.from)
			for _, w := range c.want {
				cur = sp.Next(cur)
				if !cur.Equal(at(w)) {
					t.Fatalf("Next = %s, want %s", cur.Format(time.RFC3339), w)
				}
			}
		})
	}
}

func TestNextKeepsWallClockAcrossDaylightSaving(t *testing.T) {
	loc, err := time.LoadLocation("America/Vancouver")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	sp := timespec.MustParse("0 30 2 * * *")
	// 2026-03-08 02:30 does not exist in Vancouver (clocks jump 2:00 → 3:00).
	got := sp.Next(time.Date(2026, 3, 7, 12, 0, 0, 0, loc))
	if want := time.Date(2026, 3, 8, 3, 0, 0, 0, loc); !got.Equal(want) {
		t.Errorf("in the gap: got %s, want %s", got, want)
	}
	got = sp.Next(got)
	if want := time.Date(2026, 3, 9, 2, 30, 0, 0, loc); !got.Equal(want) {
		t.Errorf("after the gap: got %s, want %s", got, want)
	}
	daily := timespec.MustParse("0 0 1 * * *")
	// 2026-11-01 01:00 happens twice; the job runs once.
	first := daily.Next(time.Date(2026, 10, 31, 12, 0, 0, 0, loc))
	second := daily.Next(first)
	if first.Day() != 1 || second.Day() != 2 || first.Hour() != 1 || second.Hour() != 1 {
		t.Errorf("across the repeated hour: %s then %s", first, second)
	}
}

func TestParseRefuses(t *testing.T) {
	cases := map[string]string{
		"too few fields":                             "* * * *",
		"too many fields":                            "0 0 0 * * * *",
		"an unknown name":                            "0 0 0 * * monday",
		"a value out of range":                       "0 60 * * * *",
		"an hour out of range":                       "0 0 24 * * *",
		"day of month zero":                          "0 0 0 0 * *",
		"a backwards range":                          "0 10-5 * * * *",
		"a step of zero":                             "0 */0 * * * *",
		"a star after a value":                       "0 5* * * * *",
		"an empty list entry":                        "0 1,,2 * * * *",
		"a negative value":                           "0 -1 * * * *",
		"a huge value":                               "0 99999999999999999999 * * * *",
		"letters of a field":                         "0 x * * * *",
		"a day that no month has":                    "0 0 0 31 2 *",
		"the empty spec":                             "",
		"question marks, which the original refuses": "0 0 0 ? * *",
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := timespec.Parse(spec); err == nil {
				t.Fatalf("%q parsed", spec)
			} else if !strings.Contains(err.Error(), "time spec") {
				t.Errorf("error does not say what it is about: %v", err)
			}
		})
	}
}

func TestParseNamesTheField(t *testing.T) {
	_, err := timespec.Parse("0 0 25 * * *")
	if err == nil || !strings.Contains(err.Error(), "hour field") || !strings.Contains(err.Error(), "0-23") {
		t.Fatalf("error %v does not name the hour field and its range", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0 0 1 * * *", "*/5 * * * *", "0 0 0 13 * fri", "@weekly", "0 5/20 1-3,7 * jan-mar 1-5", "0 0 0 29 2 *"} {
		f.Add(s)
	}
	from := at("2026-03-04T10:20:30Z")
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := timespec.Parse(s)
		if err != nil {
			return
		}
		// A spec that parses fires, later than asked, and again after that.
		n := sp.Next(from)
		if n.IsZero() || !n.After(from) {
			t.Fatalf("%q: Next(%s) = %s", s, from, n)
		}
		if m := sp.Next(n); m.IsZero() || !m.After(n) {
			t.Fatalf("%q: Next(%s) = %s", s, n, m)
		}
	})
}
