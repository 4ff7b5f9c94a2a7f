package jsrt

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strconv"
	"time"

	"github.com/dop251/goja"
)

type exportCtx struct {
	src  int // module index; -1 for call results, whose functions are not bound
	pool *Pool
	file string
	path []seg
	seen []*goja.Object // objects on the current path, to refuse cycles
	// budget bounds the export of a call result; nil for config values.
	budget *resultBudget
}

// resultBudget is what is left of the bounds of one call result.
type resultBudget struct {
	values, bytes int64
}

// spend charges one value of n bytes of text (and items more to come, an
// array's length before its items are read).
func (c *exportCtx) spend(n, items int64) error {
	b := c.budget
	if b == nil {
		return nil
	}
	b.values -= 1 + items
	b.bytes -= n
	if b.values < 0 || b.bytes < 0 {
		return &Error{File: c.file, Message: fmt.Sprintf("the result is larger than %d values or %d bytes of text", MaxResultValues, MaxResultBytes)}
	}
	return nil
}

// export turns a JavaScript value into JSON-compatible Go data. Undefined is
// reported as (nil, nil) and callers leave such properties out.
func (v *vm) export(val goja.Value, c *exportCtx) (any, error) {
	if val == nil || goja.IsUndefined(val) || goja.IsNull(val) {
		return nil, nil
	}
	obj, isObj := val.(*goja.Object)
	if !isObj {
		if err := c.spend(0, 0); err != nil {
			return nil, err
		}
		switch x := val.Export().(type) {
		case int64:
			return float64(x), nil
		case float64:
			return x, nil
		case string:
			if err := c.spend(int64(len(x)), 0); err != nil {
				return nil, err
			}
			return x, nil
		case bool:
			return x, nil
		case *big.Int:
			f, _ := new(big.Float).SetInt(x).Float64()
			return f, nil
		default:
			return val.String(), nil
		}
	}
	if _, ok := goja.AssertFunction(val); ok {
		if c.src < 0 || c.pool == nil {
			return nil, nil
		}
		return c.pool.bind(c.src, c.path), nil
	}
	for _, s := range c.seen {
		if s == obj {
			return nil, &Error{File: c.file, Message: fmt.Sprintf("%s: circular reference", pathString(c.path))}
		}
	}
	switch obj.ClassName() {
	case "Date":
		if t, ok := obj.Export().(time.Time); ok {
			return t.UTC().Format("2006-01-02T15:04:05.000Z"), nil
		}
	case "RegExp":
		return obj.Get("source").String(), nil
	case "String", "Number", "Boolean":
		if valueOf, ok := goja.AssertFunction(obj.Get("valueOf")); ok {
			if prim, err := valueOf(obj); err == nil {
				return v.export(prim, c)
			}
		}
	}
	c.seen = append(c.seen, obj)
	defer func() { c.seen = c.seen[:len(c.seen)-1] }()
	if obj.ClassName() == "Array" {
		length := obj.Get("length").ToInteger()
		if err := c.spend(0, length); err != nil {
			return nil, err
		}
		if c.budget != nil {
			c.budget.values += length // the items charge themselves
		}
		n := int(length)
		out := make([]any, n)
		for i := 0; i < n; i++ {
			c.path = append(c.path, seg{index: i, isIdx: true})
			x, err := v.export(obj.Get(strconv.Itoa(i)), c)
			c.path = c.path[:len(c.path)-1]
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	if err := c.spend(0, 0); err != nil {
		return nil, err
	}
	out := make(map[string]any)
	for _, k := range obj.Keys() {
		if err := c.spend(int64(len(k)), 0); err != nil {
			return nil, err
		}
		pv := obj.Get(k)
		if pv == nil || goja.IsUndefined(pv) {
			continue
		}
		c.path = append(c.path, seg{key: k})
		x, err := v.export(pv, c)
		c.path = c.path[:len(c.path)-1]
		if err != nil {
			return nil, err
		}
		if x == nil && !goja.IsNull(pv) {
			// A function in a call result: leave it out.
			if _, isFn := goja.AssertFunction(pv); isFn {
				continue
			}
		}
		out[k] = x
	}
	return out, nil
}

// toJS converts Go data to plain JavaScript values: maps become objects and
// slices arrays (not Go-backed wrappers), so Array.isArray, instanceof and
// JSON.stringify behave as scripts expect.
func toJS(rt *goja.Runtime, x any) goja.Value {
	switch t := x.(type) {
	case nil:
		return goja.Null()
	case goja.Value:
		return t
	case map[string]any:
		o := rt.NewObject()
		for k, e := range t {
			_ = o.Set(k, toJS(rt, e))
		}
		return o
	case []any:
		vals := make([]any, len(t))
		for i, e := range t {
			vals[i] = toJS(rt, e)
		}
		return rt.NewArray(vals...)
	case string, bool, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return rt.ToValue(t)
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return rt.ToValue(f)
		}
		return rt.ToValue(t.String())
	case time.Time:
		return rt.ToValue(t.UTC().Format("2006-01-02T15:04:05.000Z"))
	case Func:
		return rt.ToValue(func(call goja.FunctionCall) goja.Value {
			panic(rt.NewTypeError("a config function cannot be passed into another"))
		})
	}
	rv := reflect.ValueOf(x)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct, reflect.Ptr:
		// Other shapes go through JSON, which is the shape scripts expect.
		b, err := json.Marshal(x)
		if err != nil {
			return rt.ToValue(fmt.Sprint(x))
		}
		var generic any
		if err := json.Unmarshal(b, &generic); err != nil {
			return rt.ToValue(string(b))
		}
		return toJS(rt, generic)
	}
	return rt.ToValue(x)
}
