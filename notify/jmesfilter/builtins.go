package jmesfilter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"strings"
	"unicode/utf8"

	jpfunctions "github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/util"
)

// builtin is a JMESPath function as the evaluator runs it: the library's
// signature, and an implementation that charges the budget for what it
// is about to do before doing it. Most delegate to the library's own
// function once the cost is paid; the ones that could not be bounded that
// way, or that change their arguments in place, are written here.
type builtin struct {
	args []jpfunctions.ArgSpec
	call func(ev *evaluator, args []any) (any, error)
}

// builtins are JMESPath's functions (those of the library, with the same
// names and signatures), bounded.
var builtins = func() map[string]builtin {
	lib := map[string]jpfunctions.FunctionEntry{}
	for _, f := range jpfunctions.GetDefaultFunctions() {
		lib[f.Name] = f
	}
	// costs say what a library function costs before it runs.
	costs := map[string]func(ev *evaluator, args []any) error{
		"abs": free, "ceil": free, "floor": free, "type": free, "not_null": free, "to_array": free,
		"avg": perElement(8), "sum": perElement(8), "max": perElement(sizeSlot), "min": perElement(sizeSlot),
		"keys": perElement(sizeSlot), "values": perElement(sizeSlot), "merge": mergeCost,
		"items":      perElement(sizeSlot + sizeSlice + 2*sizeSlot),
		"from_items": perElement(sizeEntry + sizeSlice),
		"group_by":   perElement(sizeSlot + sizeEntry),
		"map":        perElement(sizeSlot),
		"max_by":     perElement(0), "min_by": perElement(0),
		"reverse":   perElement(sizeSlot + 4),
		"sort":      sortCost,
		"length":    scanFirst,
		"to_number": scanFirst, "starts_with": scanFirst, "ends_with": scanFirst,
		"lower": caseCost, "upper": caseCost,
		"trim": trimCost, "trim_left": trimCost, "trim_right": trimCost,
		"pad_left": padCost, "pad_right": padCost,
		"join": joinCost, "replace": replaceCost, "split": splitCost, "zip": zipCost,
	}
	own := map[string]func(ev *evaluator, args []any) (any, error){
		"contains":   contains,
		"find_first": func(ev *evaluator, args []any) (any, error) { return find(ev, args, strings.Index) },
		"find_last":  func(ev *evaluator, args []any) (any, error) { return find(ev, args, strings.LastIndex) },
		"sort_by":    sortBy,
		"to_string":  toString,
	}
	out := make(map[string]builtin, len(lib))
	for name, f := range lib {
		b := builtin{args: f.Arguments}
		if impl, ok := own[name]; ok {
			b.call = impl
		} else {
			cost, handler := costs[name], f.Handler
			if cost == nil {
				// A function of a newer library version whose cost is not
				// known here is not offered: a filter naming it is refused
				// when written.
				continue
			}
			b.call = func(ev *evaluator, args []any) (any, error) {
				if err := cost(ev, args); err != nil {
					return nil, err
				}
				return handler(args)
			}
		}
		out[name] = b
	}
	return out
}()

// call runs a function: a custom one first (it may replace a built-in, as
// in the original), else a built-in.
func (ev *evaluator) call(name string, args []any) (any, error) {
	if f, ok := ev.engine.custom[name]; ok {
		return ev.callCustom(name, f, args)
	}
	b, ok := builtins[name]
	if !ok {
		return nil, errors.New("unknown function: " + name)
	}
	if err := checkBuiltinArgs(name, b.args, args); err != nil {
		return nil, err
	}
	if err := ev.step(1); err != nil {
		return nil, err
	}
	return b.call(ev, args)
}

// callCustom runs a function of the config. Its arguments are converted
// for JavaScript and its result back, so both are charged by their size;
// the call itself runs under the evaluation's deadline, which interrupts
// JavaScript that does not return.
func (ev *evaluator) callCustom(name string, f Function, args []any) (any, error) {
	if err := checkArgs(name, f.Signature, args); err != nil {
		return nil, err
	}
	if ev.dry {
		// The write-time trial does not run configured code on behalf of
		// whoever writes a filter.
		return nil, nil
	}
	for _, a := range args {
		n, err := ev.size(a)
		if err != nil {
			return nil, err
		}
		if err := ev.alloc(n); err != nil {
			return nil, err
		}
	}
	if err := ev.checkTime(); err != nil {
		return nil, err
	}
	ctx := ev.ctx
	if !ev.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, ev.deadline)
		defer cancel()
	}
	res, err := f.Call(ctx, args)
	if err != nil {
		if ctx.Err() != nil && ev.ctx.Err() == nil {
			return nil, ev.over(fmt.Sprintf("%s() ran longer than %s", name, ev.limits.Time))
		}
		return nil, fmt.Errorf("%s(): %w", name, err)
	}
	res = Normalize(res)
	n, err := ev.size(res)
	if err != nil {
		return nil, err
	}
	if err := ev.alloc(n); err != nil {
		return nil, err
	}
	return res, nil
}

