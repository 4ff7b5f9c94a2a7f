package notify

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Record is implemented by the pointer of every stored record type. Stores
// work through it so that one generic implementation serves all collections.
type Record interface {
	// Fields returns the stored form: "id" first, then the known fields in
	// the original's schema order, then Extra.
	Fields() Fields
	// SetFields replaces the record with client input, strictly: a known
	// field of the wrong type is an error naming the field.
	SetFields(Fields) error
	// LoadFields replaces the record with stored data, leniently: a known
	// field of an unexpected type is kept in Extra (strict records drop it).
	LoadFields(Fields)
	// ApplyDefaults fills the original's schema defaults in unset fields.
	ApplyDefaults()
}

// Meta holds the fields every record has.
type Meta struct {
	ID        ID
	Created   time.Time
	Updated   time.Time
	CreatedBy *UserProfile
	UpdatedBy *UserProfile
}

func (m *Meta) encodeHead(e *encoder) {
	if !m.ID.IsZero() {
		e.put("id", m.ID)
	}
}

func (m *Meta) encodeTail(e *encoder) {
	e.time("created", m.Created)
	e.time("updated", m.Updated)
	if m.CreatedBy != nil {
		e.put("createdBy", m.CreatedBy.Fields())
	}
	if m.UpdatedBy != nil {
		e.put("updatedBy", m.UpdatedBy.Fields())
	}
}

// decode reads a Meta field and reports whether key was one.
func (m *Meta) decode(d *decoder, f Field) bool {
	switch f.Key {
	case "id":
		d.id(f, &m.ID)
	case "created":
		d.time(f, &m.Created)
	case "updated":
		d.time(f, &m.Updated)
	case "createdBy":
		d.profile(f, &m.CreatedBy)
	case "updatedBy":
		d.profile(f, &m.UpdatedBy)
	default:
		return false
	}
	return true
}

// FieldError is a client input error on one field; the API turns it into a
// 400 whose message names the field.
type FieldError struct {
	Field string
	Rule  string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Rule }

// encoder builds a record's Fields.
type encoder struct{ f Fields }

func (e *encoder) put(k string, v any) { e.f = append(e.f, Field{k, v}) }

func (e *encoder) str(k, v string) {
	if v != "" {
		e.put(k, v)
	}
}

func (e *encoder) time(k string, t time.Time) {
	if !t.IsZero() {
		e.put(k, t.UTC())
	}
}

func (e *encoder) any(k string, v any) {
	if v != nil {
		e.put(k, v)
	}
}

func (e *encoder) strings(k string, v []string) {
	if v == nil {
		return
	}
	arr := make([]any, len(v))
	for i, s := range v {
		arr[i] = s
	}
	e.put(k, arr)
}

func (e *encoder) extra(x Fields) {
	// Only the known fields, put before the extras, are looked at: the
	// extras' own keys are distinct (the decoder kept them so), and
	// searching them too would make encoding quadratic in their number.
	known := e.f[:len(e.f):len(e.f)]
	for _, f := range x {
		if known.Has(f.Key) {
			continue // a known field always wins over a stray copy
		}
		e.put(f.Key, f.Value)
	}
}

// decoder reads Fields into typed fields. strict is client input;
// schemaless says whether unknown fields are kept.
type decoder struct {
	strict     bool
	schemaless bool
	extra      *Fields
	extraKeys  keyIndex
	errs       []error
}

// keep puts a field the record has no place for into extra.
func (d *decoder) keep(key string, v any) {
	*d.extra = d.extraKeys.set(*d.extra, key, v)
}

func newDecoder(strict, schemaless bool, extra *Fields) *decoder {
	return &decoder{strict: strict, schemaless: schemaless, extra: extra}
}

func (d *decoder) err() error { return errors.Join(d.errs...) }

// mismatch handles a known field whose value has the wrong type.
func (d *decoder) mismatch(f Field, rule string) {
	if d.strict {
		d.errs = append(d.errs, &FieldError{f.Key, rule})
		return
	}
	if d.schemaless {
		d.keep(f.Key, f.Value)
	}
}

