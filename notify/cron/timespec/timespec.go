// Package timespec reads cron time specs the way NotifyBC's scheduler (the
// npm package cron, version 4) reads them, and tells when a spec next fires.
//
// A spec has five fields (minute hour day-of-month month day-of-week) or six
// with a leading seconds field; five fields mean second 0. Each field is a
// comma-separated list of values, ranges (1-5) and steps (*/10, 1-30/5, and
// 5/15 meaning 5 to the field's end by 15). Month and weekday names
// (jan…dec, sun…sat, any case) stand for their numbers, and weekday 7 is
// Sunday as 0 is. The presets @yearly, @monthly, @weekly, @daily, @hourly,
// @minutely, @secondly, @weekdays and @weekends are accepted.
//
// When both day fields are restricted (neither covers every value), a day
// matches when either does, as in Vixie cron and the original; otherwise
// the restricted one decides.
//
// Times are wall-clock times of the location Next is given (the original
// uses the process time zone). A time that a daylight-saving change skips
// fires at the first instant after the gap; one it repeats fires once.
package timespec

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Spec is a parsed time spec. Its zero value never fires; use Parse.
type Spec struct {
	src                          string
	second, minute, hour         uint64
	dom, month, dow              uint64
	domRestricted, dowRestricted bool
}

type field struct {
	name     string
	low, top int // the values the field takes; day of week also takes 7
}

var fields = [6]field{
	{"second", 0, 59},
	{"minute", 0, 59},
	{"hour", 0, 23},
	{"day of month", 1, 31},
	{"month", 1, 12},
	{"day of week", 0, 7},
}

var presets = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
	"@minutely": "0 * * * * *",
	"@secondly": "* * * * * *",
	"@weekdays": "0 0 0 * * 1-5",
	"@weekends": "0 0 0 * * 0,6",
}

var aliases = map[string]int{
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
	"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
}

// maxLen bounds a spec: real ones are a few dozen characters.
const maxLen = 1024

// Parse reads a time spec. The error says which field is wrong and why.
func Parse(src string) (*Spec, error) {
	if len(src) > maxLen {
		return nil, fmt.Errorf("time spec is longer than %d characters", maxLen)
	}
	s := strings.ToLower(strings.TrimSpace(src))
	if p, ok := presets[s]; ok {
		s = p
	}
	s, err := replaceAliases(s)
	if err != nil {
		return nil, err
	}
	parts := strings.Fields(s)
	switch len(parts) {
	case 5:
		parts = append([]string{"0"}, parts...)
	case 6:
	default:
		return nil, fmt.Errorf("time spec %q: want 5 fields, or 6 with seconds first; it has %d", src, len(parts))
	}
	sp := &Spec{src: src}
	sets := [6]*uint64{&sp.second, &sp.minute, &sp.hour, &sp.dom, &sp.month, &sp.dow}
	for i, p := range parts {
		set, err := parseField(p, fields[i])
		if err != nil {
			return nil, fmt.Errorf("time spec %q: %s field: %w", src, fields[i].name, err)
		}
		*sets[i] = set
	}
	if sp.dow&(1<<7) != 0 {
		sp.dow = sp.dow&^(1<<7) | 1
	}
	sp.domRestricted = bits.OnesCount64(sp.dom) != 31
	sp.dowRestricted = bits.OnesCount64(sp.dow) != 7
	if !sp.canFire() {
		return nil, fmt.Errorf("time spec %q never fires: no month has that day", src)
	}
	return sp, nil
}

// MustParse is Parse for specs known to be valid; it panics otherwise.
func MustParse(src string) *Spec {
	sp, err := Parse(src)
	if err != nil {
		panic(err)
	}
	return sp
}

// String returns the spec as written.
func (s *Spec) String() string { return s.src }

// replaceAliases turns month and weekday names into numbers. Letters are
// read three at a time, as the original does, so "june" is an error.
func replaceAliases(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c < 'a' || c > 'z' {
			b.WriteByte(c)
			i++
			continue
		}
		j := i
		for j < len(s) && j-i < 3 && s[j] >= 'a' && s[j] <= 'z' {
			j++
		}
		n, ok := aliases[s[i:j]]
		if !ok {
			return "", fmt.Errorf("time spec %q: unknown name %q", s, s[i:j])
		}
		b.WriteString(strconv.Itoa(n))
		i = j
	}
	return b.String(), nil
}

