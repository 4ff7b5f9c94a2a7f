package eventcli

import (
	"bufio"
	"errors"
	"io"
	"strconv"

	"github.com/govkit/govkit/event"
)

// maxRecord bounds the bytes kept for one record, so a file that is not a
// stream of small objects (a line of gigabytes, an array that never
// closes) cannot take the memory with it. A valid Event is under 100
// bytes; a record over the bound is reported as invalid.
const maxRecord = 1 << 20

// A record is one candidate Event and the line it starts on. When the
// input around it is broken beyond recovery (a JSON array that does not
// continue), problem says so and data is empty.
type record struct {
	line    int
	data    []byte // valid until the next call of next
	problem *event.Problem
}

type readMode uint8

const (
	modeStart readMode = iota // nothing read yet
	modeLines                 // NDJSON: one record per line
	modeMulti                 // records spanning lines, delimited by brackets
	modeArray                 // one JSON array of records
)

// recordReader splits an input into records, in constant memory. The
// input is one object, NDJSON, a JSON array, or (by extension) objects
// written one after another across lines. The first record decides: an
// input starting with '[' is an array; a first record that ends on its
// own line makes the input NDJSON, so a broken line only breaks itself;
// otherwise records are read by matching brackets across lines.
type recordReader struct {
	br       *bufio.Reader
	line     int // line of the next unread byte
	mode     readMode
	buf      []byte
	tooLong  bool
	arrState uint8 // in an array: afterOpen, afterElem or arrDone
	done     bool
}

const (
	afterOpen = iota // just after '['
	afterElem        // after an element: ',' or ']' comes next
	arrDone
)

func newRecordReader(r io.Reader) *recordReader {
	return &recordReader{br: bufio.NewReaderSize(r, 64<<10), line: 1, buf: make([]byte, 0, 4096)}
}

var tooLong = "record longer than " + strconv.Itoa(maxRecord>>10) + " KiB; an Event is a small object"

// next returns the next record, or io.EOF after the last one. Any other
// error is a failure to read the input.
func (r *recordReader) next() (record, error) {
	if r.done {
		return record{}, io.EOF
	}
	if r.mode == modeStart {
		c, err := r.skipSpace()
		if err != nil {
			return record{}, err
		}
		if c == '[' {
			r.br.ReadByte()
			r.mode = modeArray
		}
	}
	if r.mode == modeArray {
		return r.nextInArray()
	}
	return r.nextInLines()
}

// skipSpace consumes JSON whitespace, counting lines, and peeks at the
// next byte.
func (r *recordReader) skipSpace() (byte, error) {
	for {
		c, err := r.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case '\n':
			r.line++
		case ' ', '\t', '\r':
		default:
			r.br.UnreadByte()
			return c, nil
		}
	}
}

func (r *recordReader) keep(b []byte) {
	if len(r.buf)+len(b) > maxRecord {
		r.tooLong = true
		return
	}
	r.buf = append(r.buf, b...)
}

// readLine reads one line into r.buf (appending), returning whether
// anything was read. A non-nil scan follows the line's brackets, also past
// the point where a too-long record stops being kept.
func (r *recordReader) readLine(scan *bracketScan) (bool, error) {
	read := false
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(chunk) > 0 {
			read = true
			if scan != nil {
				scan.feed(chunk)
			}
			r.keep(chunk)
		}
		switch {
		case err == nil:
			r.line++
			return true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			return read, nil
		default:
			return read, err
		}
	}
}

func opensBracket(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return false
}

func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// bracketScan follows strings and bracket depth across the lines of a
// multi-line record.
type bracketScan struct {
	depth    int
	inString bool
	escaped  bool
}

func (s *bracketScan) feed(b []byte) {
	for _, c := range b {
		s.feedByte(c)
	}
}

func (s *bracketScan) feedByte(c byte) {
	switch {
	case s.escaped:
		s.escaped = false
	case s.inString:
		switch c {
		case '\\':
			s.escaped = true
		case '"':
			s.inString = false
		}
	case c == '"':
		s.inString = true
	case c == '{' || c == '[':
		s.depth++
	case c == '}' || c == ']':
		s.depth--
	}
}

func (s *bracketScan) complete() bool { return !s.inString && s.depth <= 0 }

