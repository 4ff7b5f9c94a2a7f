package notify

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// parser reads JSON text into Fields values in one pass over the bytes.
// encoding/json can keep key order only through its Token API, which
// costs an allocation or more per token and read request bodies at about
// 3 MB/s: a 1 MiB body took a third of a second of CPU, on routes anyone
// may call. This parser reads the same language (RFC 8259; invalid UTF-8
// and lone surrogates become U+FFFD, as encoding/json does) ten times
// faster.
type parser struct {
	b []byte
	i int
}

// SyntaxError is JSON text that cannot be read, with the byte offset
// where reading stopped.
type SyntaxError struct {
	Msg    string
	Offset int
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.Msg, e.Offset) }

var errEnd = errors.New("unexpected end of JSON input")

func (p *parser) fail(msg string) error { return &SyntaxError{Msg: msg, Offset: p.i} }

func (p *parser) unexpected(what string) error {
	if p.i >= len(p.b) {
		return errEnd
	}
	return p.fail(fmt.Sprintf("invalid character %s %s", quoteChar(p.b[p.i]), what))
}

func quoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c < 0x20 || c >= 0x7f:
		return fmt.Sprintf("%q", rune(c))
	}
	return "'" + string(c) + "'"
}

func (p *parser) skipSpace() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads one value at nesting depth depth.
func (p *parser) value(depth int) (any, error) {
	p.skipSpace()
	if p.i >= len(p.b) {
		return nil, errEnd
	}
	switch c := p.b[p.i]; {
	case c == '{':
		if depth >= MaxDepth {
			return nil, ErrTooDeep
		}
		return p.object(depth)
	case c == '[':
		if depth >= MaxDepth {
			return nil, ErrTooDeep
		}
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.unexpected("looking for beginning of value")
}

func (p *parser) literal(word string) error {
	for k := 0; k < len(word); k++ {
		if p.i >= len(p.b) {
			return errEnd
		}
		if p.b[p.i] != word[k] {
			return p.unexpected("in literal " + word)
		}
		p.i++
	}
	return nil
}

func (p *parser) object(depth int) (any, error) {
	p.i++ // {
	doc := Fields{}
	var keys keyIndex
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return doc, nil
	}
	for {
		p.skipSpace()
		if p.i >= len(p.b) {
			return nil, errEnd
		}
		if p.b[p.i] != '"' {
			return nil, p.unexpected("looking for beginning of object key string")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.i >= len(p.b) {
			return nil, errEnd
		}
		if p.b[p.i] != ':' {
			return nil, p.unexpected("after object key")
		}
		p.i++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		// A repeated key keeps its last value, in the place of its first.
		doc = keys.set(doc, key, v)
		if len(doc) > MaxKeys {
			return nil, ErrTooManyKeys
		}
		p.skipSpace()
		if p.i >= len(p.b) {
			return nil, errEnd
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return doc, nil
		default:
			return nil, p.unexpected("after object key:value pair")
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	p.i++ // [
	arr := []any{}
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return arr, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skipSpace()
		if p.i >= len(p.b) {
			return nil, errEnd
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return arr, nil
		default:
			return nil, p.unexpected("after array element")
		}
	}
}

func (p *parser) number() (any, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.unexpected("in numeric literal")
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.unexpected("after decimal point in numeric literal")
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.unexpected("in exponent of numeric literal")
		}
	}
	return numberValue(json.Number(p.b[start:p.i]))
}

// str reads a string; p.b[p.i] is its opening quote.
func (p *parser) str() (string, error) {
	p.i++
	start := p.i
	// Fast path: plain ASCII without escapes, the usual key or value.
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := string(p.b[start:p.i])
			p.i++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		p.i++
	}
	buf := make([]byte, 0, p.i-start+16)
	buf = append(buf, p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf), nil
		case c < 0x20:
			return "", p.unexpected("in string literal")
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return "", errEnd
			}
			e := p.b[p.i+1]
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r := u4(p.b[p.i:])
				if r < 0 {
					return "", p.fail("invalid \\u escape in string literal")
				}
				p.i += 6
				if utf16.IsSurrogate(r) {
					// A pair is one character; a lone half is U+FFFD, and
					// the escape after it is read on its own.
					if d := utf16.DecodeRune(r, u4(p.b[p.i:])); d != utf8.RuneError {
						r = d
						p.i += 6
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
				continue
			default:
				return "", p.fail(fmt.Sprintf("invalid escape %q in string literal", "\\"+string(e)))
			}
			p.i += 2
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, p.b[p.i:p.i+size]...)
			}
			p.i += size
		}
	}
	return "", errEnd
}

// u4 reads a \uXXXX escape at the start of b; -1 when there is none.
func u4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