func parseField(p string, f field) (uint64, error) {
	var set uint64
	for _, part := range strings.Split(p, ",") {
		if k := strings.IndexByte(part, '*'); k > 0 {
			return 0, fmt.Errorf("%q: * must come first", part)
		}
		part = strings.Replace(part, "*", strconv.Itoa(f.low)+"-"+strconv.Itoa(f.top), 1)
		rng, stepText, hasStep := strings.Cut(part, "/")
		loText, hiText, hasHi := strings.Cut(rng, "-")
		lo, err1 := number(loText)
		hi, err2 := lo, error(nil)
		if hasHi {
			hi, err2 = number(hiText)
		}
		step, err3 := 1, error(nil)
		if hasStep {
			step, err3 = number(stepText)
		}
		if err1 != nil || err2 != nil || err3 != nil {
			return 0, fmt.Errorf("%q cannot be read", part)
		}
		if hasStep && step == 0 {
			return 0, fmt.Errorf("%q has a step of zero", part)
		}
		if lo > hi {
			return 0, fmt.Errorf("%q is a range that runs backwards", part)
		}
		if lo < f.low || hi > f.top {
			return 0, fmt.Errorf("%q is out of range %d-%d", part, f.low, f.top)
		}
		if hasStep && !hasHi {
			hi = f.top
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << uint(v)
		}
	}
	return set, nil
}

// number reads a field's unsigned decimal number; values that do not fit
// in any field are refused as out of range by the caller.
func number(s string) (int, error) {
	if s == "" || len(s) > 4 {
		return 0, strconv.ErrSyntax
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.Atoi(s)
}

// daysIn is the most days a month can have (February: 29).
var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// canFire reports whether some day of some chosen month matches.
func (s *Spec) canFire() bool {
	if s.dowRestricted || !s.domRestricted {
		return true // every month has every weekday, and a first day
	}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<uint(m)) == 0 {
			continue
		}
		for d := 1; d <= daysIn[m]; d++ {
			if s.dom&(1<<uint(d)) != 0 {
				return true
			}
		}
	}
	return false
}

func (s *Spec) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	switch {
	case s.domRestricted && s.dowRestricted:
		return dom || dow
	case s.domRestricted:
		return dom
	case s.dowRestricted:
		return dow
	}
	return true
}

// horizon bounds the search for the next time: the longest a valid spec
// can wait is a February 29 eight years away (2096 to 2104).
const horizon = 8

// Next returns the first time the spec fires strictly after t, in t's
// location, at whole seconds. It returns the zero time when nothing
// matches within eight years (only for the zero Spec).
func (s *Spec) Next(t time.Time) time.Time {
	loc := t.Location()
	wall := wallClock(t)
	for {
		m := s.nextWall(wall)
		if m.IsZero() {
			return m
		}
		r := time.Date(m.Year(), m.Month(), m.Day(), m.Hour(), m.Minute(), m.Second(), 0, loc)
		// A wall-clock time that a daylight-saving change skips does not
		// exist; the job runs at the first instant after the gap.
		if rw := wallClock(r); rw.After(m) {
			r, _ = r.ZoneBounds()
		} else if rw.Before(m) {
			_, r = r.ZoneBounds()
		}
		// A repeated hour: the first occurrence was already past.
		if r.After(t) {
			return r
		}
		wall = m
	}
}

// wallClock is t's wall-clock reading as a UTC time, to whole seconds.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
}

// nextWall finds the next matching wall-clock time after w (a UTC time,
// so that every wall-clock time exists once).
func (s *Spec) nextWall(w time.Time) time.Time {
	limit := w.AddDate(horizon, 0, 1)
	next := w.Add(time.Second)
	for next.Before(limit) {
		y, mo, d := next.Date()
		h, mi, sec := next.Clock()
		switch {
		case s.month&(1<<uint(mo)) == 0:
			next = time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
		case !s.dayMatches(next):
			next = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
		case s.hour&(1<<uint(h)) == 0:
			next = time.Date(y, mo, d, h+1, 0, 0, 0, time.UTC)
		case s.minute&(1<<uint(mi)) == 0:
			next = time.Date(y, mo, d, h, mi+1, 0, 0, time.UTC)
		case s.second&(1<<uint(sec)) == 0:
			next = next.Add(time.Second)
		default:
			return next
		}
	}
	return time.Time{}
}
