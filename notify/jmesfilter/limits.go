package jmesfilter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// Limits bound filters: what one evaluation may do, and how deeply an
// expression may nest. Anyone may write a subscription's filter, and a
// broadcast evaluates it for every subscriber, so every function and
// operator is paid for from the budget before it runs.
type Limits struct {
	// Steps bounds the work of one evaluation: AST nodes evaluated,
	// elements visited by projections, comparisons, sorts and functions,
	// a step per 64 bytes a function reads.
	Steps int64
	// Bytes bounds what one evaluation allocates in total (results of
	// projections, functions, text it builds), estimated before each
	// allocation, so that none is made over the budget.
	Bytes int64
	// Time bounds one evaluation by the clock, custom functions included:
	// JavaScript that runs longer is interrupted.
	Time time.Duration
	// Depth bounds the nesting of an expression, in its text (brackets,
	// braces, parentheses) and in its syntax tree (a.b.c, !!x, a | b | c).
	Depth int
}

// DefaultLimits are generous for filters as people write them (a few
// dozen steps on a notification's data; a projection over ten thousand
// elements fits) and small enough that a filter over budget costs a
// broadcast little: 200,000 steps are about 10 ms of one core, 8 MiB of
// allocations, and a filter calling custom functions is stopped after
// 100 ms.
var DefaultLimits = Limits{Steps: 200_000, Bytes: 8 << 20, Time: 100 * time.Millisecond, Depth: 64}

// ErrBudget is what an evaluation over its budget returns (as a
// *BudgetError): the filter does not match.
var ErrBudget = errors.New("the filter went over its evaluation budget")

// BudgetError says which bound an evaluation reached.
type BudgetError struct {
	Reason string // e.g. "more than 1000000 steps"
}

func (e *BudgetError) Error() string { return ErrBudget.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrBudget) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// trialShare is the part of the budget the write-time trial run may use:
// an expression that spends even that with no data at all cannot be meant
// as a filter, and the trial stays cheap for the anonymous caller's request.
const trialShare = 100

// checkBounds refuses, when a filter is written, expressions that could
// never be evaluated within the limits: nesting deeper than Depth, a
// literal width no budget can hold, and expressions that go over the
// budget before reading any data (doubling an array sixty times over
// needs no data).
func (e *Engine) checkBounds(expr string, node parsing.ASTNode) error {
	if d := textDepth(expr); d > e.limits.Depth {
		return fmt.Errorf("the expression nests %d levels deep; at most %d are allowed", d, e.limits.Depth)
	}
	if d := treeDepth(node, 0, e.limits.Depth+1); d > e.limits.Depth {
		return fmt.Errorf("the expression nests more than %d levels deep", e.limits.Depth)
	}
	if err := e.checkLiterals(node); err != nil {
		return err
	}
	trial := e.limits
	trial.Steps = max(trial.Steps/trialShare, 1000)
	trial.Bytes = max(trial.Bytes/trialShare, 64<<10)
	trial.Time = 0
	for _, data := range []any{nil, map[string]any{}} {
		ev := &evaluator{ctx: context.Background(), engine: e, root: data, limits: trial, dry: true}
		func() {
			// A failure of the trial is the data's absence; only the
			// budget counts here.
			defer func() { _ = recover() }()
			_, _ = ev.eval(node, data, nil)
		}()
		var be *BudgetError
		if errors.As(ev.err, &be) {
			return fmt.Errorf("the expression does too much work even without data (%s)", be.Reason)
		}
	}
	return nil
}

// checkLiterals refuses pad_left and pad_right with a literal width that
// is more than an evaluation may allocate.
func (e *Engine) checkLiterals(n parsing.ASTNode) error {
	if n.NodeType == parsing.ASTFunctionExpression {
		name, _ := n.Value.(string)
		if _, custom := e.custom[name]; !custom && (name == "pad_left" || name == "pad_right") && len(n.Children) > 1 {
			if lit := n.Children[1]; lit.NodeType == parsing.ASTLiteral {
				if w, ok := width(lit.Value); ok && w > e.limits.Bytes {
					return fmt.Errorf("%s(): a width of %v is more than the %d bytes a filter may use", name, lit.Value, e.limits.Bytes)
				}
			}
		}
	}
	for _, c := range n.Children {
		if err := e.checkLiterals(c); err != nil {
			return err
		}
	}
	return nil
}

// treeDepth is the depth of the syntax tree, counted up to limit.
func treeDepth(n parsing.ASTNode, d, limit int) int {
	d++
	if d >= limit {
		return d
	}
	deepest := d
	for _, c := range n.Children {
		deepest = max(deepest, treeDepth(c, d, limit))
		if deepest >= limit {
			break
		}
	}
	return deepest
}

// textDepth is the deepest nesting of (), [] and {} in an expression,
// outside its string, identifier and JSON literals.
func textDepth(expr string) int {
	depth, deepest := 0, 0
	var quote byte
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"', '`':
			quote = c
		case '(', '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ')', ']', '}':
			depth--
		}
	}
	return deepest
}