func (r *recordReader) nextInLines() (record, error) {
	for {
		r.buf, r.tooLong = r.buf[:0], false
		start := r.line
		var s bracketScan
		scan := &s
		if r.mode == modeLines {
			scan = nil // NDJSON: a line is a record, whatever its brackets
		}
		read, err := r.readLine(scan)
		if err != nil {
			return record{}, err
		}
		if !read {
			r.done = true
			return record{}, io.EOF
		}
		if blank(r.buf) && !r.tooLong {
			continue
		}
		if scan != nil && !opensBracket(r.buf) {
			// Only an object or array continues on the next line; text
			// that starts otherwise is a broken record of its own.
			s = bracketScan{}
		}
		if scan != nil {
			lines := 1
			for !s.complete() {
				more, err := r.readLine(&s)
				if err != nil {
					return record{}, err
				}
				if !more {
					break // unterminated at the end: the validator says so
				}
				lines++
			}
			if r.mode == modeStart {
				r.mode = modeMulti
				if lines == 1 {
					r.mode = modeLines
				}
			}
		}
		if r.tooLong {
			return record{line: start, problem: tooLongProblem()}, nil
		}
		return record{line: start, data: r.buf}, nil
	}
}

func tooLongProblem() *event.Problem {
	return &event.Problem{Property: event.PropertyRecord, Rule: event.RuleJSON, Err: event.ErrSyntax, Detail: tooLong}
}

// nextInArray returns the next element of a JSON array.
func (r *recordReader) nextInArray() (record, error) {
	c, err := r.skipSpace()
	if err != nil && err != io.EOF {
		return record{}, err
	}
	eof := err == io.EOF
	switch r.arrState {
	case afterOpen:
		if !eof && c == ']' {
			r.br.ReadByte()
			return r.endArray()
		}
	case afterElem:
		switch {
		case eof:
			return r.broken("the array is not closed (missing ']')")
		case c == ']':
			r.br.ReadByte()
			return r.endArray()
		case c != ',':
			return r.broken("expected ',' or ']' after an array element")
		}
		r.br.ReadByte()
		if c, err = r.skipSpace(); err != nil && err != io.EOF {
			return record{}, err
		}
		eof = err == io.EOF
		if !eof && c == ']' {
			return r.broken("trailing comma before ']'")
		}
	}
	if eof {
		return r.broken("the array is not closed (missing ']')")
	}
	start := r.line
	r.buf, r.tooLong = r.buf[:0], false
	if err := r.readValue(); err != nil {
		if err == io.EOF {
			return r.broken("the array is not closed (missing ']')")
		}
		return record{}, err
	}
	r.arrState = afterElem
	if r.tooLong {
		return record{line: start, problem: tooLongProblem()}, nil
	}
	return record{line: start, data: r.buf}, nil
}

// readValue copies one JSON value's bytes into r.buf: an object or array
// up to its matching bracket, a string to its closing quote, anything else
// up to the next delimiter. Whether the bytes are good JSON is for the
// validator to say.
func (r *recordReader) readValue() error {
	var s bracketScan
	first := true
	for {
		c, err := r.br.ReadByte()
		if err != nil {
			return err
		}
		if c == '\n' {
			r.line++
		}
		if first && c != '{' && c != '[' && c != '"' {
			// A scalar (or garbage) ends before a delimiter.
			for {
				if c == ',' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
					if c == '\n' {
						r.line--
					}
					r.br.UnreadByte()
					return nil
				}
				r.keepByte(c)
				if c, err = r.br.ReadByte(); err != nil {
					if err == io.EOF {
						return nil
					}
					return err
				}
				if c == '\n' {
					r.line++
				}
			}
		}
		first = false
		r.keepByte(c)
		s.feedByte(c)
		if s.complete() {
			return nil
		}
	}
}

func (r *recordReader) keepByte(c byte) {
	if len(r.buf) >= maxRecord {
		r.tooLong = true
		return
	}
	r.buf = append(r.buf, c)
}

func (r *recordReader) endArray() (record, error) {
	r.arrState = arrDone
	r.done = true
	c, err := r.skipSpace()
	if err == io.EOF {
		return record{}, io.EOF
	}
	if err != nil {
		return record{}, err
	}
	_ = c // anything but whitespace after the array is an error
	return record{line: r.line, problem: &event.Problem{Property: event.PropertyRecord, Rule: event.RuleJSON, Err: event.ErrSyntax, Detail: "data after the closing ']' of the array"}}, nil
}

// broken ends the input: after a structural error in an array there is no
// telling where the next element starts.
func (r *recordReader) broken(why string) (record, error) {
	r.arrState = arrDone
	r.done = true
	return record{line: r.line, problem: &event.Problem{Property: event.PropertyRecord, Rule: event.RuleJSON, Err: event.ErrSyntax, Detail: "invalid JSON array: " + why}}, nil
}
