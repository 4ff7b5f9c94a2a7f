// Package jmesfilter evaluates the JMESPath filter expressions of broadcast
// push notifications:
//
//   - a subscription's broadcastPushNotificationFilter is evaluated against
//     the notification's data, and
//   - a notification's broadcastPushNotificationSubscriptionFilter is
//     evaluated against each subscription's data.
//
// The subscriber gets the notification only when every filter that applies
// is truthy in JMESPath's sense (false, null, "", [] and {} are false; 0 is
// true). As in the original, a filter applies only when the data it reads is
// present: a notification without data is not filtered by the subscriptions'
// filters, and a subscription without data is not filtered by the
// notification's filter. An evaluation error counts as "no match".
//
// Expressions are validated when the record is written (Engine.Validate
// returns a *SyntaxError the API answers with 400) and compiled once per
// expression: a broadcast evaluates one expression against many
// subscriptions, so compiled filters are cached.
//
// Custom functions come from the configuration key
// notification.broadcastCustomFilterFunctions, declared as in the original:
//
//	contains_ci: { _func: function (resolvedArgs) {…}, _signature: [{types: [2]}, {types: [2]}] }
//
// ParseSignature reads a _signature value; the type codes are those of the
// original's JMESPath library (0 number, 1 any, 2 string, 3 array, 4 object,
// 5 boolean, 6 expression reference, 7 null, 8 array of numbers, 9 array of
// strings), and the type names ("string", …) are accepted too. A custom
// function may replace a built-in one of the same name, as in the original.
//
// Where we differ from the original: a call of an unknown function, or with
// the wrong number of arguments, is refused when the filter is written, not
// silently treated as "no match" at every broadcast; and the expression is
// compiled on its own rather than pasted into "[?…]", so text such as
// "a] | [b" cannot escape the filter brackets. Expressions are limited to
// MaxExpressionLength bytes.
//
// # Bounds
//
// Anyone may write a subscription's filter, and a few dozen bytes of
// JMESPath can describe more work than any machine has memory or time for
// (pad_left('x', `1e12`), or [@,@][] repeated forty times, which doubles
// an array forty times). Filters are therefore bounded (see Limits):
//
//   - when written: nesting deeper than Limits.Depth, a literal pad width
//     beyond the byte budget, and an expression that goes over a hundredth
//     of the budget with no data at all are refused with a SyntaxError;
//   - when evaluated: expressions run on an evaluator of our own over the
//     library's syntax tree, which charges every node, every element an
//     operator visits and every byte a function or operator is about to
//     allocate against Limits.Steps and Limits.Bytes, and stops at
//     Limits.Time (custom functions included: their JavaScript is
//     interrupted). An evaluation over budget is "no match" with an error
//     for which errors.Is(err, ErrBudget) holds; the dispatcher logs it.
//
// The evaluator gives the library's answers (tests compare the two), with
// three differences: contains() compares arrays and objects by value (the
// library's == panics on arrays), sort_by() sorts a copy (the library sorts
// its argument in place, which would reorder data shared by concurrent
// evaluations), and the values of an object projection (*) come in key
// order rather than Go's random map order.
package jmesfilter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	jpfunctions "github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
	"github.com/jmespath-community/go-jmespath/pkg/util"
	"go.mongodb.org/mongo-driver/v2/bson"
)

var errNoFunc = errors.New("the function has no _func")

// MaxExpressionLength bounds the size of a filter expression. Anonymous
// callers may set a subscription's filter, and the parser recurses on
// nesting; real filters are a few dozen bytes.
const MaxExpressionLength = 4096

// DefaultCacheSize is the number of compiled expressions an Engine keeps.
const DefaultCacheSize = 4096

// ArgType is an argument type code of a custom function's signature, with
// the values of the original's JMESPath library.
type ArgType int

// Argument types.
const (
	TypeNumber      ArgType = 0
	TypeAny         ArgType = 1
	TypeString      ArgType = 2
	TypeArray       ArgType = 3
	TypeObject      ArgType = 4
	TypeBoolean     ArgType = 5
	TypeExpref      ArgType = 6
	TypeNull        ArgType = 7
	TypeArrayNumber ArgType = 8
	TypeArrayString ArgType = 9
)

