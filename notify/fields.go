package notify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Field is one key and value of a [Fields] document.
type Field struct {
	Key   string
	Value any
}

// Fields is an ordered document: the free-form parts of a record (`data`,
// `message`, `confirmationRequest`, configuration values) and the unknown
// fields clients send to schemaless records. Order is kept because MongoDB
// keeps it and clients see it.
//
// Values are limited to a small, driver-independent set so that a document
// read from MongoDB can be written back and shown as JSON without loss:
//
//	nil, bool, int32, int64, float64, string, time.Time, ID, []byte,
//	Fields (a nested document), []any (an array of these values)
//
// Decoding JSON gives nil, bool, string, Fields, []any and numbers the way the
// original (Node.js) writes them to BSON: whole numbers within the int32
// range become int32, every other number float64. Strings stay strings even
// when they look like dates, as in the original's Mixed fields.
type Fields []Field

// NewFields builds a document from alternating keys and values:
// NewFields("serviceName", "x", "state", "confirmed"). (Outside this
// package go vet wants keyed Field literals; this reads better.) It panics
// on an odd count or a key that is not a string: a programming error.
func NewFields(kv ...any) Fields {
	if len(kv)%2 != 0 {
		panic("notify.NewFields: odd number of arguments")
	}
	f := make(Fields, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			panic(fmt.Sprintf("notify.NewFields: key %v is not a string", kv[i]))
		}
		f = append(f, Field{Key: k, Value: kv[i+1]})
	}
	return f
}

// Get returns the value of key and whether it is present.
func (f Fields) Get(key string) (any, bool) {
	for _, e := range f {
		if e.Key == key {
			return e.Value, true
		}
	}
	return nil, false
}

// Has reports whether key is present.
func (f Fields) Has(key string) bool {
	_, ok := f.Get(key)
	return ok
}

// String returns the value of key when it is a string.
func (f Fields) String(key string) (string, bool) {
	v, _ := f.Get(key)
	s, ok := v.(string)
	return s, ok
}

// Bool returns the value of key when it is a bool.
func (f Fields) Bool(key string) (bool, bool) {
	v, _ := f.Get(key)
	b, ok := v.(bool)
	return b, ok
}

// Set replaces the value of key in place, or appends the key.
func (f *Fields) Set(key string, value any) {
	for i := range *f {
		if (*f)[i].Key == key {
			(*f)[i].Value = value
			return
		}
	}
	*f = append(*f, Field{key, value})
}

// Merge returns f with every field of patch set in it, in place or
// appended, as Set would one by one, in time linear in both.
func (f Fields) Merge(patch Fields) Fields {
	var keys keyIndex
	keys.build(f)
	for _, e := range patch {
		f = keys.set(f, e.Key, e.Value)
	}
	return f
}

// keyIndex finds the keys of a document being built. Small documents are
// searched; from indexAfter keys on a map finds them, so that building a
// document of n keys costs O(n), not O(n²), whoever chose the keys.
type keyIndex struct{ pos map[string]int }

const indexAfter = 16

func (k *keyIndex) build(f Fields) {
	if len(f) <= indexAfter {
		return
	}
	k.pos = make(map[string]int, len(f))
	for i, e := range f {
		if _, dup := k.pos[e.Key]; !dup {
			k.pos[e.Key] = i
		}
	}
}

// set replaces the value of key in f or appends it, and returns f.
func (k *keyIndex) set(f Fields, key string, v any) Fields {
	if k.pos != nil {
		if i, ok := k.pos[key]; ok {
			f[i].Value = v
			return f
		}
		k.pos[key] = len(f)
		return append(f, Field{key, v})
	}
	for i := range f {
		if f[i].Key == key {
			f[i].Value = v
			return f
		}
	}
	f = append(f, Field{key, v})
	if len(f) > indexAfter {
		k.build(f)
	}
	return f
}

// Delete removes key and reports whether it was present.
func (f *Fields) Delete(key string) bool {
	for i := range *f {
		if (*f)[i].Key == key {
			*f = append((*f)[:i:i], (*f)[i+1:]...)
			return true
		}
	}
	return false
}

// Keys returns the keys in order.
func (f Fields) Keys() []string {
	keys := make([]string, len(f))
	for i, e := range f {
		keys[i] = e.Key
	}
	return keys
}

// Clone returns a deep copy, so that callers can change nested documents
// without touching the original.
func (f Fields) Clone() Fields {
	if f == nil {
		return nil
	}
	out := make(Fields, len(f))
	for i, e := range f {
		out[i] = Field{e.Key, CloneValue(e.Value)}
	}
	return out
}

