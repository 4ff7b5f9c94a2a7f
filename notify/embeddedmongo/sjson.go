package embeddedmongo

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// How FerretDB v1.24 keeps a document in SQLite (its "sjson", column
// _ferretdb_sjson of the collection's table), as read from its source:
// one JSON object whose first member "$s" is the schema and whose other
// members are the document's fields. The schema is {"p": {field: elem},
// "$k": [field, …]}: "$k" is the fields' order, and an elem is {"t":
// type} plus, by type, "$s" (an object's schema), "i" (an array's elems,
// one per item), "s" (binData's subtype, a number) or "o" (a regex's
// options). Values: double, int, long and date (milliseconds) as JSON
// numbers; string as a JSON string; objectId as its hex; binData as
// base64; regex as its pattern; timestamp as the uint64; bool; and JSON
// null for null, whatever the elem says. FerretDB refuses infinities and
// NaN and stores -0 as 0, so every double is a plain JSON number.
//
// decodeSJSON turns that text into the BSON document FerretDB itself
// sends for it: the same fields in the same order, each value of the
// same type and bytes. It follows FerretDB's reading rules — the number
// of fields must match "$k", a field "$k" names must be there, a
// duplicate member's last value counts, numbers parse as Go's
// encoding/json parses them into the type's Go value — and refuses
// (errSJSON) anything else, unknown types and schema members included:
// the caller then asks FerretDB, which is never wrong about its own
// format.

var errSJSON = errors.New("embeddedmongo: stored document not decodable")

// sjsonElem is one elem of a schema.
type sjsonElem struct {
	typ     []byte
	schema  []byte // "$s": an object's schema, not yet parsed
	items   []byte // "i": an array's elems, not yet parsed
	subtype []byte // "s"
	options []byte // "o"
}

// member is one member of a JSON object: its decoded key and the span
// of its value.
type member struct {
	key []byte
	val []byte
}

// schemaKey is the member that holds a stored document's schema.
var schemaKey = []byte("$s")

// DecodeStored appends to dst the BSON document FerretDB sends for a
// document stored as text (its sjson), or fails when the text is not
// exactly FerretDB's format: the caller then reads the document through
// FerretDB. It reads the fields in the order of the schema's "$k" lists,
// never the text's, and parses each number by its schema type, so text
// that PostgreSQL's jsonb gave back (keys reordered, numbers rewritten
// without exponents) decodes to the same bytes (see notify/ferretpg).
func DecodeStored(dst, text []byte) ([]byte, error) {
	return decodeSJSON(dst, text)
}

// decodeSJSON appends to dst the BSON document of the stored text data.
func decodeSJSON(dst, data []byte) ([]byte, error) {
	s := scanner{b: data}
	s.ws()
	members, err := s.object()
	if err != nil {
		return nil, err
	}
	s.ws()
	if s.i != len(s.b) {
		return nil, errSJSON
	}
	sch, ok := lookupMember(members, schemaKey)
	if !ok {
		return nil, errSJSON
	}
	props, keys, err := parseSchema(sch)
	if err != nil {
		return nil, err
	}
	// The document's fields are the members besides "$s", counted as a
	// map counts them (a repeated key once).
	n := 0
	for i, m := range members {
		if !bytes.Equal(m.key, schemaKey) && !repeatedLater(members, i) {
			n++
		}
	}
	if n != len(keys) {
		return nil, errSJSON
	}
	for _, k := range keys {
		if bytes.Equal(k, schemaKey) { // the schema is not a field
			return nil, errSJSON
		}
	}
	return appendDoc(dst, members, props, keys)
}

// appendDoc appends the BSON document of fields members in the order
// keys gives, each value typed by its elem in props.
func appendDoc(dst []byte, members []member, props []member, keys [][]byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for _, k := range keys {
		v, ok := lookupMember(members, k)
		if !ok {
			return nil, errSJSON
		}
		var e []byte
		if el, ok := lookupMember(props, k); ok {
			e = el
		}
		var err error
		if dst, err = appendValue(dst, k, v, e); err != nil {
			return nil, err
		}
	}
	return endDoc(dst, start)
}