var typeNames = [...]string{"number", "any", "string", "array", "object", "boolean", "expref", "null", "array[number]", "array[string]"}

func (t ArgType) String() string {
	if t >= 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", int(t))
}

// ArgSpec is one entry of a signature: the types the argument may have,
// whether it may be left out (only trailing arguments) and whether it is
// the last one and repeats.
type ArgSpec struct {
	Types    []ArgType
	Optional bool
	Variadic bool
}

// Function is a custom filter function.
type Function struct {
	// Signature declares the arguments. Calls are checked against it before
	// Call runs, so Call may rely on the declared types. An empty signature
	// means no arguments.
	Signature []ArgSpec
	// Call computes the result from the resolved arguments: float64, string,
	// bool, nil, []any, map[string]any, or for TypeExpref a
	// func(any) (any, error). It may block (the original allows async
	// functions); it should honour ctx.
	Call func(ctx context.Context, args []any) (any, error)
}

// Functions maps a function name to its implementation.
type Functions map[string]Function

// ParseSignature reads the _signature value of a function declared in
// notification.broadcastCustomFilterFunctions, as decoded from JSON or from
// the JavaScript config: a list of {types: [code or name, …], variadic?}.
func ParseSignature(v any) ([]ArgSpec, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := asList(v)
	if !ok {
		return nil, errors.New("_signature must be a list of {types: [...]} objects")
	}
	specs := make([]ArgSpec, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("_signature[%d] must be an object with a types list", i)
		}
		types, ok := asList(m["types"])
		if !ok || len(types) == 0 {
			return nil, fmt.Errorf("_signature[%d].types must be a non-empty list", i)
		}
		var spec ArgSpec
		for j, t := range types {
			at, err := parseType(t)
			if err != nil {
				return nil, fmt.Errorf("_signature[%d].types[%d]: %w", i, j, err)
			}
			spec.Types = append(spec.Types, at)
		}
		if vv, present := m["variadic"]; present {
			b, ok := vv.(bool)
			if !ok {
				return nil, fmt.Errorf("_signature[%d].variadic must be true or false", i)
			}
			if b && i != len(list)-1 {
				return nil, fmt.Errorf("_signature[%d]: only the last argument may be variadic", i)
			}
			spec.Variadic = b
		}
		if ov, present := m["optional"]; present {
			b, ok := ov.(bool)
			if !ok {
				return nil, fmt.Errorf("_signature[%d].optional must be true or false", i)
			}
			spec.Optional = b
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

func asList(v any) ([]any, bool) {
	switch t := v.(type) {
	case []any:
		return t, true
	case bson.A:
		return t, true
	}
	return nil, false
}

func parseType(v any) (ArgType, error) {
	switch t := v.(type) {
	case string:
		for i, n := range typeNames {
			if n == t {
				return ArgType(i), nil
			}
		}
		return 0, fmt.Errorf("unknown type %q (known: %s)", t, strings.Join(typeNames[:], ", "))
	default:
		f, ok := toFloat(v)
		if !ok || f != math.Trunc(f) || f < 0 || int(f) >= len(typeNames) {
			return 0, fmt.Errorf("type must be a code 0–%d or a type name, got %v", len(typeNames)-1, v)
		}
		return ArgType(f), nil
	}
}

// SyntaxError is a filter expression that cannot be used. The API answers
// it with 400 and Error() as the message.
type SyntaxError struct {
	Field  string // e.g. "broadcastPushNotificationFilter"; may be empty
	Expr   string
	Reason string
}

func (e *SyntaxError) Error() string {
	field := e.Field
	if field == "" {
		field = "filter"
	}
	return "invalid " + field + ": " + e.Reason
}

// StatusCode is the HTTP status for this error: 400.
func (e *SyntaxError) StatusCode() int { return 400 }

// Engine compiles and evaluates filters with one set of custom functions.
// It is safe for concurrent use.
type Engine struct {
	custom map[string]Function
	limits Limits

	mu       sync.Mutex
	cache    map[string]*Filter
	capacity int
}

// New returns an Engine with the given custom functions and
// DefaultLimits. It refuses a function without Call or with a malformed
// signature, naming it.
func New(fns Functions) (*Engine, error) { return NewWithLimits(fns, DefaultLimits) }

// NewWithLimits is New with other limits; a zero field of l takes the
// default's value.
func NewWithLimits(fns Functions, l Limits) (*Engine, error) {
	if l.Steps <= 0 {
		l.Steps = DefaultLimits.Steps
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultLimits.Bytes
	}
	if l.Time <= 0 {
		l.Time = DefaultLimits.Time
	}
	if l.Depth <= 0 {
		l.Depth = DefaultLimits.Depth
	}
	e := &Engine{
		custom:   make(map[string]Function, len(fns)),
		limits:   l,
		cache:    map[string]*Filter{},
		capacity: DefaultCacheSize,
	}
	for name, f := range fns {
		if name == "" {
			return nil, errors.New("broadcastCustomFilterFunctions: a function has an empty name")
		}
		if f.Call == nil {
			return nil, fmt.Errorf("broadcastCustomFilterFunctions.%s: no _func", name)
		}
		for i, s := range f.Signature {
			if i > 0 && f.Signature[i-1].Optional && !s.Optional && !s.Variadic {
				return nil, fmt.Errorf("broadcastCustomFilterFunctions.%s: _signature[%d] is required after an optional argument", name, i)
			}
			if len(s.Types) == 0 {
				return nil, fmt.Errorf("broadcastCustomFilterFunctions.%s: _signature[%d] has no types", name, i)
			}
			if s.Variadic && i != len(f.Signature)-1 {
				return nil, fmt.Errorf("broadcastCustomFilterFunctions.%s: only the last argument may be variadic", name)
			}
		}
		e.custom[name] = f
	}
	return e, nil
}

// Limits returns the bounds the engine applies.
func (e *Engine) Limits() Limits { return e.limits }

// Filter is a compiled filter expression.
type Filter struct {
	expr   string
	node   parsing.ASTNode
	engine *Engine
}

// String returns the expression as written.
func (f *Filter) String() string { return f.expr }

// Validate checks expr for field (named in the error) as the API does when
// a subscription or notification is written.
func (e *Engine) Validate(field, expr string) error {
	_, err := e.Compile(expr)
	var se *SyntaxError
	if errors.As(err, &se) {
		c := *se
		c.Field = field
		return &c
	}
	return err
}

// Compile returns the compiled filter for expr, from the cache when it was
// compiled before.
func (e *Engine) Compile(expr string) (*Filter, error) {
	e.mu.Lock()
	f, ok := e.cache[expr]
	e.mu.Unlock()
	if ok {
		return f, nil
	}
	f, err := e.compile(expr)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if len(e.cache) >= e.capacity {
		// Drop an arbitrary entry: map order is random, which is as good
		// as LRU for a cache that mostly holds a few hot expressions.
		for k := range e.cache {
			delete(e.cache, k)
			break
		}
	}
	e.cache[expr] = f
	e.mu.Unlock()
	return f, nil
}

func (e *Engine) compile(expr string) (f *Filter, err error) {
	if strings.TrimSpace(expr) == "" {
		return nil, &SyntaxError{Expr: expr, Reason: "the expression is empty"}
	}
	if len(expr) > MaxExpressionLength {
		return nil, &SyntaxError{Expr: expr, Reason: fmt.Sprintf("the expression is longer than %d bytes", MaxExpressionLength)}
	}
	defer func() {
		// The parser is third-party code fed by anonymous callers; a panic
		// on odd input must become a 400, not a crashed request.
		if r := recover(); r != nil {
			f, err = nil, &SyntaxError{Expr: expr, Reason: "the expression cannot be parsed"}
		}
	}()
	node, perr := parsing.NewParser().Parse(expr)
	if perr != nil {
		reason := strings.TrimPrefix(perr.Error(), "SyntaxError: ")
		var pe parsing.SyntaxError
		if errors.As(perr, &pe) {
			reason = fmt.Sprintf("%s at offset %d", reason, pe.Offset)
		}
		return nil, &SyntaxError{Expr: expr, Reason: reason}
	}
	if err := e.checkCalls(node); err != nil {
		return nil, &SyntaxError{Expr: expr, Reason: err.Error()}
	}
	if err := e.checkBounds(expr, node); err != nil {
		return nil, &SyntaxError{Expr: expr, Reason: err.Error()}
	}
	return &Filter{expr: expr, node: node, engine: e}, nil
}

// checkCalls refuses calls of unknown functions and calls with a number of
// arguments no signature allows.
func (e *Engine) checkCalls(n parsing.ASTNode) error {
	if n.NodeType == parsing.ASTFunctionExpression {
		name, _ := n.Value.(string)
		got := len(n.Children)
		if f, ok := e.custom[name]; ok {
			if err := arity(name, got, f.Signature); err != nil {
				return err
			}
		} else if b, ok := builtins[name]; ok {
			min, max, varargs := 0, len(b.args), false
			for _, a := range b.args {
				if !a.Optional {
					min++
				}
				varargs = varargs || a.Variadic
			}
			if got < min || (!varargs && got > max) {
				return argCountError(name, got, min, max, varargs)
			}
		} else {
			return fmt.Errorf("unknown function %s()", name)
		}
	}
	for _, c := range n.Children {
		if err := e.checkCalls(c); err != nil {
			return err
		}
	}
	return nil
}

func variadic(sig []ArgSpec) bool { return len(sig) > 0 && sig[len(sig)-1].Variadic }

// arity checks an argument count against a signature: every argument that
// is not optional is required, and only a variadic last one allows more.
func arity(name string, got int, sig []ArgSpec) error {
	required := 0
	for _, a := range sig {
		if !a.Optional {
			required++
		}
	}
	varargs := variadic(sig)
	if got < required || (!varargs && got > len(sig)) {
		return argCountError(name, got, required, len(sig), varargs)
	}
	return nil
}

func argCountError(name string, got, min, max int, varargs bool) error {
	plural := func(n int) string {
		if n == 1 {
			return "argument"
		}
		return "arguments"
	}
	switch {
	case varargs:
		return fmt.Errorf("%s() takes at least %d %s but received %d", name, min, plural(min), got)
	case min == max:
		return fmt.Errorf("%s() takes %d %s but received %d", name, min, plural(min), got)
	default:
		return fmt.Errorf("%s() takes %d to %d arguments but received %d", name, min, max, got)
	}
}

// Match evaluates the filter against data and reports whether the result
// is truthy. data is a decoded JSON document (map[string]any, []any,
// scalars); BSON documents, Go integers, times and typed maps and slices
// are converted first. A non-nil error means the evaluation failed; the
// dispatcher treats that as "no match", as the original does. An
// evaluation that goes over the engine's Limits stops there with an error
// for which errors.Is(err, ErrBudget) holds.
func (f *Filter) Match(ctx context.Context, data any) (matched bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			matched, err = false, fmt.Errorf("filter %q: evaluation failed: %v", f.expr, r)
		}
	}()
	data = Normalize(data)
	l := f.engine.limits
	ev := &evaluator{ctx: ctx, engine: f.engine, root: data, limits: l, deadline: time.Now().Add(l.Time)}
	res, err := ev.eval(f.node, data, nil)
	if ev.err != nil {
		err = ev.err
	}
	if err != nil {
		return false, fmt.Errorf("filter %q: %w", f.expr, err)
	}
	return !util.IsFalse(res), nil
}

