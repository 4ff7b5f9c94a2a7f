package event

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The four properties, in the order an Event is written.
const (
	propStartDate = iota
	propEndDate
	propStartDateTime
	propEndDateTime
	numProps
)

var propNames = [numProps]string{"start_date", "end_date", "start_datetime", "end_datetime"}

type valueKind uint8

const (
	kindString valueKind = iota + 1
	kindNull
	kindBool
	kindNumber
	kindObject
	kindArray
)

var kindNames = [...]string{kindString: "a string", kindNull: "null", kindBool: "a boolean",
	kindNumber: "a number", kindObject: "an object", kindArray: "an array"}

// maxValue is room for the longest valid value (28 bytes) with a margin; a
// longer value is reported as a format problem without being kept.
const maxValue = 32

// maxDepth bounds the nesting of values the decoder skips over (values of
// unknown keys, non-string values), so hostile input cannot exhaust the
// stack. Anything deeper is reported as invalid JSON.
const maxDepth = 512

// slot is what the decoder learned about one of the four properties.
type slot struct {
	count int            // occurrences of the key
	n     int            // decoded length of the first occurrence's string
	buf   [maxValue]byte // the first occurrence's string, if it fits
}

// decoder is a single-pass scanner over one JSON text. It lives on the
// caller's stack: on the valid path nothing it does allocates.
type decoder struct {
	data     []byte
	pos      int
	slots    [numProps]slot
	problems Problems
}

// decode checks data against rules 1 to 8 and fills d.slots.
func (d *decoder) decode(data []byte) {
	d.data = data
	d.ws()
	if d.pos >= len(d.data) {
		d.fail("empty input, expected an object")
		return
	}
	if d.data[d.pos] != '{' {
		kind, ok := d.skipValue()
		if !ok {
			return
		}
		d.ws()
		if d.pos != len(d.data) {
			d.fail("data after the top-level value")
			return
		}
		d.problems = Problems{{PropertyRecord, RuleJSON, ErrNotObject, "the record is " + kindNames[kind] + ", not a JSON object"}}
		return
	}
	d.pos++
	d.ws()
	if d.peek() == '}' {
		d.pos++
	} else {
		for {
			if d.peek() != '"' {
				d.fail("expected a property name in double quotes")
				return
			}
			keyStart := d.pos
			var kb [16]byte
			n, ok := d.readString(kb[:])
			if !ok {
				return
			}
			keyEnd := d.pos
			d.ws()
			if d.peek() != ':' {
				d.fail("expected ':' after a property name")
				return
			}
			d.pos++
			d.ws()
			if p := lookup(kb[:], n); p >= 0 {
				if !d.member(p) {
					return
				}
			} else {
				if _, ok := d.skipValue(); !ok {
					return
				}
				d.unknownKey(d.data[keyStart:keyEnd])
			}
			d.ws()
			c := d.peek()
			d.pos++
			if c == '}' {
				break
			}
			if c != ',' {
				d.pos--
				d.fail("expected ',' or '}' after a value")
				return
			}
			d.ws()
		}
	}
	d.ws()
	if d.pos != len(d.data) {
		d.fail("data after the object")
		return
	}
	d.checkShape()
}

// lookup returns the property a decoded key names, or -1. The key is
// compared after decoding, so "start_\u0064ate" is start_date.
func lookup(kb []byte, n int) int {
	if n > len(kb) {
		return -1
	}
	k := kb[:n]
	for i, name := range propNames {
		if string(k) == name {
			return i
		}
	}
	return -1
}