// checkBuiltinArgs applies a built-in's signature as the library does.
func checkBuiltinArgs(name string, spec []jpfunctions.ArgSpec, args []any) error {
	if len(spec) == 0 {
		return nil
	}
	required, varargs := 0, false
	for _, a := range spec {
		if !a.Optional {
			required++
		}
		varargs = varargs || a.Variadic
	}
	if len(args) < required || (!varargs && len(args) > len(spec)) {
		return argCountError(name, len(args), required, len(spec), varargs)
	}
	for i, a := range args {
		s := spec[min(i, len(spec)-1)]
		if !jpTypeMatches(s.Types, a) {
			return fmt.Errorf("%s(): invalid type for argument %d, expected one of %v", name, i+1, s.Types)
		}
	}
	return nil
}

func jpTypeMatches(types []jpfunctions.JpType, v any) bool {
	for _, t := range types {
		switch t {
		case jpfunctions.JpAny:
			return true
		case jpfunctions.JpNumber:
			if _, ok := v.(float64); ok {
				return true
			}
		case jpfunctions.JpString:
			if _, ok := v.(string); ok {
				return true
			}
		case jpfunctions.JpArray:
			if _, ok := v.([]any); ok {
				return true
			}
		case jpfunctions.JpObject:
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case jpfunctions.JpArrayArray:
			if _, ok := util.ToArrayArray(v); ok {
				return true
			}
		case jpfunctions.JpArrayNumber:
			if _, ok := util.ToArrayNum(v); ok {
				return true
			}
		case jpfunctions.JpArrayString:
			if _, ok := util.ToArrayStr(v); ok {
				return true
			}
		case jpfunctions.JpExpref:
			if _, ok := v.(jpfunctions.ExpRef); ok {
				return true
			}
		}
	}
	return false
}

func free(*evaluator, []any) error { return nil }

func listLen(v any) int {
	switch t := v.(type) {
	case []any:
		return len(t)
	case map[string]any:
		return len(t)
	case string:
		return len(t)
	}
	return 0
}

// perElement charges a step and bytes per element of the first argument.
func perElement(bytes int64) func(ev *evaluator, args []any) error {
	return func(ev *evaluator, args []any) error {
		n := int64(listLen(args[0]))
		if err := ev.step(n); err != nil {
			return err
		}
		return ev.alloc(n*bytes + sizeSlice)
	}
}

func mergeCost(ev *evaluator, args []any) error {
	n := int64(0)
	for _, a := range args {
		n += int64(listLen(a))
	}
	if err := ev.step(n); err != nil {
		return err
	}
	return ev.alloc(n * sizeEntry)
}

func sortCost(ev *evaluator, args []any) error {
	n := int64(listLen(args[0]))
	if err := ev.step(n * int64(1+bits.Len64(uint64(n)))); err != nil {
		return err
	}
	return ev.alloc(n*(sizeSlot+16) + sizeSlice)
}

func scanFirst(ev *evaluator, args []any) error {
	if s, ok := args[0].(string); ok {
		return ev.scan(len(s))
	}
	return nil
}

// caseCost: changing case may lengthen a string (some characters take
// more bytes in the other case).
func caseCost(ev *evaluator, args []any) error {
	s, _ := args[0].(string)
	if err := ev.scan(len(s)); err != nil {
		return err
	}
	return ev.alloc(3 * int64(len(s)))
}

// trimCost: trimming with a cutset of non-ASCII characters looks each
// character up in the cutset.
func trimCost(ev *evaluator, args []any) error {
	s, _ := args[0].(string)
	cut := 1
	if len(args) > 1 {
		c, _ := args[1].(string)
		cut += len(c)
	}
	return ev.scan(len(s) * cut)
}

// width reads an integer argument as the library does, without Go's
// undefined conversion of huge floats: ok is false for a value that is not
// a whole number; values beyond the int range are clamped.
func width(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) {
		return 0, false
	}
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64, true
	case f <= math.MinInt64:
		return math.MinInt64, true
	}
	return int64(f), true
}

func padCost(ev *evaluator, args []any) error {
	s, _ := args[0].(string)
	w, ok := width(args[1])
	if !ok || w < 0 {
		return nil // the library refuses it
	}
	if w > int64(len(s)) {
		// The padded string, built once by Repeat and once by Sprintf.
		return ev.alloc(2 * w)
	}
	return nil
}

func joinCost(ev *evaluator, args []any) error {
	sep, _ := args[0].(string)
	list, _ := args[1].([]any)
	n := int64(len(sep)) * int64(max(len(list)-1, 0))
	for _, e := range list {
		if s, ok := e.(string); ok {
			n += int64(len(s))
		}
	}
	if err := ev.step(int64(len(list))); err != nil {
		return err
	}
	return ev.alloc(n + int64(len(list))*16)
}