// Match compiles expr (or takes it from the cache) and evaluates it
// against data.
func (e *Engine) Match(ctx context.Context, expr string, data any) (bool, error) {
	f, err := e.Compile(expr)
	if err != nil {
		return false, err
	}
	return f.Match(ctx, data)
}

// checkArgs applies a signature the way the original's library does.
func checkArgs(name string, sig []ArgSpec, args []any) error {
	if err := arity(name, len(args), sig); err != nil {
		return err
	}
	for i, a := range args {
		spec := sig[min(i, len(sig)-1)]
		if !typeMatches(spec.Types, a) {
			names := make([]string, len(spec.Types))
			for k, t := range spec.Types {
				names[k] = t.String()
			}
			return fmt.Errorf("%s() expected argument %d to be type %s but received type %s instead",
				name, i+1, strings.Join(names, ","), typeOf(a))
		}
	}
	return nil
}

func typeMatches(types []ArgType, v any) bool {
	for _, t := range types {
		switch t {
		case TypeAny:
			return true
		case TypeNumber:
			if _, ok := v.(float64); ok {
				return true
			}
		case TypeString:
			if _, ok := v.(string); ok {
				return true
			}
		case TypeArray:
			if _, ok := v.([]any); ok {
				return true
			}
		case TypeObject:
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case TypeBoolean:
			if _, ok := v.(bool); ok {
				return true
			}
		case TypeNull:
			if v == nil {
				return true
			}
		case TypeExpref:
			if _, ok := v.(jpfunctions.ExpRef); ok {
				return true
			}
		case TypeArrayNumber, TypeArrayString:
			list, ok := v.([]any)
			if !ok {
				continue
			}
			all := true
			for _, e := range list {
				if t == TypeArrayNumber {
					_, all = e.(float64)
				} else {
					_, all = e.(string)
				}
				if !all {
					break
				}
			}
			if all {
				return true
			}
		}
	}
	return false
}