// member reads the value of a known property and checks rules 5, 7, 8.
func (d *decoder) member(p int) bool {
	s := &d.slots[p]
	s.count++
	if s.count > 1 {
		d.add(p, RuleNoDuplicate, ErrDuplicate, "appears more than once in the object")
	}
	var tmp [maxValue]byte
	buf := tmp[:]
	if s.count == 1 {
		buf = s.buf[:]
	}
	start := d.pos
	var kind valueKind
	n := 0
	if d.peek() == '"' {
		var ok bool
		if n, ok = d.readString(buf); !ok {
			return false
		}
		kind = kindString
	} else {
		var ok bool
		if kind, ok = d.skipValue(); !ok {
			return false
		}
	}
	raw := d.data[start:d.pos]
	switch kind {
	case kindNull:
		d.add(p, RuleNoNull, ErrNull, "null is not a string: leave the property out instead")
	case kindString:
		why := whyDateShape
		if p == propStartDateTime || p == propEndDateTime {
			why = whyDateTimeShape
		}
		if n <= maxValue {
			if p == propStartDate || p == propEndDate {
				_, why = parseDate(buf[:n])
			} else {
				_, why = checkDateTime(buf[:n])
			}
		}
		if why != "" {
			d.add(p, RuleFormat, ErrFormat, quoteRaw(raw)+": "+why)
		}
	default:
		d.add(p, RuleFormat, ErrNotString, quoteRaw(raw)+": "+kindNames[kind]+" is not a string")
	}
	if s.count == 1 {
		s.n = n
	}
	return true
}

// checkShape applies rules 1 to 4 to the properties present. A property
// set to null or to a wrong value still counts as present: rule 8 says null
// is not absence, and guessing what a bad value meant would hide problems.
func (d *decoder) checkShape() {
	sd := d.slots[propStartDate].count > 0
	ed := d.slots[propEndDate].count > 0
	sdt := d.slots[propStartDateTime].count > 0
	edt := d.slots[propEndDateTime].count > 0
	switch {
	case sd && sdt:
		d.add(propStartDateTime, RuleOneStart, ErrTwoStarts, "start_date and start_datetime are both present; an event has exactly one start")
	case !sd && !sdt:
		prop := PropertyRecord
		switch {
		case ed && !edt:
			prop = propNames[propStartDate]
		case edt && !ed:
			prop = propNames[propStartDateTime]
		}
		d.report(Problem{prop, RuleOneStart, ErrNoStart, "neither start_date nor start_datetime is present; an event needs exactly one start"})
	}
	if ed && !sd {
		if sdt {
			d.add(propEndDate, RuleNoMixing, ErrMixedForms, "end_date (a date) cannot go with start_datetime (a datetime)")
		} else {
			d.add(propEndDate, RuleDateForm, ErrEndWithoutStart, "end_date is allowed only together with start_date")
		}
	}
	if edt && !sdt {
		if sd {
			d.add(propEndDateTime, RuleNoMixing, ErrMixedForms, "end_datetime (a datetime) cannot go with start_date (a date)")
		} else {
			d.add(propEndDateTime, RuleDateTimeForm, ErrEndWithoutStart, "end_datetime is allowed only together with start_datetime")
		}
	}
}

func (d *decoder) add(p int, r Rule, err error, detail string) {
	d.report(Problem{propNames[p], r, err, detail})
}

func (d *decoder) report(p Problem) {
	if d.problems == nil {
		// Most invalid records have one or two problems: one allocation.
		d.problems = make(Problems, 0, 2)
	}
	d.problems = append(d.problems, p)
}

func (d *decoder) unknownKey(raw []byte) {
	key := decodeKey(raw)
	prop := displayKey(key)
	// displayKey is one-to-one, so an unknown key seen before is one
	// already reported under its display name.
	for _, p := range d.problems {
		if p.Rule == RuleNoUnknown && p.Property == prop {
			d.report(Problem{prop, RuleNoDuplicate, ErrDuplicate, "appears more than once in the object"})
			return
		}
	}
	detail := "unknown property; an Event has only start_date, end_date, start_datetime, end_datetime"
	if near := nearest(key); near != "" {
		detail = "unknown property (did you mean " + near + "?); an Event has only start_date, end_date, start_datetime, end_datetime"
	}
	d.report(Problem{prop, RuleNoUnknown, ErrUnknownProperty, detail})
}

