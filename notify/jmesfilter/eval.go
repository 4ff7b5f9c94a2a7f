package jmesfilter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	jpfunctions "github.com/jmespath-community/go-jmespath/pkg/functions"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
	"github.com/jmespath-community/go-jmespath/pkg/util"
)

// evaluator runs one filter against one document within a budget. It is
// the library's tree interpreter rewritten so that every node, every
// element an operator visits and every byte it allocates is counted: the
// library's own interpreter has no hook for that, and one expression of a
// few dozen bytes can otherwise double an array sixty times over.
//
// Values are the plain JSON shapes Normalize gives (map[string]any, []any,
// float64, string, bool, nil) and are never changed in place: the
// notification's data is shared by the evaluations of every subscriber.
type evaluator struct {
	ctx      context.Context
	engine   *Engine
	root     any
	limits   Limits
	deadline time.Time
	// dry is the write-time trial run: custom functions are not called.
	dry bool

	steps, bytes int64
	// err is sticky: once the budget is spent every operation returns it,
	// also where the library's semantics swallow an error.
	err error
}

// scope holds the variables of let expressions, innermost first.
type scope struct {
	name  string
	value any
	outer *scope
}

func (s *scope) get(name string) (any, error) {
	for c := s; c != nil; c = c.outer {
		if c.name == name {
			return c.value, nil
		}
	}
	return nil, fmt.Errorf("variable not defined: %s", name)
}

// Approximate sizes charged to the byte budget.
const (
	sizeSlot  = 16 // one interface value in a slice
	sizeEntry = 48 // one map entry with its key header
	sizeSlice = 24 // a slice header
)

// step charges n units of work.
func (ev *evaluator) step(n int64) error {
	if ev.err != nil {
		return ev.err
	}
	if n < 0 || n > ev.limits.Steps-ev.steps {
		return ev.over(fmt.Sprintf("more than %d steps", ev.limits.Steps))
	}
	before := ev.steps
	ev.steps += n
	// The clock and the context are read every 1024 steps, not on each.
	if before>>10 != ev.steps>>10 {
		return ev.checkTime()
	}
	return nil
}

func (ev *evaluator) checkTime() error {
	if ev.err != nil {
		return ev.err
	}
	if err := ev.ctx.Err(); err != nil {
		ev.err = err
		return err
	}
	if !ev.deadline.IsZero() && time.Now().After(ev.deadline) {
		return ev.over(fmt.Sprintf("more than %s", ev.limits.Time))
	}
	return nil
}

// alloc charges n bytes about to be allocated.
func (ev *evaluator) alloc(n int64) error {
	if ev.err != nil {
		return ev.err
	}
	if n < 0 || n > ev.limits.Bytes-ev.bytes {
		return ev.over(fmt.Sprintf("more than %d bytes", ev.limits.Bytes))
	}
	ev.bytes += n
	return nil
}

// scan charges reading n bytes: a unit of work per 64 bytes.
func (ev *evaluator) scan(n int) error { return ev.step(1 + int64(n)/64) }

func (ev *evaluator) over(what string) error {
	if ev.err == nil {
		ev.err = &BudgetError{Reason: what}
	}
	return ev.err
}