func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case jpfunctions.ExpRef:
		return "expref"
	}
	return fmt.Sprintf("%T", v)
}

// Normalize returns v as a JSON-like value (map[string]any, []any, float64,
// string, bool, nil), the only shapes JMESPath compares correctly. Values
// that already have that shape are returned without copying.
func Normalize(v any) any {
	if plain(v) {
		return v
	}
	return convert(v)
}

func plain(v any) bool {
	switch t := v.(type) {
	case nil, string, float64, bool:
		return true
	case map[string]any:
		for _, e := range t {
			if !plain(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range t {
			if !plain(e) {
				return false
			}
		}
		return true
	}
	return false
}

func convert(v any) any {
	switch t := v.(type) {
	case nil, string, float64, bool:
		return t
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = convert(e)
		}
		return m
	case bson.M:
		return convert(map[string]any(t))
	case bson.D:
		m := make(map[string]any, len(t))
		for _, e := range t {
			m[e.Key] = convert(e.Value)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = convert(e)
		}
		return out
	case bson.A:
		return convert([]any(t))
	case bson.ObjectID:
		return t.Hex()
	case bson.DateTime:
		return t.Time().UTC().Format("2006-01-02T15:04:05.000Z")
	case time.Time:
		return t.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if f, ok := toFloat(v); ok {
		return f
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return fmt.Sprint(v)
		}
		m := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			m[it.Key().String()] = convert(it.Value().Interface())
		}
		return m
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = convert(rv.Index(i).Interface())
		}
		return out
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return convert(rv.Elem().Interface())
	case reflect.String:
		return rv.String()
	case reflect.Bool:
		return rv.Bool()
	}
	return fmt.Sprint(v)
}

// toFloat converts Go numbers and json.Number-like values to float64.
func toFloat(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, true
	case float32:
		return float64(t), true
	case int:
		return float64(t), true
	case int8:
		return float64(t), true
	case int16:
		return float64(t), true
	case int32:
		return float64(t), true
	case int64:
		return float64(t), true
	case uint:
		return float64(t), true
	case uint8:
		return float64(t), true
	case uint16:
		return float64(t), true
	case uint32:
		return float64(t), true
	case uint64:
		return float64(t), true
	case interface{ Float64() (float64, error) }: // json.Number
		f, err := t.Float64()
		return f, err == nil
	}
	return 0, false
}
