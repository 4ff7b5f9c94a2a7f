package upgrade

import (
	"fmt"
	"strings"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// mergeInto merges the object at path of src into dst so that src's values
// win, reproducing what loading dst and then src did before v4 (lodash
// mergeWith: plain objects merged key by key, arrays and every other value
// replaced, an undefined source value skipped).
//
// A source value that is an expression may be undefined when the file
// runs (process.env.X): it is written as `X ?? <dst value>` so the
// destination's value still applies when it is. Where the outcome would
// depend on whether an expression yields an object at run time, the merge
// is refused with the key named, since no text can express lodash's deep
// merge of two unknown objects.
func mergeInto(dst, src configDoc, path []string) error {
	for _, k := range src.keys(path) {
		kp := append(append([]string(nil), path...), k)
		sv, _ := src.get(kp)
		ev, ok := src.export(kp)
		if !ok {
			return fmt.Errorf("%s:%d: %s is not a plain `key: value` property; merge it by hand", docName(src), sv.line, strings.Join(kp, "."))
		}
		dv, exists := dst.get(kp)
		if !exists {
			if err := dst.set(kp, ev); err != nil {
				return err
			}
			continue
		}
		if sv.kind == kindObject && dv.kind == kindObject {
			if err := mergeInto(dst, src, kp); err != nil {
				return err
			}
			continue
		}
		sc, dc := classify(sv), classify(dv)
		switch {
		case sv.kind == kindObject && dc.object:
			return fmt.Errorf("%s:%d: cannot merge %s: the value in %s (line %d) may be an object when it runs; merge it by hand", docName(src), sv.line, strings.Join(kp, "."), docName(dst), dv.line)
		case sv.kind == kindObject || !sc.undef:
			if err := dst.set(kp, ev); err != nil {
				return err
			}
		case sc.object && dc.object:
			return fmt.Errorf("%s:%d: cannot merge %s: both values may be objects when they run; merge it by hand", docName(src), sv.line, strings.Join(kp, "."))
		case sc.null:
			return fmt.Errorf("%s:%d: cannot merge %s: the value may be undefined or null when it runs; merge it by hand", docName(src), sv.line, strings.Join(kp, "."))
		default:
			dvExp, _ := dst.export(kp)
			v := value{src: operand(ev.src, sv.expr) + " ?? " + operand(dvExp.src, dv.expr), comments: ev.comments}
			if err := dst.set(kp, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func docName(d configDoc) string {
	switch d := d.(type) {
	case *jsFile:
		return d.name
	case *jsonFile:
		return d.name
	}
	return "?"
}

// operand parenthesizes an expression that could not stand beside `??`.
func operand(src string, e ast.Expression) string {
	switch e.(type) {
	case nil, *ast.StringLiteral, *ast.NumberLiteral, *ast.BooleanLiteral, *ast.NullLiteral,
		*ast.Identifier, *ast.DotExpression, *ast.BracketExpression, *ast.CallExpression,
		*ast.ObjectLiteral, *ast.ArrayLiteral, *ast.TemplateLiteral:
		return src
	}
	return "(" + src + ")"
}

// what an expression may evaluate to
type possible struct{ undef, null, object bool }

func classify(n node) possible {
	switch n.kind {
	case kindObject:
		return possible{object: true}
	case kindStatic:
		return possible{null: n.static == nil}
	}
	if n.expr == nil {
		return possible{undef: true, null: true, object: true}
	}
	return classifyExpr(n.expr, n.consts, 0)
}

// classifyExpr judges what an expression may evaluate to; identifiers of
// the file's top-level constants are judged by their initializers.
func classifyExpr(e ast.Expression, consts map[string]ast.Expression, depth int) possible {
	if depth > 20 {
		return possible{undef: true, null: true, object: true}
	}
	c := func(x ast.Expression) possible { return classifyExpr(x, consts, depth+1) }
	switch e := e.(type) {
	case *ast.StringLiteral, *ast.NumberLiteral, *ast.BooleanLiteral, *ast.RegExpLiteral,
		*ast.ArrayLiteral, *ast.FunctionLiteral, *ast.ArrowFunctionLiteral, *ast.ClassLiteral:
		return possible{}
	case *ast.NullLiteral:
		return possible{null: true}
	case *ast.ObjectLiteral:
		return possible{object: true}
	case *ast.TemplateLiteral:
		if e.Tag == nil {
			return possible{}
		}
	case *ast.Identifier:
		if e.Name == "undefined" {
			return possible{undef: true}
		}
		if init, ok := consts[e.Name.String()]; ok {
			return c(init)
		}
	case *ast.DotExpression:
		if isProcessEnv(e.Left) {
			return possible{undef: true}
		}
	case *ast.BracketExpression:
		if isProcessEnv(e.Left) {
			return possible{undef: true}
		}
	case *ast.UnaryExpression:
		switch e.Operator {
		case token.NOT, token.MINUS, token.PLUS, token.BITWISE_NOT, token.TYPEOF:
			return possible{}
		}
	case *ast.BinaryExpression:
		l, r := c(e.Left), c(e.Right)
		switch e.Operator {
		case token.LOGICAL_OR, token.COALESCE:
			return possible{undef: r.undef, null: r.null, object: l.object || r.object}
		case token.LOGICAL_AND:
			return possible{undef: l.undef || r.undef, null: l.null || r.null, object: r.object}
		default:
			return possible{} // arithmetic, concatenation, comparison
		}
	case *ast.ConditionalExpression:
		a, b := c(e.Consequent), c(e.Alternate)
		return possible{undef: a.undef || b.undef, null: a.null || b.null, object: a.object || b.object}
	}
	return possible{undef: true, null: true, object: true}
}

func isProcessEnv(e ast.Expression) bool {
	d, ok := e.(*ast.DotExpression)
	if !ok || d.Identifier.Name != "env" {
		return false
	}
	id, ok := d.Left.(*ast.Identifier)
	return ok && id.Name == "process"
}

// mayBeFalsy reports whether an expression may be falsy when it runs.
func mayBeFalsy(n node) bool {
	switch n.kind {
	case kindObject:
		return false
	case kindStatic:
		switch v := n.static.(type) {
		case string:
			return v == ""
		case float64:
			return v == 0
		case bool:
			return !v
		case nil:
			return true
		}
		return false
	}
	if n.expr == nil {
		return true
	}
	return exprFalsy(n.expr)
}

func exprFalsy(e ast.Expression) bool {
	switch e := e.(type) {
	case *ast.BinaryExpression:
		if e.Operator == token.LOGICAL_OR {
			return exprFalsy(e.Right)
		}
	case *ast.StringLiteral:
		return e.Value.String() == ""
	case *ast.NumberLiteral:
		return e.Literal == "0"
	case *ast.ObjectLiteral, *ast.ArrayLiteral, *ast.FunctionLiteral, *ast.ArrowFunctionLiteral:
		return false
	}
	return true
}