// CloneValue deep-copies a [Fields] value.
func CloneValue(v any) any {
	switch x := v.(type) {
	case Fields:
		return x.Clone()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = CloneValue(e)
		}
		return out
	case []byte:
		return bytes.Clone(x)
	default:
		return v
	}
}

// Map returns the document as plain Go maps and slices (nested Fields become
// map[string]any), for code such as JMESPath evaluation that wants them.
// Times become their wire strings and IDs their hex, as a client sees them.
func (f Fields) Map() map[string]any {
	m := make(map[string]any, len(f))
	for _, e := range f {
		m[e.Key] = PlainValue(e.Value)
	}
	return m
}

// PlainValue converts a Fields value to plain Go values as encoding/json would
// decode its JSON form: Fields → map[string]any, numbers → float64, times →
// RFC 3339 strings, IDs → hex strings.
func PlainValue(v any) any {
	switch x := v.(type) {
	case Fields:
		return x.Map()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = PlainValue(e)
		}
		return out
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case time.Time:
		return FormatTime(x)
	case ID:
		return x.Hex()
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	default:
		return v
	}
}

// FromPlain converts plain Go values (map[string]any, []any, float64, …, as
// encoding/json decodes them) to Fields values. Map keys are sorted, since a
// Go map has no order.
func FromPlain(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return DecodeJSONValue(b)
}

// MarshalJSON writes the document in order.
func (f Fields) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("{}"), nil
	}
	var buf bytes.Buffer
	if err := writeObject(&buf, f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a JSON object, keeping key order.
func (f *Fields) UnmarshalJSON(b []byte) error {
	v, err := DecodeJSONValue(b)
	if err != nil {
		return err
	}
	doc, ok := v.(Fields)
	if !ok {
		return fmt.Errorf("expected a JSON object, got %s", jsonKind(v))
	}
	*f = doc
	return nil
}

// MaxDepth is how deeply objects and arrays may nest in a decoded JSON
// value. MongoDB refuses documents nested more than 100 levels (the
// embedded store fails on far less, with a server error); 64 leaves room
// for the record around client data such as data or message, and is far
// beyond what any client sends.
const MaxDepth = 64

// ErrTooDeep is a JSON value nested more than MaxDepth levels.
var ErrTooDeep = fmt.Errorf("objects and arrays may nest at most %d levels deep", MaxDepth)

// MaxKeys is how many keys one object of a decoded JSON value may hold.
// The embedded store looks keys up one by one in each document it reads
// and writes, so an object of 80,000 keys takes it minutes; a thousand
// keys cost it milliseconds, and no record of the service needs more.
const MaxKeys = 1000

// ErrTooManyKeys is a JSON object with more than MaxKeys keys.
var ErrTooManyKeys = fmt.Errorf("an object may hold at most %d keys", MaxKeys)

// DecodeJSONValue decodes one JSON value into a Fields value (see [Fields]).
// Its cost is linear in the size of b: a repeated key is found through an
// index, not by searching the object. A repeated key keeps its last value,
// in the place of its first, as JSON.parse (and so the original) does. A
// value nested more than MaxDepth levels is ErrTooDeep, an object of more
// than MaxKeys keys ErrTooManyKeys.
func DecodeJSONValue(b []byte) (any, error) {
	p := &parser{b: b}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i != len(b) {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

// numberValue follows the Node.js BSON serializer: whole numbers in the int32
// range are int32, everything else a double.
func numberValue(n json.Number) (any, error) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
		return int32(i), nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return nil, fmt.Errorf("number %.40s: %w", n, err)
	}
	if f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32 {
		return int32(f), nil
	}
	return f, nil
}

func writeObject(buf *bytes.Buffer, f Fields) error {
	buf.WriteByte('{')
	for i, e := range f {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(e.Key)
		buf.Write(k)
		buf.WriteByte(':')
		if err := writeValue(buf, e.Value); err != nil {
			return fmt.Errorf("%s: %w", e.Key, err)
		}
	}
	buf.WriteByte('}')
	return nil
}

func writeValue(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case Fields:
		return writeObject(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeValue(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case time.Time:
		buf.WriteByte('"')
		buf.WriteString(FormatTime(x))
		buf.WriteByte('"')
	case ID:
		buf.WriteByte('"')
		buf.WriteString(x.Hex())
		buf.WriteByte('"')
	case float64:
		// JSON has no NaN or Infinity; JSON.stringify writes null for them.
		if math.IsNaN(x) || math.IsInf(x, 0) {
			buf.WriteString("null")
			return nil
		}
		b, _ := json.Marshal(x)
		buf.Write(b)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case Fields:
		return "an object"
	case []any:
		return "an array"
	case int32, int64, float64:
		return "a number"
	case time.Time:
		return "a date"
	case ID:
		return "an ObjectId"
	default:
		return fmt.Sprintf("%T", v)
	}
}