func endDoc(dst []byte, start int) ([]byte, error) {
	dst = append(dst, 0)
	n := len(dst) - start
	if n > math.MaxInt32 {
		return nil, errSJSON
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// appendHeader appends a BSON element's type and key; a key with a NUL
// cannot be written.
func appendHeader(dst []byte, t bson.Type, key []byte) ([]byte, error) {
	if bytes.IndexByte(key, 0) >= 0 {
		return nil, errSJSON
	}
	dst = append(dst, byte(t))
	dst = append(dst, key...)
	return append(dst, 0), nil
}

// appendValue appends element key of the stored value v whose elem is
// elem (nil when the schema has none).
func appendValue(dst []byte, key, v, elemText []byte) ([]byte, error) {
	if string(v) == "null" {
		return appendHeader(dst, bson.TypeNull, key)
	}
	if elemText == nil {
		return nil, errSJSON
	}
	el, err := parseElem(elemText)
	if err != nil {
		return nil, err
	}
	s := scanner{b: v}
	switch string(el.typ) {
	case "object":
		if el.schema == nil {
			return nil, errSJSON
		}
		members, err := s.object()
		if err != nil {
			return nil, err
		}
		if dst, err = appendHeader(dst, bson.TypeEmbeddedDocument, key); err != nil {
			return nil, err
		}
		if len(members) == 0 {
			return append(dst, 5, 0, 0, 0, 0), nil
		}
		props, keys, err := parseSchema(el.schema)
		if err != nil {
			return nil, err
		}
		n := 0
		for i := range members {
			if !repeatedLater(members, i) {
				n++
			}
		}
		if n != len(keys) {
			return nil, errSJSON
		}
		return appendDoc(dst, members, props, keys)
	case "array":
		if el.items == nil {
			return nil, errSJSON
		}
		items, err := s.array()
		if err != nil {
			return nil, err
		}
		elems, err := (&scanner{b: el.items}).array()
		if err != nil {
			return nil, err
		}
		if len(elems) != len(items) {
			return nil, errSJSON
		}
		if dst, err = appendHeader(dst, bson.TypeArray, key); err != nil {
			return nil, err
		}
		start := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		var index [20]byte
		for i, it := range items {
			if dst, err = appendValue(dst, strconv.AppendInt(index[:0], int64(i), 10), it, elems[i]); err != nil {
				return nil, err
			}
		}
		return endDoc(dst, start)
	case "double":
		lit, err := s.number()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil {
			return nil, errSJSON
		}
		if dst, err = appendHeader(dst, bson.TypeDouble, key); err != nil {
			return nil, err
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case "string":
		str, err := s.str()
		if err != nil {
			return nil, err
		}
		if dst, err = appendHeader(dst, bson.TypeString, key); err != nil {
			return nil, err
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(str)+1))
		dst = append(dst, str...)
		return append(dst, 0), nil
	case "binData":
		str, err := s.str()
		if err != nil {
			return nil, err
		}
		if el.subtype == nil {
			return nil, errSJSON
		}
		sub, err := strconv.ParseUint(string(el.subtype), 10, 8)
		if err != nil {
			return nil, errSJSON
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(str)))
		n, err := base64.StdEncoding.Decode(b, []byte(str))
		if err != nil {
			return nil, errSJSON
		}
		if dst, err = appendHeader(dst, bson.TypeBinary, key); err != nil {
			return nil, err
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
		dst = append(dst, byte(sub))
		return append(dst, b[:n]...), nil
	case "objectId":
		str, err := s.str()
		if err != nil {
			return nil, err
		}
		var oid [12]byte
		if len(str) != 24 {
			return nil, errSJSON
		}
		if _, err := hex.Decode(oid[:], []byte(str)); err != nil {
			return nil, errSJSON
		}
		if dst, err = appendHeader(dst, bson.TypeObjectID, key); err != nil {
			return nil, err
		}
		return append(dst, oid[:]...), nil
	case "bool":
		var b byte
		switch {
		case s.lit("true"):
			b = 1
		case s.lit("false"):
		default:
			return nil, errSJSON
		}
		if dst, err = appendHeader(dst, bson.TypeBoolean, key); err != nil {
			return nil, err
		}
		return append(dst, b), nil
	case "date", "long":
		n, err := s.integer(64)
		if err != nil {
			return nil, err
		}
		t := bson.TypeInt64
		if el.typ[0] == 'd' {
			t = bson.TypeDateTime
		}
		if dst, err = appendHeader(dst, t, key); err != nil {
			return nil, err
		}
		return binary.LittleEndian.AppendUint64(dst, uint64(n)), nil
	case "int":
		n, err := s.integer(32)
		if err != nil {
			return nil, err
		}
		if dst, err = appendHeader(dst, bson.TypeInt32, key); err != nil {
			return nil, err
		}
		return binary.LittleEndian.AppendUint32(dst, uint32(int32(n))), nil
	case "timestamp":
		lit, err := s.number()
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseUint(string(lit), 10, 64)
		if err != nil {
			return nil, errSJSON
		}
		if dst, err = appendHeader(dst, bson.TypeTimestamp, key); err != nil {
			return nil, err
		}
		return binary.LittleEndian.AppendUint64(dst, n), nil
	case "regex":
		pattern, err := s.str()
		if err != nil {
			return nil, err
		}
		if el.options == nil {
			return nil, errSJSON
		}
		options, err := (&scanner{b: el.options}).str()
		if err != nil {
			return nil, err
		}
		if bytes.IndexByte([]byte(pattern), 0) >= 0 || bytes.IndexByte([]byte(options), 0) >= 0 {
			return nil, errSJSON
		}
		if dst, err = appendHeader(dst, bson.TypeRegex, key); err != nil {
			return nil, err
		}
		dst = append(append(dst, pattern...), 0)
		return append(append(dst, options...), 0), nil
	}
	// "null" with a value that is not null, or a type this does not know
	return nil, errSJSON
}

// parseSchema reads a schema {"p": {…}, "$k": […]}: the elems by field
// and the fields' order.
func parseSchema(text []byte) (props []member, keys [][]byte, err error) {
	s := scanner{b: text}
	members, err := s.object()
	if err != nil {
		return nil, nil, err
	}
	for i, m := range members {
		if repeatedLater(members, i) {
			continue
		}
		switch string(m.key) {
		case "p":
			if string(m.val) == "null" {
				continue
			}
			if props, err = (&scanner{b: m.val}).object(); err != nil {
				return nil, nil, err
			}
		case "$k":
			if string(m.val) == "null" {
				continue
			}
			ks, err := (&scanner{b: m.val}).array()
			if err != nil {
				return nil, nil, err
			}
			keys = make([][]byte, len(ks))
			for j, k := range ks {
				if keys[j], err = (&scanner{b: k}).strBytes(); err != nil {
					return nil, nil, err
				}
			}
		default:
			return nil, nil, errSJSON
		}
	}
	return props, keys, nil
}

// parseElem reads one elem of a schema (without collecting its
// members: it runs once per value).
func parseElem(text []byte) (sjsonElem, error) {
	var el sjsonElem
	s := scanner{b: text}
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return el, errSJSON
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return el, s.end()
	}
	for {
		s.ws()
		k, err := s.keyToken()
		if err != nil {
			return el, err
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return el, errSJSON
		}
		s.i++
		s.ws()
		start := s.i
		if err := s.skip(0); err != nil {
			return el, err
		}
		v := s.b[start:s.i]
		// a repeated member's last value counts, as in a decoded map
		var set *[]byte
		switch string(k) {
		case "t":
			if el.typ, err = (&scanner{b: v}).strBytes(); err != nil {
				return el, err
			}
		case "$s":
			set = &el.schema
		case "i":
			set = &el.items
		case "s":
			set = &el.subtype
		case "o":
			set = &el.options
		default:
			return el, errSJSON
		}
		if set != nil {
			*set = nil
			if string(v) != "null" {
				*set = v
			}
		}
		s.ws()
		if s.i >= len(s.b) {
			return el, errSJSON
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return el, s.end()
		default:
			return el, errSJSON
		}
	}
}

// lookupMember is the value of key among members: the last one, as a
// Go map decoded from the JSON keeps it.
func lookupMember(members []member, key []byte) ([]byte, bool) {
	for i := len(members) - 1; i >= 0; i-- {
		if bytes.Equal(members[i].key, key) {
			return members[i].val, true
		}
	}
	return nil, false
}

func repeatedLater(members []member, i int) bool {
	for _, m := range members[i+1:] {
		if bytes.Equal(m.key, members[i].key) {
			return true
		}
	}
	return false
}

// scanner reads JSON text, strictly: what encoding/json refuses it
// refuses.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// end checks that nothing but the value was given.
func (s *scanner) end() error {
	if s.i != len(s.b) {
		return errSJSON
	}
	return nil
}

func (s *scanner) lit(l string) bool {
	if len(s.b)-s.i >= len(l) && string(s.b[s.i:s.i+len(l)]) == l {
		s.i += len(l)
		return s.end() == nil
	}
	return false
}

// object reads an object whose members' values are left as text.
func (s *scanner) object() ([]member, error) {
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, errSJSON
	}
	s.i++
	var out []member
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return out, nil
	}
	for {
		s.ws()
		k, err := s.keyToken()
		if err != nil {
			return nil, err
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return nil, errSJSON
		}
		s.i++
		s.ws()
		start := s.i
		if err := s.skip(0); err != nil {
			return nil, err
		}
		out = append(out, member{key: k, val: s.b[start:s.i]})
		s.ws()
		if s.i >= len(s.b) {
			return nil, errSJSON
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return out, nil
		default:
			return nil, errSJSON
		}
	}
}