// eval evaluates node against value, with the variables of sc.
func (ev *evaluator) eval(node parsing.ASTNode, value any, sc *scope) (any, error) {
	if err := ev.step(1); err != nil {
		return nil, err
	}
	switch node.NodeType {
	case parsing.ASTArithmeticUnaryExpression:
		v, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			return nil, err
		}
		num, ok := v.(float64)
		if !ok {
			return nil, nil
		}
		if node.Value == parsing.TOKMinus {
			return -num, nil
		}
		return num, nil
	case parsing.ASTArithmeticExpression:
		left, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			return nil, err
		}
		right, err := ev.eval(node.Children[1], value, sc)
		if err != nil {
			return nil, err
		}
		l, lok := left.(float64)
		r, rok := right.(float64)
		if !lok || !rok {
			return nil, nil
		}
		switch node.Value {
		case parsing.TOKPlus:
			return l + r, nil
		case parsing.TOKMinus:
			return l - r, nil
		case parsing.TOKStar, parsing.TOKMultiply:
			return l * r, nil
		case parsing.TOKDivide:
			return l / r, nil
		case parsing.TOKModulo:
			return math.Mod(l, r), nil
		case parsing.TOKDiv:
			return math.Floor(l / r), nil
		}
		return nil, nil
	case parsing.ASTComparator:
		left, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			return nil, err
		}
		right, err := ev.eval(node.Children[1], value, sc)
		if err != nil {
			return nil, err
		}
		switch node.Value {
		case parsing.TOKEQ:
			return ev.equal(left, right)
		case parsing.TOKNE:
			eq, err := ev.equal(left, right)
			return !eq, err
		}
		l, lok := left.(float64)
		r, rok := right.(float64)
		if !lok || !rok {
			return nil, nil
		}
		switch node.Value {
		case parsing.TOKGT:
			return l > r, nil
		case parsing.TOKGTE:
			return l >= r, nil
		case parsing.TOKLT:
			return l < r, nil
		case parsing.TOKLTE:
			return l <= r, nil
		}
		return nil, nil
	case parsing.ASTExpRef:
		body := node.Children[0]
		return jpfunctions.ExpRef(func(data any) (any, error) {
			return ev.eval(body, data, sc)
		}), nil
	case parsing.ASTFunctionExpression:
		args := make([]any, 0, len(node.Children))
		if err := ev.alloc(int64(len(node.Children)) * sizeSlot); err != nil {
			return nil, err
		}
		for _, c := range node.Children {
			v, err := ev.eval(c, value, sc)
			if err != nil {
				return nil, err
			}
			args = append(args, v)
		}
		name, _ := node.Value.(string)
		return ev.call(name, args)
	case parsing.ASTField:
		if m, ok := value.(map[string]any); ok {
			key, _ := node.Value.(string)
			return m[key], nil
		}
		return nil, nil
	case parsing.ASTFilterProjection:
		left, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			// The library answers null when the left side fails; the
			// budget is sticky, so spending it still ends the evaluation.
			return nil, ev.err
		}
		list, ok := left.([]any)
		if !ok {
			return nil, nil
		}
		collected, err := ev.makeList(len(list))
		if err != nil {
			return nil, err
		}
		for _, element := range list {
			cond, err := ev.eval(node.Children[2], element, sc)
			if err != nil {
				return nil, err
			}
			if util.IsFalse(cond) {
				continue
			}
			v, err := ev.eval(node.Children[1], element, sc)
			if err != nil {
				return nil, err
			}
			if v != nil {
				collected = append(collected, v)
			}
		}
		return collected, nil
	case parsing.ASTFlatten:
		left, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			return nil, ev.err
		}
		list, ok := left.([]any)
		if !ok {
			return nil, nil
		}
		n := 0
		for _, element := range list {
			if inner, ok := element.([]any); ok {
				n += len(inner)
			} else {
				n++
			}
		}
		if err := ev.step(int64(n)); err != nil {
			return nil, err
		}
		if err := ev.alloc(int64(n)*sizeSlot + sizeSlice); err != nil {
			return nil, err
		}
		flat := make([]any, 0, n)
		for _, element := range list {
			if inner, ok := element.([]any); ok {
				flat = append(flat, inner...)
			} else {
				flat = append(flat, element)
			}
		}
		return flat, nil
	case parsing.ASTIdentity, parsing.ASTCurrentNode:
		return value, nil
	case parsing.ASTRootNode:
		return ev.root, nil
	case parsing.ASTLetExpression:
		// Every binding is evaluated in the outer scope (JEP 18): one
		// binding of a let cannot see another.
		inner := sc
		for _, b := range node.Children[0].Children {
			v, err := ev.eval(b.Children[1], value, sc)
			if err != nil {
				return nil, err
			}
			name, _ := b.Children[0].Value.(string)
			if err := ev.alloc(sizeEntry); err != nil {
				return nil, err
			}
			inner = &scope{name: name, value: v, outer: inner}
		}
		return ev.eval(node.Children[1], value, inner)
	case parsing.ASTVariable:
		name, _ := node.Value.(string)
		return sc.get(name)
	case parsing.ASTIndex:
		list, ok := value.([]any)
		if !ok {
			return nil, nil
		}
		i, _ := node.Value.(int)
		if i < 0 {
			i += len(list)
		}
		if i >= 0 && i < len(list) {
			return list[i], nil
		}
		return nil, nil
	case parsing.ASTKeyValPair:
		return ev.eval(node.Children[0], value, sc)
	case parsing.ASTLiteral:
		return node.Value, nil
	case parsing.ASTMultiSelectHash:
		if err := ev.alloc(int64(len(node.Children)) * sizeEntry); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(node.Children))
		for _, c := range node.Children {
			v, err := ev.eval(c, value, sc)
			if err != nil {
				return nil, err
			}
			key, _ := c.Value.(string)
			out[key] = v
		}
		return out, nil
	case parsing.ASTMultiSelectList:
		if err := ev.alloc(int64(len(node.Children))*sizeSlot + sizeSlice); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(node.Children))
		for _, c := range node.Children {
			v, err := ev.eval(c, value, sc)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case parsing.ASTOrExpression:
		v, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			return nil, err
		}
		if util.IsFalse(v) {
			return ev.eval(node.Children[1], value, sc)
		}
		return v, nil
	case parsing.ASTAndExpression:
		v, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			return nil, err
		}
		if util.IsFalse(v) {
			return v, nil
		}
		return ev.eval(node.Children[1], value, sc)
	case parsing.ASTNotExpression:
		v, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			return nil, err
		}
		return util.IsFalse(v), nil
	case parsing.ASTPipe:
		result := value
		for _, c := range node.Children {
			v, err := ev.eval(c, result, sc)
			if err != nil {
				return nil, err
			}
			result = v
		}
		return result, nil
	case parsing.ASTProjection:
		// A string slice ('abc'[1:]) is a projection whose left side is
		// an index expression with a slice: only then may the left side
		// be a string, which is the answer as it is.
		first := node.Children[0]
		allowString := first.NodeType == parsing.ASTIndexExpression && len(first.Children) > 1 && first.Children[1].NodeType == parsing.ASTSlice
		left, err := ev.eval(first, value, sc)
		if err != nil {
			return nil, err
		}
		list, ok := left.([]any)
		if !ok {
			if s, isStr := left.(string); isStr && allowString {
				return s, nil
			}
			return nil, nil
		}
		return ev.project(list, node.Children[1], sc)
	case parsing.ASTSubexpression, parsing.ASTIndexExpression:
		left, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			return nil, err
		}
		if left == nil {
			return nil, nil
		}
		return ev.eval(node.Children[1], left, sc)
	case parsing.ASTSlice:
		parts, _ := node.Value.([]*int)
		return ev.slice(parts, value)
	case parsing.ASTValueProjection:
		left, err := ev.eval(node.Children[0], value, sc)
		if err != nil {
			return nil, ev.err
		}
		m, ok := left.(map[string]any)
		if !ok {
			return nil, nil
		}
		// Map order is random in Go; sorted keys keep the answer stable
		// from one evaluation to the next.
		if err := ev.step(int64(len(m))); err != nil {
			return nil, err
		}
		if err := ev.alloc(int64(len(m)) * (sizeSlot + 16)); err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		values := make([]any, len(keys))
		for i, k := range keys {
			values[i] = m[k]
		}
		return ev.project(values, node.Children[1], sc)
	}
	return nil, errors.New("unknown AST node: " + node.NodeType.String())
}

