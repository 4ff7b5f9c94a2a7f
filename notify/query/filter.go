package query

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Filter is a parsed filter parameter, ready for the MongoDB driver:
// Where for Find's filter, Fields for SetProjection, Order for SetSort,
// Skip and Limit for SetSkip and SetLimit.
type Filter struct {
	Where  bson.D // nil: every record
	Fields bson.D // nil: every field
	Order  bson.D // nil: natural order
	Skip   int64
	Limit  int64 // 0: no limit
}

// ParseFilter reads the filter parameter from q for the collection
// described by s. An absent or empty filter gives the zero Filter.
func ParseFilter(q url.Values, s *Schema) (*Filter, error) {
	v, ok, err := param(q, "filter")
	if err != nil {
		return nil, err
	}
	f := &Filter{}
	if !ok || v == nil {
		return f, nil
	}
	o, isObj := v.(object)
	if !isObj {
		return nil, errorf("filter", "must be a JSON object with where, fields, order, skip and limit")
	}
	var skip, offset any
	for _, m := range o {
		p := "filter." + m.key
		switch m.key {
		case "where":
			f.Where, err = whereConv{s}.where(p, m.val)
		case "fields":
			f.Fields, err = fields(p, m.val, s)
		case "order":
			f.Order, err = order(p, m.val, s)
			if err == nil && len(f.Order) > maxSortKeys {
				err = errorf(p, "sorts on %d fields; at most %d are allowed", len(f.Order), maxSortKeys)
			}
		case "skip":
			skip = m.val
			f.Skip, err = count(p, m.val)
		case "offset":
			offset = m.val
		case "limit":
			f.Limit, err = count(p, m.val)
		case "include":
			err = errorf(p, "is not supported: related records are not returned through filters")
		default:
			err = errorf(p, "is not a filter key; use where, fields, order, skip or limit")
		}
		if err != nil {
			return nil, err
		}
	}
	// offset is the LoopBack name of skip, still documented by the
	// original's filter type.
	if offset != nil && skip == nil {
		if f.Skip, err = count("filter.offset", offset); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// count reads skip or limit: a non-negative integer, as a JSON number or
// text.
func count(path string, v any) (int64, error) {
	if v == nil {
		return 0, nil
	}
	var s string
	switch t := v.(type) {
	case json.Number:
		s = string(t)
	case string:
		s = strings.TrimSpace(t)
	default:
		return 0, errorf(path, "must be a non-negative integer")
	}
	n, err := toInt(path, s)
	if err != nil || n < 0 {
		return 0, errorf(path, "must be a non-negative integer, got %s", s)
	}
	return n, nil
}

var directions = map[string]int32{"asc": 1, "ascending": 1, "1": 1, "desc": -1, "descending": -1, "-1": -1}

func direction(v any) (int32, bool) {
	var s string
	switch t := v.(type) {
	case string:
		s = strings.ToLower(strings.TrimSpace(t))
	case json.Number:
		s = string(t)
	default:
		return 0, false
	}
	d, ok := directions[s]
	return d, ok
}

func sortField(path, name string, s *Schema) (string, error) {
	if err := checkFieldName(path, name); err != nil {
		return "", err
	}
	if err := s.visible(path, name); err != nil {
		return "", err
	}
	if name == "id" {
		return "_id", nil
	}
	return name, nil
}

// maxSortKeys is MongoDB's limit on the fields of one sort; the embedded
// store fails with a server error beyond it.
const maxSortKeys = 32

const orderForms = `[["field","asc"],["other","desc"]] or "field"`

// legacyOrder reports whether s is the "field ASC" form of versions
// before 5, and returns the field and direction.
func legacyOrder(s string) (field, dir string, ok bool) {
	parts := strings.Fields(s)
	if len(parts) < 2 {
		return "", "", false
	}
	last := strings.ToLower(parts[len(parts)-1])
	if last != "asc" && last != "desc" && last != "ascending" && last != "descending" {
		return "", "", false
	}
	return strings.Join(parts[:len(parts)-1], " "), last, true
}

// order converts the order value into a sort document.
func order(path string, v any, s *Schema) (bson.D, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		if f, dir, ok := legacyOrder(t); ok {
			return nil, errorf(path, "the form %q of versions before 5 is not supported; use [[%q,%q]] or %q", t, f, dir, f)
		}
		var d bson.D
		for _, name := range strings.Fields(t) {
			dir := int32(1)
			if strings.HasPrefix(name, "-") {
				dir, name = -1, name[1:]
			} else if strings.HasPrefix(name, "+") {
				name = name[1:]
			}
			field, err := sortField(path, name, s)
			if err != nil {
				return nil, err
			}
			d = append(d, bson.E{Key: field, Value: dir})
		}
		return d, nil
	case []any:
		d := make(bson.D, 0, len(t))
		for i, e := range t {
			p := path + "[" + strconv.Itoa(i) + "]"
			switch pair := e.(type) {
			case string:
				if f, dir, ok := legacyOrder(pair); ok {
					return nil, errorf(p, "the form %q of versions before 5 is not supported; use [[%q,%q]] or %q", pair, f, dir, f)
				}
				return nil, errorf(path, "must be %s; each entry a [field, direction] pair", orderForms)
			case []any:
				if len(pair) != 2 {
					return nil, errorf(p, "must be a [field, direction] pair like [\"serviceName\",\"asc\"]")
				}
				name, ok := pair[0].(string)
				if !ok {
					return nil, errorf(p, "must start with a field name")
				}
				field, err := sortField(p, name, s)
				if err != nil {
					return nil, err
				}
				dir, ok := direction(pair[1])
				if !ok {
					return nil, errorf(p, "direction must be asc or desc (or 1, -1)")
				}
				d = append(d, bson.E{Key: field, Value: dir})
			default:
				return nil, errorf(path, "must be %s", orderForms)
			}
		}
		return d, nil
	case object:
		d := make(bson.D, 0, len(t))
		for _, m := range t {
			p := path + "." + m.key
			field, err := sortField(p, m.key, s)
			if err != nil {
				return nil, err
			}
			if mo, ok := m.val.(object); ok {
				// {"score": {"$meta": "textScore"}} sorts by $text relevance.
				if meta, ok := mo.get("$meta"); ok && len(mo) == 1 && meta == "textScore" && !s.hides() {
					d = append(d, bson.E{Key: field, Value: bson.D{{Key: "$meta", Value: "textScore"}}})
					continue
				}
			}
			dir, ok := direction(m.val)
			if !ok {
				return nil, errorf(p, "direction must be asc or desc (or 1, -1)")
			}
			d = append(d, bson.E{Key: field, Value: dir})
		}
		return d, nil
	}
	return nil, errorf(path, "must be %s", orderForms)
}

// fields converts the fields value into a projection.
func fields(path string, v any, s *Schema) (bson.D, error) {
	var d bson.D
	add := func(p, name string, include bool) error {
		if err := checkFieldName(p, name); err != nil {
			return err
		}
		if err := s.visible(p, name); err != nil {
			return err
		}
		if name == "id" {
			name = "_id"
		}
		val := int32(0)
		if include {
			val = 1
		}
		d = append(d, bson.E{Key: name, Value: val})
		return nil
	}
	names := func(p string, list []string) error {
		for _, n := range list {
			include := true
			if strings.HasPrefix(n, "-") {
				include, n = false, n[1:]
			} else if strings.HasPrefix(n, "+") {
				n = n[1:]
			}
			if err := add(p, n, include); err != nil {
				return err
			}
		}
		return nil
	}
	switch t := v.(type) {
	case nil:
		return nil, nil
	case string:
		if err := names(path, strings.Fields(t)); err != nil {
			return nil, err
		}
	case []any:
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, errorf(path+"["+strconv.Itoa(i)+"]", "must be a field name")
			}
			if err := names(path+"["+strconv.Itoa(i)+"]", strings.Fields(s)); err != nil {
				return nil, err
			}
		}
	case object:
		for _, m := range t {
			p := path + "." + m.key
			include, err := toBool(p, m.val)
			if err != nil {
				return nil, errorf(p, "must be true or false (or 1, 0)")
			}
			if err := add(p, m.key, include); err != nil {
				return nil, err
			}
		}
	default:
		return nil, errorf(path, `must be an object like {"name":true}, a list of field names or a field name`)
	}
	// MongoDB refuses a projection that both includes and excludes, except
	// for excluding _id.
	var inc, exc bool
	for _, e := range d {
		if e.Value == int32(1) {
			inc = true
		} else if e.Key != "_id" {
			exc = true
		}
	}
	if inc && exc {
		return nil, errorf(path, "cannot both include and exclude fields (only id may be excluded from an inclusion)")
	}
	if len(d) == 0 {
		return nil, nil
	}
	return d, nil
}