// displayKey returns an unknown key as a Problem names it: as it is when
// it is a plain word, quoted (Go syntax) when it is empty or holds spaces,
// punctuation that would confuse a "FILE:LINE: PROPERTY:" line, or
// anything outside printable ASCII.
func displayKey(key string) string {
	plain := key != ""
	for i := 0; i < len(key) && plain; i++ {
		c := key[i]
		plain = c > ' ' && c < 0x7f && c != '"' && c != ':' && c != '\\'
	}
	if plain {
		return key
	}
	return strconv.Quote(key)
}

// fail records a syntax error at d.pos. It replaces the problems found so
// far: in text that is not JSON, what looked like a property may not be one.
func (d *decoder) fail(why string) {
	var b [160]byte
	msg := append(b[:0], "invalid JSON "...)
	if d.pos >= len(d.data) {
		msg = append(msg, "at the end"...)
	} else {
		msg = strconv.AppendInt(append(msg, "at byte "...), int64(d.pos+1), 10)
		if c := d.data[d.pos]; c >= 0x20 && c < 0x7f {
			msg = append(msg, " ('"...)
			msg = append(msg, c)
			msg = append(msg, "')"...)
		}
	}
	msg = append(append(msg, ": "...), why...)
	d.problems = d.problems[:0]
	d.report(Problem{PropertyRecord, RuleJSON, ErrSyntax, string(msg)})
}

func (d *decoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *decoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// readString reads the JSON string starting at d.pos, writes as much of its
// decoded bytes as fit into dst, and returns the decoded length. Escapes
// are decoded as encoding/json does: a lone surrogate becomes U+FFFD.
func (d *decoder) readString(dst []byte) (int, bool) {
	data := d.data
	i := d.pos + 1
	n := 0
	for {
		if i >= len(data) {
			d.pos = i
			d.fail("unterminated string")
			return 0, false
		}
		c := data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return n, true
		case c < 0x20:
			d.pos = i
			d.fail("control character inside a string (it must be escaped)")
			return 0, false
		case c != '\\':
			if n < len(dst) {
				dst[n] = c
			}
			n++
			i++
			continue
		}
		if i+1 >= len(data) {
			d.pos = i
			d.fail("unterminated string")
			return 0, false
		}
		var r rune
		switch e := data[i+1]; e {
		case '"', '\\', '/':
			r = rune(e)
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			r1, ok := hex4(data, i+2)
			if !ok {
				d.pos = i
				d.fail(`invalid \u escape`)
				return 0, false
			}
			r = r1
			if utf16.IsSurrogate(r1) {
				r = utf8.RuneError
				if r2, ok := hex4(data, i+8); ok && data[i+6] == '\\' && data[i+7] == 'u' {
					if dec := utf16.DecodeRune(r1, r2); dec != utf8.RuneError {
						r = dec
						i += 6
					}
				}
			}
			i += 4
		default:
			d.pos = i
			d.fail("invalid escape in a string")
			return 0, false
		}
		i += 2
		var enc [utf8.UTFMax]byte
		for _, b := range enc[:utf8.EncodeRune(enc[:], r)] {
			if n < len(dst) {
				dst[n] = b
			}
			n++
		}
	}
}