func (d *decoder) unknown(f Field) {
	switch f.Key {
	case "_id", "__v":
		return // the id travels as "id"; the version key is never kept
	}
	if d.schemaless {
		d.keep(f.Key, f.Value)
	}
}

// null reports whether f is null. Client nulls mean "unset"; stored nulls
// are kept as they are.
func (d *decoder) null(f Field) bool {
	if f.Value != nil {
		return false
	}
	if !d.strict && d.schemaless {
		d.keep(f.Key, nil)
	}
	return true
}

func (d *decoder) str(f Field, dst *string) {
	if d.null(f) {
		return
	}
	if s, ok := f.Value.(string); ok {
		*dst = s
		return
	}
	d.mismatch(f, "must be a string")
}

func (d *decoder) boolean(f Field, dst *bool) {
	if d.null(f) {
		return
	}
	if b, ok := f.Value.(bool); ok {
		*dst = b
		return
	}
	d.mismatch(f, "must be a boolean")
}

func (d *decoder) integer(f Field, dst *int64) {
	if d.null(f) {
		return
	}
	if n, ok := wholeNumber(f.Value); ok {
		*dst = n
		return
	}
	d.mismatch(f, "must be an integer")
}

func (d *decoder) optInteger(f Field, dst **int64) {
	if d.null(f) {
		return
	}
	if n, ok := wholeNumber(f.Value); ok {
		*dst = &n
		return
	}
	d.mismatch(f, "must be an integer")
}

func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n), true
		}
	}
	return 0, false
}

func (d *decoder) time(f Field, dst *time.Time) {
	if d.null(f) {
		return
	}
	if t, ok := timeValue(f.Value); ok {
		*dst = t
		return
	}
	if s, ok := f.Value.(string); ok && d.strict {
		if _, err := ParseTime(s); err != nil {
			d.errs = append(d.errs, &FieldError{f.Key, err.Error()})
			return
		}
	}
	d.mismatch(f, ErrTimeFormat.Error())
}

func (d *decoder) optTime(f Field, dst **time.Time) {
	if f.Value == nil {
		*dst = nil
		return
	}
	var t time.Time
	d.time(f, &t)
	if !t.IsZero() {
		*dst = &t
	}
}

// timeValue accepts a stored date or a date string in the API's format.
func timeValue(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), true
	case string:
		if p, err := ParseTime(t); err == nil {
			return p, true
		}
	}
	return time.Time{}, false
}

func (d *decoder) id(f Field, dst *ID) {
	if d.null(f) {
		return
	}
	switch v := f.Value.(type) {
	case ID:
		*dst = v
		return
	case string:
		if id, err := ParseID(v); err == nil {
			*dst = id
			return
		}
	}
	d.mismatch(f, "must be a 24-hex-digit ObjectId")
}

func (d *decoder) profile(f Field, dst **UserProfile) {
	if d.null(f) {
		return
	}
	if p, ok := profileFrom(f.Value); ok {
		*dst = p
		return
	}
	d.mismatch(f, "must be {securityId, authnStrategy, role}")
}

func (d *decoder) doc(f Field, dst *Fields) {
	if d.null(f) {
		return
	}
	if doc, ok := f.Value.(Fields); ok {
		*dst = doc
		return
	}
	d.mismatch(f, "must be an object")
}

func (d *decoder) strings(f Field, dst *[]string) {
	if d.null(f) {
		return
	}
	arr, ok := f.Value.([]any)
	if !ok {
		d.mismatch(f, "must be an array of strings")
		return
	}
	out := make([]string, 0, len(arr))
	for _, v := range arr {
		switch s := v.(type) {
		case string:
			out = append(out, s)
		case ID:
			// Older data may hold ObjectIds where the original now writes
			// their hex strings; both mean the same record.
			out = append(out, s.Hex())
		default:
			d.mismatch(f, "must be an array of strings")
			return
		}
	}
	*dst = out
}

// decodeJSON is UnmarshalJSON for records.
func decodeJSON(b []byte, r Record) error {
	v, err := DecodeJSONValue(b)
	if err != nil {
		return err
	}
	doc, ok := v.(Fields)
	if !ok {
		return fmt.Errorf("expected a JSON object, got %s", jsonKind(v))
	}
	return r.SetFields(doc)
}
