package jsrt

import (
	"reflect"
	"strings"
	"sync"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
)

// Locator finds the line where a key path is written in a source file, so
// that a problem with a value (a renamed key, a wrong type) can point at
// it. It reads the object literals of the file; a key set by code (a
// computed name, a spread, an assignment) is not found and gives line 0.
// For .ts files give it the transpiled code: its inline source map brings
// lines back to the .ts file. JSON files work too (JSON is a JavaScript
// expression).
type Locator struct {
	name, code string
	once       sync.Once
	prg        *ast.Program
	roots      []*ast.ObjectLiteral
}

// NewLocator returns a Locator for one file; parsing happens at first use.
func NewLocator(name, code string) *Locator {
	return &Locator{name: name, code: code}
}

// Line returns the line of the deepest key of a dotted path that is written
// in a top-level object literal of the file, or 0.
func (l *Locator) Line(path string) int {
	l.once.Do(l.parse)
	if l.prg == nil {
		return 0
	}
	keys := strings.Split(path, ".")
	best, bestDepth := 0, 0
	for _, root := range l.roots {
		idx, depth := match(root, keys)
		if depth > bestDepth {
			best, bestDepth = int(idx), depth
		}
	}
	if bestDepth == 0 {
		return 0
	}
	return l.prg.File.Position(best - l.prg.File.Base()).Line
}

func (l *Locator) parse() {
	src := l.code
	if strings.HasSuffix(l.name, ".json") {
		src = "(" + src + "\n)"
	}
	prg, err := parser.ParseFile(nil, l.name, src, 0)
	if err != nil {
		return
	}
	l.prg = prg
	var all []*ast.ObjectLiteral
	children := map[*ast.ObjectLiteral]bool{}
	seen := map[*ast.ObjectLiteral]bool{}
	var visit func(v reflect.Value)
	fileType := reflect.TypeOf(file.File{})
	visit = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface:
			if !v.IsNil() {
				visit(v.Elem())
			}
		case reflect.Ptr:
			if v.IsNil() || v.Elem().Type() == fileType {
				return
			}
			if o, ok := v.Interface().(*ast.ObjectLiteral); ok {
				if seen[o] {
					return
				}
				seen[o] = true
				all = append(all, o)
				for _, p := range o.Value {
					if pk, ok := p.(*ast.PropertyKeyed); ok {
						if child, ok := pk.Value.(*ast.ObjectLiteral); ok {
							children[child] = true
						}
					}
				}
			}
			visit(v.Elem())
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					visit(v.Field(i))
				}
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				visit(v.Index(i))
			}
		}
	}
	visit(reflect.ValueOf(prg))
	for _, o := range all {
		if !children[o] {
			l.roots = append(l.roots, o)
		}
	}
}

// match follows keys through nested object literals and returns the
// position of the deepest key found and how many keys matched.
func match(o *ast.ObjectLiteral, keys []string) (file.Idx, int) {
	if len(keys) == 0 {
		return 0, 0
	}
	for _, p := range o.Value {
		var name string
		var idx file.Idx
		var value ast.Expression
		switch pt := p.(type) {
		case *ast.PropertyKeyed:
			if pt.Computed {
				continue
			}
			switch k := pt.Key.(type) {
			case *ast.StringLiteral:
				name = k.Value.String()
			case *ast.Identifier:
				name = k.Name.String()
			case *ast.NumberLiteral:
				name = k.Literal
			default:
				continue
			}
			idx, value = pt.Key.Idx0(), pt.Value
		case *ast.PropertyShort:
			name, idx = pt.Name.Name.String(), pt.Name.Idx0()
		default:
			continue
		}
		if name != keys[0] {
			continue
		}
		if child, ok := value.(*ast.ObjectLiteral); ok && len(keys) > 1 {
			if ci, cd := match(child, keys[1:]); cd > 0 {
				return ci, cd + 1
			}
		}
		return idx, 1
	}
	return 0, 0
}