func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// skipValue reads any JSON value at d.pos and returns its kind. It keeps
// its own stack of open containers (one bit each: object or array) rather
// than recursing, so deeply nested hostile input costs no stack growth.
func (d *decoder) skipValue() (valueKind, bool) {
	var inObject [maxDepth/64 + 1]uint64
	depth := 0
	var top valueKind
	for {
		// A value starts at d.pos.
		var kind valueKind
		switch c := d.peek(); c {
		case '{', '[':
			if depth >= maxDepth {
				d.fail("nested too deeply")
				return 0, false
			}
			kind, closer := kindArray, byte(']')
			if c == '{' {
				kind, closer = kindObject, '}'
				inObject[depth/64] |= 1 << (depth % 64)
			} else {
				inObject[depth/64] &^= 1 << (depth % 64)
			}
			if depth == 0 {
				top = kind
			}
			depth++
			d.pos++
			d.ws()
			if d.peek() != closer {
				if c == '{' && !d.objectKey() {
					return 0, false
				}
				continue // to the first element
			}
			d.pos++
			depth--
		case '"':
			if _, ok := d.readString(nil); !ok {
				return 0, false
			}
			kind = kindString
		case 't':
			kind = kindBool
			if !d.literal("true") {
				return 0, false
			}
		case 'f':
			kind = kindBool
			if !d.literal("false") {
				return 0, false
			}
		case 'n':
			kind = kindNull
			if !d.literal("null") {
				return 0, false
			}
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			kind = kindNumber
			if !d.number() {
				return 0, false
			}
		default:
			if d.pos >= len(d.data) {
				d.fail("unexpected end of input, expected a value")
			} else {
				d.fail("expected a value")
			}
			return 0, false
		}
		if top == 0 {
			return kind, true // a scalar on its own
		}
		// A value ended: close every container that ends here, or move
		// on to the next element of the innermost one.
		for next := false; !next; {
			if depth == 0 {
				return top, true
			}
			obj := inObject[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			closer := byte(']')
			if obj {
				closer = '}'
			}
			d.ws()
			switch d.peek() {
			case ',':
				d.pos++
				d.ws()
				if obj && !d.objectKey() {
					return 0, false
				}
				next = true
			case closer:
				d.pos++
				depth--
			default:
				d.fail("expected ',' or '" + string(closer) + "'")
				return 0, false
			}
		}
	}
}

// objectKey reads `"key" :` inside an object being skipped.
func (d *decoder) objectKey() bool {
	if d.peek() != '"' {
		d.fail("expected a property name in double quotes")
		return false
	}
	if _, ok := d.readString(nil); !ok {
		return false
	}
	d.ws()
	if d.peek() != ':' {
		d.fail("expected ':' after a property name")
		return false
	}
	d.pos++
	d.ws()
	return true
}

func (d *decoder) literal(word string) bool {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		d.fail("expected a value")
		return false
	}
	d.pos += len(word)
	return true
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) number() bool {
	data, i := d.data, d.pos
	digitsFrom := func(i int) int {
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i
	}
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digitsFrom(i)
	default:
		d.pos = i
		d.fail("invalid number")
		return false
	}
	if i < len(data) && data[i] == '.' {
		j := digitsFrom(i + 1)
		if j == i+1 {
			d.pos = j
			d.fail("invalid number: no digit after '.'")
			return false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digitsFrom(i)
		if j == i {
			d.pos = j
			d.fail("invalid number: no digit in the exponent")
			return false
		}
		i = j
	}
	d.pos = i
	return true
}

// decodeKey returns the decoded text of a JSON string that is known to be
// well formed. It is used only on the error path.
func decodeKey(raw []byte) string {
	var d decoder
	d.data = raw
	var small [64]byte
	buf := small[:]
	if len(raw) > len(small) {
		buf = make([]byte, len(raw))
	}
	n, _ := d.readString(buf)
	return string(buf[:n])
}

// quoteRaw shortens a value's JSON text for a message.
func quoteRaw(raw []byte) string {
	const max = 48
	if len(raw) > max {
		return string(raw[:max]) + "..."
	}
	return string(raw)
}

// nearest returns the property name within two edits of key, if any, so a
// typo such as end_datetme is reported with the name that was meant.
func nearest(key string) string {
	for _, name := range propNames {
		if editDistance(key, name) <= 2 {
			return name
		}
	}
	return ""
}

// editDistance returns the Levenshtein distance of a and b if it is at
// most 2, and a larger number otherwise. Only cells within two of the
// diagonal are computed, so a typo check costs a few dozen steps.
func editDistance(a, b string) int {
	const limit, band, far = 32, 2, 99
	if len(a) > limit || len(b) > limit || len(a)-len(b) > band || len(b)-len(a) > band {
		return far
	}
	var prev, cur [limit + 1]int
	for j := range prev {
		prev[j] = far
		if j <= band {
			prev[j] = j
		}
	}
	for i := 1; i <= len(a); i++ {
		for j := range cur {
			cur[j] = far
		}
		if i <= band {
			cur[0] = i
		}
		best := cur[0]
		for j := max(1, i-band); j <= min(len(b), i+band); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > band {
			return far
		}
		prev = cur
	}
	return prev[len(b)]
}
