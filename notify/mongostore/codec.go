package mongostore

import (
	"fmt"
	"reflect"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
)

// toBSON converts a value for the driver: notify.Fields become bson.D (in
// order), notify.ID an ObjectID, and plain maps, slices and bson documents
// are walked so that notify values nested in a caller's filter are
// converted too.
func toBSON(v any) any {
	switch x := v.(type) {
	case nil, bool, int32, int64, float64, string, bson.ObjectID, bson.DateTime, bson.Regex, bson.Binary, bson.Decimal128:
		return v
	case int:
		return int64(x)
	case time.Time:
		return bson.NewDateTimeFromTime(x)
	case notify.ID:
		return bson.ObjectID(x)
	case notify.Fields:
		d := make(bson.D, len(x))
		for i, e := range x {
			d[i] = bson.E{Key: e.Key, Value: toBSON(e.Value)}
		}
		return d
	case []byte:
		return bson.Binary{Data: x}
	case bson.D:
		d := make(bson.D, len(x))
		for i, e := range x {
			d[i] = bson.E{Key: e.Key, Value: toBSON(e.Value)}
		}
		return d
	case bson.M:
		m := make(bson.M, len(x))
		for k, e := range x {
			m[k] = toBSON(e)
		}
		return m
	case map[string]any:
		m := make(bson.M, len(x))
		for k, e := range x {
			m[k] = toBSON(e)
		}
		return m
	case bson.A:
		a := make(bson.A, len(x))
		for i, e := range x {
			a[i] = toBSON(e)
		}
		return a
	case []any:
		a := make(bson.A, len(x))
		for i, e := range x {
			a[i] = toBSON(e)
		}
		return a
	case []string:
		a := make(bson.A, len(x))
		for i, e := range x {
			a[i] = e
		}
		return a
	}
	// Other slices (e.g. []notify.ID) are walked element by element.
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		a := make(bson.A, rv.Len())
		for i := range a {
			a[i] = toBSON(rv.Index(i).Interface())
		}
		return a
	}
	return v
}

// asDoc returns an ordered view of a filter, update or sort document given
// as bson.D, bson.M, map[string]any or notify.Fields. Maps are unordered,
// which does not matter for filters and updates.
func asDoc(v any) (bson.D, error) {
	switch x := v.(type) {
	case nil:
		return bson.D{}, nil
	case bson.D:
		return x, nil
	case notify.Fields:
		return toBSON(x).(bson.D), nil
	case bson.M:
		return mapDoc(x), nil
	case map[string]any:
		return mapDoc(x), nil
	case bson.Raw:
		var d bson.D
		if err := bson.Unmarshal(x, &d); err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil, fmt.Errorf("mongostore: a document must be bson.D, bson.M, map[string]any or notify.Fields, not %T", v)
}

func mapDoc(m map[string]any) bson.D {
	d := make(bson.D, 0, len(m))
	for k, v := range m {
		d = append(d, bson.E{Key: k, Value: v})
	}
	return d
}

// fromRaw converts a stored document to notify.Fields, renaming _id to id.
func fromRaw(raw bson.Raw) (notify.Fields, error) {
	f, err := rawDoc(raw)
	if err != nil {
		return nil, err
	}
	for i := range f {
		if f[i].Key == "_id" {
			f[i].Key = "id"
		}
	}
	return f, nil
}

func rawDoc(raw bson.Raw) (notify.Fields, error) {
	elems, err := raw.Elements()
	if err != nil {
		return nil, err
	}
	f := make(notify.Fields, 0, len(elems))
	for _, e := range elems {
		v, err := rawValue(e.Value())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Key(), err)
		}
		f = append(f, notify.Field{Key: e.Key(), Value: v})
	}
	return f, nil
}

// rawValue maps BSON types onto notify.Fields values. Types the service never
// writes (decimal, regex, timestamps, code) are kept in their closest form:
// what a JSON client of the original would have seen.
func rawValue(v bson.RawValue) (any, error) {
	switch v.Type {
	case bson.TypeDouble:
		return v.Double(), nil
	case bson.TypeString:
		return v.StringValue(), nil
	case bson.TypeEmbeddedDocument:
		return rawDoc(v.Document())
	case bson.TypeArray:
		vals, err := v.Array().Values()
		if err != nil {
			return nil, err
		}
		arr := make([]any, len(vals))
		for i, e := range vals {
			if arr[i], err = rawValue(e); err != nil {
				return nil, err
			}
		}
		return arr, nil
	case bson.TypeBinary:
		_, data := v.Binary()
		return data, nil
	case bson.TypeObjectID:
		return notify.ID(v.ObjectID()), nil
	case bson.TypeBoolean:
		return v.Boolean(), nil
	case bson.TypeDateTime:
		return time.UnixMilli(v.DateTime()).UTC(), nil
	case bson.TypeNull, bson.TypeUndefined:
		return nil, nil
	case bson.TypeInt32:
		return v.Int32(), nil
	case bson.TypeInt64:
		return v.Int64(), nil
	case bson.TypeDecimal128:
		return v.Decimal128().String(), nil
	case bson.TypeRegex:
		p, _ := v.Regex()
		return p, nil
	case bson.TypeTimestamp:
		t, _ := v.Timestamp()
		return time.Unix(int64(t), 0).UTC(), nil
	case bson.TypeJavaScript:
		return v.JavaScript(), nil
	case bson.TypeSymbol:
		return v.Symbol(), nil
	default:
		return v.String(), nil
	}
}

// recordDoc is the stored form of a record: Fields with id renamed _id.
func recordDoc(f notify.Fields) bson.D {
	d := make(bson.D, 0, len(f))
	for _, e := range f {
		key := e.Key
		if key == "id" {
			key = "_id"
		}
		d = append(d, bson.E{Key: key, Value: toBSON(e.Value)})
	}
	return d
}