// project evaluates node on each element and keeps the results that are
// not null.
func (ev *evaluator) project(list []any, node parsing.ASTNode, sc *scope) (any, error) {
	collected, err := ev.makeList(len(list))
	if err != nil {
		return nil, err
	}
	for _, element := range list {
		v, err := ev.eval(node, element, sc)
		if err != nil {
			return nil, err
		}
		if v != nil {
			collected = append(collected, v)
		}
	}
	return collected, nil
}

// makeList charges and allocates room for n results at once, so that
// appending never grows the list beyond what was paid for.
func (ev *evaluator) makeList(n int) ([]any, error) {
	if err := ev.alloc(int64(n)*sizeSlot + sizeSlice); err != nil {
		return nil, err
	}
	return make([]any, 0, n), nil
}

// slice is [start:stop:step] of a list or a string (by characters), as
// the library computes it, without its integer overflows on huge steps.
func (ev *evaluator) slice(parts []*int, value any) (any, error) {
	switch t := value.(type) {
	case []any:
		idx, err := ev.sliceIndexes(parts, len(t))
		if err != nil {
			return nil, err
		}
		if idx == nil {
			return nil, errors.New("invalid slice, step cannot be 0")
		}
		out := make([]any, len(idx))
		for i, j := range idx {
			out[i] = t[j]
		}
		return out, nil
	case string:
		if err := ev.scan(len(t)); err != nil {
			return nil, err
		}
		if err := ev.alloc(int64(len(t)) * 4); err != nil {
			return nil, err
		}
		runes := []rune(t)
		idx, err := ev.sliceIndexes(parts, len(runes))
		if err != nil {
			return nil, err
		}
		if idx == nil {
			return nil, nil
		}
		out := make([]rune, len(idx))
		for i, j := range idx {
			out[i] = runes[j]
		}
		return string(out), nil
	}
	return nil, nil
}