// array reads an array whose items are left as text.
func (s *scanner) array() ([][]byte, error) {
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return nil, errSJSON
	}
	s.i++
	out := [][]byte{}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return out, nil
	}
	for {
		s.ws()
		start := s.i
		if err := s.skip(0); err != nil {
			return nil, err
		}
		out = append(out, s.b[start:s.i])
		s.ws()
		if s.i >= len(s.b) {
			return nil, errSJSON
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return out, nil
		default:
			return nil, errSJSON
		}
	}
}

// maxDepth bounds the nesting skip follows (encoding/json's own bound).
const maxDepth = 10000

// skip passes over one value, checking its syntax.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth || s.i >= len(s.b) {
		return errSJSON
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return nil
		}
		for {
			s.ws()
			if _, _, err := s.strSpan(); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return errSJSON
			}
			s.i++
			s.ws()
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) {
				return errSJSON
			}
			if s.b[s.i] == '}' {
				s.i++
				return nil
			}
			if s.b[s.i] != ',' {
				return errSJSON
			}
			s.i++
		}
	case c == '[':
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		for {
			s.ws()
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) {
				return errSJSON
			}
			if s.b[s.i] == ']' {
				s.i++
				return nil
			}
			if s.b[s.i] != ',' {
				return errSJSON
			}
			s.i++
		}
	case c == '"':
		_, _, err := s.strSpan()
		return err
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.numberSpan()
		return err
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	}
	return errSJSON
}