func replaceCost(ev *evaluator, args []any) error {
	s, _ := args[0].(string)
	old, _ := args[1].(string)
	repl, _ := args[2].(string)
	limit := int64(math.MaxInt64)
	if len(args) > 3 {
		if c, ok := width(args[3]); ok && c >= 0 {
			limit = c
		}
	}
	if err := ev.scan(len(s)); err != nil {
		return err
	}
	var n int64
	if old == "" {
		n = int64(utf8.RuneCountInString(s)) + 1
	} else {
		n = int64(strings.Count(s, old))
	}
	n = min(n, limit)
	grow := max(int64(len(repl))-int64(len(old)), 0)
	if grow > 0 && n > (ev.limits.Bytes+1)/grow {
		return ev.over(fmt.Sprintf("more than %d bytes", ev.limits.Bytes))
	}
	return ev.alloc(int64(len(s)) + n*grow)
}

func splitCost(ev *evaluator, args []any) error {
	s, _ := args[0].(string)
	sep, _ := args[1].(string)
	if err := ev.scan(len(s)); err != nil {
		return err
	}
	var n int64
	if sep == "" {
		n = int64(utf8.RuneCountInString(s))
	} else {
		n = int64(strings.Count(s, sep)) + 1
	}
	if len(args) > 2 {
		if c, ok := width(args[2]); ok && c >= 0 && c < n {
			n = c + 1
		}
	}
	if err := ev.step(n); err != nil {
		return err
	}
	return ev.alloc(n*(sizeSlot+16) + sizeSlice)
}

func zipCost(ev *evaluator, args []any) error {
	count := math.MaxInt
	for _, a := range args {
		count = min(count, listLen(a))
	}
	n := int64(count)
	if err := ev.step(n * int64(len(args))); err != nil {
		return err
	}
	return ev.alloc(n * (sizeSlot + sizeSlice + int64(len(args))*sizeSlot))
}

// contains compares with JSON equality (the library's == panics on two
// arrays and never finds an object).
func contains(ev *evaluator, args []any) (any, error) {
	if s, ok := args[0].(string); ok {
		sub, isStr := args[1].(string)
		if !isStr {
			return false, nil
		}
		if err := ev.scan(len(s) + len(sub)); err != nil {
			return nil, err
		}
		return strings.Contains(s, sub), nil
	}
	list, _ := args[0].([]any)
	for _, item := range list {
		eq, err := ev.equal(item, args[1])
		if err != nil {
			return nil, err
		}
		if eq {
			return true, nil
		}
	}
	return false, nil
}

// find is find_first and find_last: the position of sub in s between
// start and end, or null. (The library slices out of range when start
// lies beyond end.)
func find(ev *evaluator, args []any, index func(s, sub string) int) (any, error) {
	s, _ := args[0].(string)
	sub, _ := args[1].(string)
	if s == "" || sub == "" {
		return nil, nil
	}
	start, end := int64(0), int64(len(s))
	if len(args) > 2 {
		v, ok := width(args[2])
		if !ok {
			return nil, errors.New("find: start must be an integer")
		}
		start = max(v, 0)
	}
	if len(args) > 3 {
		v, ok := width(args[3])
		if !ok {
			return nil, errors.New("find: end must be an integer")
		}
		end = min(v, end)
	}
	if start >= end || start > int64(len(s)) {
		return nil, nil
	}
	if err := ev.scan(int(end - start)); err != nil {
		return nil, err
	}
	at := index(s[start:end], sub)
	if at < 0 {
		return nil, nil
	}
	return float64(start + int64(at)), nil
}

// sortBy sorts a copy (the library sorts its argument in place, which
// would reorder data other evaluations share).
func sortBy(ev *evaluator, args []any) (any, error) {
	list, _ := args[0].([]any)
	exp, _ := args[1].(jpfunctions.ExpRef)
	if len(list) < 2 {
		return list, nil
	}
	n := int64(len(list))
	if err := ev.step(n * int64(1+bits.Len64(uint64(n)))); err != nil {
		return nil, err
	}
	if err := ev.alloc(n * 2 * sizeSlot); err != nil {
		return nil, err
	}
	items := append([]any(nil), list...)
	keys := make([]any, len(items))
	for i, it := range items {
		k, err := exp(it)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	switch keys[0].(type) {
	case float64, string:
	default:
		return nil, errors.New("invalid type, must be number of string")
	}
	bad := false
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		switch x := keys[order[a]].(type) {
		case float64:
			y, ok := keys[order[b]].(float64)
			if !ok {
				bad = true
				return false
			}
			return x < y
		case string:
			y, ok := keys[order[b]].(string)
			if !ok {
				bad = true
				return false
			}
			return x < y
		}
		bad = true
		return false
	})
	if bad {
		return nil, errors.New("error in sort_by comparison")
	}
	out := make([]any, len(items))
	for i, j := range order {
		out[i] = items[j]
	}
	return out, nil
}

// toString is JSON text, sized before it is built.
func toString(ev *evaluator, args []any) (any, error) {
	if s, ok := args[0].(string); ok {
		return s, nil
	}
	n, err := ev.size(args[0])
	if err != nil {
		return nil, err
	}
	if err := ev.alloc(n); err != nil {
		return nil, err
	}
	b, err := json.Marshal(args[0])
	if err != nil {
		return nil, err
	}
	return string(b), nil
}