// sliceIndexes returns the positions a slice selects from a sequence of
// length n, charging for them; nil for an invalid slice (step 0).
func (ev *evaluator) sliceIndexes(parts []*int, n int) ([]int, error) {
	var p [3]*int
	copy(p[:], parts)
	step := 1
	if p[2] != nil {
		step = *p[2]
	}
	if step == 0 {
		return nil, nil
	}
	clamp := func(v *int, def int) int {
		if v == nil {
			return def
		}
		a := *v
		if a < 0 {
			a += n
			if a < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		} else if a >= n {
			if step < 0 {
				return n - 1
			}
			return n
		}
		return a
	}
	var start, stop int
	if step > 0 {
		start, stop = clamp(p[0], 0), clamp(p[1], n)
	} else {
		start, stop = clamp(p[0], n-1), clamp(p[1], -1)
	}
	// start and stop lie in [-1, n]; the count is computed without adding
	// step to an index, so a huge step cannot overflow.
	count := 0
	if step > 0 && stop > start {
		count = 1 + (stop-start-1)/step
	} else if step < 0 && start > stop {
		count = 1 + (start-stop-1)/(-step)
	}
	if err := ev.step(int64(count)); err != nil {
		return nil, err
	}
	if err := ev.alloc(int64(count)*(sizeSlot+8) + sizeSlice); err != nil {
		return nil, err
	}
	idx := make([]int, count)
	for i := range idx {
		idx[i] = start + i*step
	}
	return idx, nil
}

// equal is JSON equality, charging one step per value compared: two
// values built by doubling arrays can hold more leaves than the budget.
func (ev *evaluator) equal(a, b any) (bool, error) {
	if err := ev.step(1); err != nil {
		return false, err
	}
	switch x := a.(type) {
	case nil:
		return b == nil, nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y, nil
	case float64:
		y, ok := b.(float64)
		return ok && x == y, nil
	case string:
		y, ok := b.(string)
		if !ok || len(x) != len(y) {
			return false, nil
		}
		if err := ev.scan(len(x)); err != nil {
			return false, err
		}
		return x == y, nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false, nil
		}
		for i := range x {
			eq, err := ev.equal(x[i], y[i])
			if err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false, nil
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok {
				return false, nil
			}
			eq, err := ev.equal(xv, yv)
			if err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	}
	// an expression reference, or a value of another shape: only itself
	return false, nil
}

// size charges a walk over v and returns the length of its JSON text, an
// upper bound of what encoding it or handing it to JavaScript allocates.
// A value built by doubling shares its parts, so its text can be far
// larger than its memory: the walk is what the budget stops.
func (ev *evaluator) size(v any) (int64, error) {
	if err := ev.step(1); err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case nil:
		return 4, nil
	case bool:
		return 5, nil
	case float64:
		return 24, nil
	case string:
		// escaping can make a character six bytes long (\u0000)
		return 2 + 6*int64(len(x)), nil
	case []any:
		n := int64(2)
		for _, e := range x {
			s, err := ev.size(e)
			if err != nil {
				return 0, err
			}
			n += s + 1
		}
		return n, nil
	case map[string]any:
		n := int64(2)
		for k, e := range x {
			s, err := ev.size(e)
			if err != nil {
				return 0, err
			}
			n += s + 4 + 6*int64(len(k))
		}
		return n, nil
	}
	return 16, nil
}