func (s *scanner) word(w string) error {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return nil
	}
	return errSJSON
}

// strSpecial marks the bytes a string token's scan stops at: the quote,
// the backslash, control characters (not allowed) and bytes of non-ASCII
// characters (checked as UTF-8).
var strSpecial = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80
	}
	return t
}()

// strSpan passes over a string token; plain: its content is its text
// as is (no escapes, valid UTF-8).
func (s *scanner) strSpan() (tok []byte, plain bool, err error) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, errSJSON
	}
	start := s.i
	s.i++
	plain = true
	ascii := true
	for s.i < len(s.b) {
		for s.i < len(s.b) && !strSpecial[s.b[s.i]] {
			s.i++
		}
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			tok = s.b[start:s.i]
			if plain && !ascii && !utf8.Valid(tok) {
				plain = false
			}
			return tok, plain, nil
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(s.b) {
				return nil, false, errSJSON
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return nil, false, errSJSON
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return nil, false, errSJSON
					}
				}
				s.i += 5
			default:
				return nil, false, errSJSON
			}
		case c < 0x20:
			return nil, false, errSJSON
		default:
			ascii = false
			s.i++
		}
	}
	return nil, false, errSJSON
}

// strToken reads a string token's value (as encoding/json decodes it).
func (s *scanner) strToken() (string, error) {
	tok, plain, err := s.strSpan()
	if err != nil {
		return "", err
	}
	if plain {
		return string(tok[1 : len(tok)-1]), nil
	}
	var out string
	if err := json.Unmarshal(tok, &out); err != nil {
		return "", errSJSON
	}
	return out, nil
}

// keyToken is strToken without a copy when the string needs no
// unescaping.
func (s *scanner) keyToken() ([]byte, error) {
	tok, plain, err := s.strSpan()
	if err != nil {
		return nil, err
	}
	if plain {
		return tok[1 : len(tok)-1], nil
	}
	var out string
	if err := json.Unmarshal(tok, &out); err != nil {
		return nil, errSJSON
	}
	return []byte(out), nil
}

// str reads a value that must be a string and nothing else.
func (s *scanner) str() (string, error) {
	v, err := s.strToken()
	if err != nil {
		return "", err
	}
	return v, s.end()
}

// strBytes is str without a copy when the string needs no unescaping.
func (s *scanner) strBytes() ([]byte, error) {
	b, err := s.keyToken()
	if err != nil {
		return nil, err
	}
	return b, s.end()
}

// numberSpan passes over a number token, checking JSON's grammar.
func (s *scanner) numberSpan() ([]byte, error) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case digits() == 0:
		return nil, errSJSON
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, errSJSON
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, errSJSON
		}
	}
	return s.b[start:s.i], nil
}

// number reads a value that must be a number and nothing else.
func (s *scanner) number() ([]byte, error) {
	lit, err := s.numberSpan()
	if err != nil {
		return nil, err
	}
	return lit, s.end()
}

// integer reads a number into an integer of bits bits, as encoding/json
// does: a fraction or exponent, or a value out of range, is refused.
func (s *scanner) integer(bits int) (int64, error) {
	lit, err := s.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(lit), 10, bits)
	if err != nil {
		return 0, errSJSON
	}
	return n, nil
}
