package upgrade

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
	"github.com/dop251/goja/token"
)

// jsFile is a CommonJS config file of the shape `module.exports = { … }`,
// edited as source text. Every edit replaces a byte range located through
// goja's parser positions and then parses the whole file again, so positions
// never go stale and a bad edit is caught at once. Text outside the edited
// ranges — other properties, functions, comments, blank lines — is kept as
// written.
type jsFile struct {
	name    string
	text    string
	root    *jsObject
	indent  string // one level of indentation as the file uses it
	edited  bool
	crlf    bool     // the file's lines end in \r\n
	dropped []string // comments that an edit could not keep, for the report

	exportAt int                       // start of the line of the module.exports statement
	prelude  []preludeStmt             // top-level statements before and after it
	consts   map[string]ast.Expression // top-level const initializers and function declarations
}

// preludeStmt is a top-level declaration beside module.exports (a helper
// const, a function), which values in the object may refer to.
type preludeStmt struct {
	text  string
	names []string
}

// jsObject is an object literal with the spans of its properties.
type jsObject struct {
	lbrace, rbrace int // offsets of '{' and '}'
	props          []*jsProp
}

// jsProp is one property of an object literal. Offsets are byte offsets in
// jsFile.text. full spans the property with its leading comments, its
// trailing comma and a comment on the same line, so deleting or moving full
// leaves neighbours intact.
type jsProp struct {
	key              string
	keyed            bool // false for spread elements, whose keys are unknown
	plainKey         bool // an identifier or string key that can be renamed
	method           bool // get/set/method shorthand: the value is the whole property
	start            int  // first code character of the property
	keyStart, keyEnd int
	valStart, valEnd int
	fullStart        int
	fullEnd          int
	hasComma         bool
	value            ast.Expression
	obj              *jsObject // when value is an object literal
}

// errShape is returned for a .js file that is not `module.exports = { … }`.
var errShape = errors.New("the file must have the shape `module.exports = { … }` (an object literal assigned to module.exports, no other assignment to module.exports or exports)")

func parseJSFile(name, text string) (*jsFile, error) {
	// Edits work on \n line ends; a file written with \r\n gets them back.
	crlf := strings.Contains(text, "\r\n")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	f := &jsFile{name: name, text: text, crlf: crlf}
	if err := f.reparse(); err != nil {
		return nil, err
	}
	f.indent = detectIndent(text)
	return f, nil
}

// syntaxError carries a parser message with the line and column it names.
type syntaxError struct {
	file      string
	line, col int
	msg       string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.file, e.line, e.col, e.msg)
}

func (f *jsFile) reparse() error {
	prog, err := parser.ParseFile(nil, f.name, f.text, 0, parser.WithDisableSourceMaps)
	if err != nil {
		var list parser.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			p := list[0].Position
			return &syntaxError{file: f.name, line: p.Line, col: p.Column, msg: "cannot parse as JavaScript: " + list[0].Message}
		}
		return fmt.Errorf("%s: cannot parse as JavaScript: %w", f.name, err)
	}
	var obj *ast.ObjectLiteral
	f.prelude = nil
	f.consts = map[string]ast.Expression{}
	for _, st := range prog.Body {
		switch s := st.(type) {
		case *ast.ExpressionStatement:
			if a, ok := s.Expression.(*ast.AssignExpression); ok && isModuleExports(a.Left) {
				o, ok := a.Right.(*ast.ObjectLiteral)
				if !ok || obj != nil || a.Operator != token.ASSIGN {
					return fmt.Errorf("%s: %w", f.name, errShape)
				}
				obj = o
				f.exportAt = lineStart(f.text, int(st.Idx0())-1)
				continue
			}
			src := f.slice(st)
			if strings.Contains(src, "exports") {
				return fmt.Errorf("%s:%d: %w", f.name, f.line(int(st.Idx0())-1), errShape)
			}
			if _, directive := s.Expression.(*ast.StringLiteral); !directive {
				f.prelude = append(f.prelude, preludeStmt{text: f.stmtLines(st)})
			}
		case *ast.VariableStatement, *ast.LexicalDeclaration, *ast.FunctionDeclaration, *ast.EmptyStatement, *ast.ClassDeclaration:
			if strings.Contains(f.slice(st), "module.exports") {
				return fmt.Errorf("%s:%d: %w", f.name, f.line(int(st.Idx0())-1), errShape)
			}
			ps := preludeStmt{text: f.stmtLines(st)}
			switch s := st.(type) {
			case *ast.VariableStatement:
				ps.names = bindingNames(s.List)
			case *ast.LexicalDeclaration:
				ps.names = bindingNames(s.List)
				if s.Token == token.CONST {
					for _, b := range s.List {
						if id, ok := b.Target.(*ast.Identifier); ok && b.Initializer != nil {
							f.consts[id.Name.String()] = b.Initializer
						}
					}
				}
			case *ast.FunctionDeclaration:
				if s.Function.Name != nil {
					ps.names = []string{s.Function.Name.Name.String()}
					f.consts[s.Function.Name.Name.String()] = s.Function
				}
			case *ast.ClassDeclaration:
				if s.Class.Name != nil {
					ps.names = []string{s.Class.Name.Name.String()}
				}
			case *ast.EmptyStatement:
				continue
			}
			f.prelude = append(f.prelude, ps)
		default:
			return fmt.Errorf("%s:%d: %w", f.name, f.line(int(st.Idx0())-1), errShape)
		}
	}
	if obj == nil {
		return fmt.Errorf("%s: %w", f.name, errShape)
	}
	root, err := f.object(obj)
	if err != nil {
		return err
	}
	f.root = root
	return nil
}

func (f *jsFile) slice(n ast.Node) string {
	a, b := int(n.Idx0())-1, f.end(n)
	if a < 0 || b > len(f.text) || a > b {
		return ""
	}
	return f.text[a:b]
}

func isModuleExports(e ast.Expression) bool {
	d, ok := e.(*ast.DotExpression)
	if !ok || d.Identifier.Name != "exports" {
		return false
	}
	id, ok := d.Left.(*ast.Identifier)
	return ok && id.Name == "module"
}

// object computes the property spans of an object literal.
func (f *jsFile) object(o *ast.ObjectLiteral) (*jsObject, error) {
	obj := &jsObject{lbrace: int(o.LeftBrace) - 1, rbrace: int(o.RightBrace) - 1}
	t := f.text
	// The first property starts on the line after '{' when the brace ends
	// its line (a comment after the brace stays with the brace).
	prev := obj.lbrace + 1
	if p := skipBlanks(t, prev); p < len(t) && (t[p] == '\n' || t[p] == '\r' || strings.HasPrefix(t[p:], "//")) {
		prev = lineEnd(t, p)
	}
	for _, p := range o.Value {
		jp := &jsProp{fullStart: prev}
		jp.start = skipSpaceComments(t, prev)
		switch p := p.(type) {
		case *ast.PropertyKeyed:
			jp.keyed = true
			jp.keyStart, jp.keyEnd = int(p.Key.Idx0())-1, f.end(p.Key)
			switch k := p.Key.(type) {
			case *ast.StringLiteral:
				jp.key, jp.plainKey = k.Value.String(), !p.Computed
			case *ast.Identifier:
				jp.key, jp.plainKey = k.Name.String(), !p.Computed
			case *ast.NumberLiteral:
				jp.key = k.Literal
			default:
				jp.key = f.text[jp.keyStart:jp.keyEnd]
			}
			if p.Computed {
				jp.keyed = false
			}
			jp.value = p.Value
			if p.Kind != ast.PropertyKindValue {
				jp.method = true
				jp.valStart = jp.start
			} else {
				c := skipSpaceComments(t, jp.keyEnd)
				if c < len(t) && t[c] == ']' { // computed key
					c = skipSpaceComments(t, c+1)
				}
				if c >= len(t) || t[c] != ':' {
					return nil, fmt.Errorf("%s:%d: unexpected property syntax", f.name, f.line(jp.keyStart))
				}
				jp.valStart = skipSpaceComments(t, c+1)
			}
			jp.valEnd = f.end(p.Value)
		case *ast.PropertyShort:
			jp.keyed, jp.plainKey = true, false
			jp.key = p.Name.Name.String()
			jp.keyStart, jp.keyEnd = int(p.Name.Idx)-1, f.end(p)
			jp.valStart, jp.valEnd = jp.keyStart, f.end(p)
			jp.value = &p.Name
		case *ast.SpreadElement:
			jp.valStart, jp.valEnd = jp.start, f.end(p.Expression)
			jp.keyStart, jp.keyEnd = jp.start, jp.start
			jp.value = p.Expression
		default:
			return nil, fmt.Errorf("%s: unsupported property", f.name)
		}
		// Closing parentheses of a parenthesized value belong to the value.
		end := jp.valEnd
		for {
			c := skipSpaceComments(t, end)
			if c < len(t) && t[c] == ')' {
				end = c + 1
				continue
			}
			break
		}
		jp.valEnd = end
		d := skipSpaceComments(t, end)
		if d < len(t) && t[d] == ',' {
			jp.hasComma = true
			d++
		} else {
			d = end
		}
		jp.fullEnd = trailing(t, d)
		if jp.fullEnd > obj.rbrace {
			jp.fullEnd = obj.rbrace
		}
		if ol, ok := jp.value.(*ast.ObjectLiteral); ok && !jp.method {
			sub, err := f.object(ol)
			if err != nil {
				return nil, err
			}
			jp.obj = sub
		}
		obj.props = append(obj.props, jp)
		prev = jp.fullEnd
	}
	return obj, nil
}

// trailing extends a property end over blanks, a comment on the same line
// and the line break.
func trailing(t string, p int) int {
	q := skipBlanks(t, p)
	for strings.HasPrefix(t[q:], "/*") {
		e := strings.Index(t[q+2:], "*/")
		if e < 0 || strings.Contains(t[q:q+2+e], "\n") {
			break
		}
		q = skipBlanks(t, q+2+e+2)
	}
	if strings.HasPrefix(t[q:], "//") {
		return lineEnd(t, q)
	}
	if q < len(t) && (t[q] == '\n' || t[q] == '\r') {
		return lineEnd(t, q)
	}
	return p
}

func skipBlanks(t string, p int) int {
	for p < len(t) && (t[p] == ' ' || t[p] == '\t') {
		p++
	}
	return p
}

// lineEnd returns the offset after the line break that ends the line at p.
func lineEnd(t string, p int) int {
	i := strings.IndexByte(t[p:], '\n')
	if i < 0 {
		return len(t)
	}
	return p + i + 1
}

func lineStart(t string, p int) int {
	return strings.LastIndexByte(t[:p], '\n') + 1
}

func skipSpaceComments(t string, p int) int {
	for p < len(t) {
		switch {
		case t[p] == ' ' || t[p] == '\t' || t[p] == '\n' || t[p] == '\r':
			p++
		case strings.HasPrefix(t[p:], "//"):
			p = lineEnd(t, p)
		case strings.HasPrefix(t[p:], "/*"):
			e := strings.Index(t[p+2:], "*/")
			if e < 0 {
				return len(t)
			}
			p += 2 + e + 2
		default:
			return p
		}
	}
	return p
}

func (f *jsFile) line(off int) int {
	if off < 0 {
		off = 0
	}
	if off > len(f.text) {
		off = len(f.text)
	}
	return strings.Count(f.text[:off], "\n") + 1
}

func detectIndent(t string) string {
	for _, l := range strings.Split(t, "\n") {
		trimmed := strings.TrimLeft(l, " \t")
		if trimmed == "" || len(trimmed) == len(l) {
			continue
		}
		ind := l[:len(l)-len(trimmed)]
		if strings.HasPrefix(ind, "\t") {
			return "\t"
		}
		if len(ind) >= 2 && len(ind) <= 8 {
			return ind
		}
	}
	return "  "
}

// prop finds the property at path.
func (f *jsFile) prop(path []string) (*jsProp, *jsObject) {
	obj := f.root
	for i, k := range path {
		var found *jsProp
		// A later duplicate wins, as in JavaScript.
		for _, p := range obj.props {
			if p.keyed && p.key == k {
				found = p
			}
		}
		if found == nil {
			return nil, obj
		}
		if i == len(path)-1 {
			return found, obj
		}
		if found.obj == nil {
			return nil, nil
		}
		obj = found.obj
	}
	return nil, obj
}

func (f *jsFile) objectAt(path []string) *jsObject {
	if len(path) == 0 {
		return f.root
	}
	p, _ := f.prop(path)
	if p == nil {
		return nil
	}
	return p.obj
}

func (f *jsFile) get(path []string) (node, bool) {
	p, _ := f.prop(path)
	if p == nil {
		return node{}, false
	}
	return f.nodeOf(p), true
}

func (f *jsFile) nodeOf(p *jsProp) node {
	n := node{src: f.text[p.valStart:p.valEnd], line: f.line(p.start), expr: p.value, consts: f.consts}
	switch {
	case p.method:
		n.kind = kindDynamic
	case p.obj != nil:
		n.kind = kindObject
	default:
		if v, ok := staticJS(p.value); ok {
			n.kind, n.static = kindStatic, v
		} else {
			n.kind = kindDynamic
		}
	}
	return n
}

func (f *jsFile) keys(path []string) []string {
	o := f.objectAt(path)
	if o == nil {
		return nil
	}
	var ks []string
	seen := map[string]bool{}
	for _, p := range o.props {
		if p.keyed && !seen[p.key] {
			ks = append(ks, p.key)
			seen[p.key] = true
		}
	}
	return ks
}

func (f *jsFile) replace(a, b int, s string) error {
	old := f.text
	f.text = old[:a] + s + old[b:]
	if err := f.reparse(); err != nil {
		f.text = old
		_ = f.reparse()
		return fmt.Errorf("internal error: an edit of %s did not parse (%v)", f.name, err)
	}
	f.edited = true
	return nil
}

// commentsIn returns the comments in t, for reporting what an edit drops.
func commentsIn(t string) []string {
	var out []string
	inStr := byte(0)
	for p := 0; p < len(t); p++ {
		c := t[p]
		if inStr != 0 {
			if c == '\\' {
				p++
			} else if c == inStr {
				inStr = 0
			}
			continue
		}
		switch {
		case c == '\'' || c == '"' || c == '`':
			inStr = c
		case strings.HasPrefix(t[p:], "//"):
			e := lineEnd(t, p)
			out = append(out, strings.TrimSpace(t[p:e]))
			p = e - 1
		case strings.HasPrefix(t[p:], "/*"):
			e := strings.Index(t[p+2:], "*/")
			if e < 0 {
				e = len(t) - p - 2
			}
			out = append(out, strings.TrimSpace(t[p:p+2+e+2]))
			p += 2 + e + 1
		}
	}
	return out
}

// del removes a property; an object it leaves empty (no properties, no
// comments) is removed too, since it adds nothing to the merged config.
func (f *jsFile) del(path []string) error {
	if err := f.delOne(path); err != nil {
		return err
	}
	for len(path) > 1 {
		path = path[:len(path)-1]
		o := f.objectAt(path)
		if o == nil || len(o.props) > 0 || strings.TrimSpace(f.text[o.lbrace+1:o.rbrace]) != "" {
			break
		}
		if err := f.delOne(path); err != nil {
			return err
		}
	}
	return nil
}

func (f *jsFile) delOne(path []string) error {
	p, _ := f.prop(path)
	if p == nil {
		return nil
	}
	for _, c := range commentsIn(f.text[p.fullStart:p.fullEnd]) {
		f.dropped = append(f.dropped, fmt.Sprintf("%s: comment dropped with %s: %s", f.name, strings.Join(path, "."), c))
	}
	a, b := p.fullStart, p.fullEnd
	if !p.hasComma {
		// The last property without a trailing comma: remove the comma of
		// the property before it too, so JSON-like files stay tidy.
		_, parent := f.prop(path)
		if i := indexOf(parent, p); i > 0 {
			q := parent.props[i-1]
			if q.hasComma {
				c := strings.LastIndexByte(f.text[q.valEnd:q.fullEnd], ',')
				if c >= 0 && strings.TrimSpace(f.text[q.valEnd+c+1:p.fullStart]) == "" && strings.TrimSpace(f.text[q.valEnd:q.valEnd+c]) == "" {
					return f.replaceTwo(q.valEnd+c, q.valEnd+c+1, "", a, b, "")
				}
			}
		}
	}
	return f.replace(a, b, "")
}

func indexOf(o *jsObject, p *jsProp) int {
	if o == nil {
		return -1
	}
	for i, q := range o.props {
		if q == p {
			return i
		}
	}
	return -1
}

// replaceTwo applies two non-overlapping edits, the first before the second.
func (f *jsFile) replaceTwo(a1, b1 int, s1 string, a2, b2 int, s2 string) error {
	old := f.text
	f.text = old[:a1] + s1 + old[b1:a2] + s2 + old[b2:]
	if err := f.reparse(); err != nil {
		f.text = old
		_ = f.reparse()
		return fmt.Errorf("internal error: an edit of %s did not parse (%v)", f.name, err)
	}
	f.edited = true
	return nil
}

func (f *jsFile) rename(path []string, newKey string) error {
	p, _ := f.prop(path)
	if p == nil {
		return nil
	}
	if !p.plainKey {
		return fmt.Errorf("%s:%d: cannot rename %s: it is not a plain `key: value` property", f.name, f.line(p.start), strings.Join(path, "."))
	}
	return f.replace(p.keyStart, p.keyEnd, jsKey(newKey))
}

// propIndent is the indentation of the line a property starts on.
func (f *jsFile) propIndent(p *jsProp) string {
	ls := lineStart(f.text, p.start)
	return f.text[ls:skipBlanks(f.text, ls)]
}

func (f *jsFile) objIndent(o *jsObject) string {
	ls := lineStart(f.text, o.lbrace)
	return f.text[ls:skipBlanks(f.text, ls)]
}

// reindent moves the continuation lines of a multi-line value from one
// indentation to another. Values holding template literals are left as
// they are, since their line breaks are part of the string.
func reindent(s, from, to string) string {
	if from == to || !strings.Contains(s, "\n") || strings.Contains(s, "`") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], from) {
			lines[i] = to + lines[i][len(from):]
		} else if strings.TrimSpace(lines[i]) != "" && len(to) > len(from) {
			lines[i] = to[:len(to)-len(from)] + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// insertProp adds property text (`key: value`, possibly preceded by comment
// lines, written at indentation zero) at the end of an object.
func (f *jsFile) insertProp(o *jsObject, propText string) error {
	t := f.text
	if len(o.props) == 0 {
		ind := f.objIndent(o)
		inner := ind + f.indent
		body := indentLines(propText, inner)
		return f.replace(o.lbrace+1, o.rbrace, "\n"+body+",\n"+ind)
	}
	last := o.props[len(o.props)-1]
	multiline := strings.Contains(t[o.lbrace:o.rbrace], "\n")
	if !multiline {
		ins := ", " + propText
		if last.hasComma {
			ins = " " + propText + ","
			return f.replace(last.fullEnd, last.fullEnd, strings.TrimLeft(ins, " ")+" ")
		}
		return f.replace(last.valEnd, last.valEnd, ins)
	}
	ind := f.propIndent(last)
	body := indentLines(propText, ind) + ",\n"
	at := last.fullEnd
	if !strings.HasSuffix(t[:at], "\n") {
		// The last property ends on the closing brace's line.
		body = "\n" + body
		if !last.hasComma {
			return f.replaceTwo(last.valEnd, last.valEnd, ",", at, at, strings.TrimSuffix(body, "\n")+"\n"+f.objIndent(o))
		}
		return f.replace(at, at, strings.TrimSuffix(body, "\n")+"\n"+f.objIndent(o))
	}
	if !last.hasComma {
		return f.replaceTwo(last.valEnd, last.valEnd, ",", at, at, body)
	}
	return f.replace(at, at, body)
}

func indentLines(s, ind string) string {
	lines := strings.Split(s, "\n")
	inTemplate := false
	for i, l := range lines {
		if !inTemplate && strings.TrimSpace(l) != "" {
			lines[i] = ind + l
		}
		if strings.Count(l, "`")%2 == 1 {
			inTemplate = !inTemplate
		}
	}
	return strings.Join(lines, "\n")
}

// set replaces the value at path, or inserts it, creating missing parent
// objects. v.src is JavaScript source written at indentation zero.
func (f *jsFile) set(path []string, v value) error {
	src := v.jsSource()
	if p, parent := f.prop(path); p != nil && v.method {
		_ = parent
		return f.replace(p.start, p.valEnd, reindent(src, "", f.propIndent(p)))
	}
	if p, parent := f.prop(path); p != nil {
		if p.method || !p.keyed {
			return fmt.Errorf("%s:%d: cannot replace %s: it is not a plain `key: value` property", f.name, f.line(p.start), strings.Join(path, "."))
		}
		_ = parent
		ind := f.propIndent(p)
		if v.comments != "" && !strings.Contains(f.text[p.fullStart:p.start], strings.TrimSpace(v.comments)) {
			c := strings.ReplaceAll(v.comments, "\n", "\n"+ind)
			return f.replaceTwo(p.start, p.start, c, p.valStart, p.valEnd, reindent(src, "", ind))
		}
		return f.replace(p.valStart, p.valEnd, reindent(src, "", ind))
	}
	// Find the deepest existing object on the path.
	obj := f.root
	i := 0
	for ; i < len(path)-1; i++ {
		p, _ := f.propIn(obj, path[i])
		if p == nil {
			break
		}
		if p.obj == nil {
			return fmt.Errorf("%s:%d: cannot add %s: %s is not an object literal", f.name, f.line(p.start), strings.Join(path, "."), strings.Join(path[:i+1], "."))
		}
		obj = p.obj
	}
	text := jsKey(path[len(path)-1]) + ": " + src
	if v.method {
		text = src
	}
	text = v.comments + text
	for j := len(path) - 2; j >= i; j-- {
		text = jsKey(path[j]) + ": {\n" + indentLines(text, f.indent) + ",\n}"
	}
	return f.insertProp(obj, text)
}

func (f *jsFile) propIn(o *jsObject, k string) (*jsProp, bool) {
	var found *jsProp
	for _, p := range o.props {
		if p.keyed && p.key == k {
			found = p
		}
	}
	return found, found != nil
}

// leadingComments returns the comment lines written before a property,
// unindented, each ending in a newline.
func (f *jsFile) leadingComments(p *jsProp) string {
	seg := f.text[p.fullStart:p.start]
	var b strings.Builder
	for _, l := range strings.Split(seg, "\n") {
		if s := strings.TrimSpace(l); s != "" {
			b.WriteString(s + "\n")
		}
	}
	return b.String()
}

// move takes a property with its comments from one path to another.
func (f *jsFile) move(from, to []string) error {
	p, _ := f.prop(from)
	if p == nil {
		return nil
	}
	if p.method || !p.keyed {
		return fmt.Errorf("%s:%d: cannot move %s: it is not a plain `key: value` property", f.name, f.line(p.start), strings.Join(from, "."))
	}
	v := value{src: reindent(f.text[p.valStart:p.valEnd], f.propIndent(p), ""), comments: f.leadingComments(p)}
	trail := strings.TrimSpace(f.text[p.valEnd:p.fullEnd])
	trail = strings.TrimSpace(strings.TrimPrefix(trail, ","))
	if err := f.replace(p.fullStart, p.fullEnd, ""); err != nil {
		return err
	}
	for q := from[:len(from)-1]; len(q) > 0; q = q[:len(q)-1] {
		o := f.objectAt(q)
		if o == nil || len(o.props) > 0 || strings.TrimSpace(f.text[o.lbrace+1:o.rbrace]) != "" || isPrefix(q, to) {
			break
		}
		if err := f.delOne(q); err != nil {
			return err
		}
	}
	if trail != "" {
		v.src += " " + trail
		if strings.HasPrefix(trail, "//") {
			// A line comment must stay last on its line: put it before.
			v.src = strings.TrimSuffix(v.src, " "+trail)
			v.comments += trail + "\n"
		}
	}
	return f.set(to, v)
}

func (f *jsFile) bytes() []byte { return []byte(f.lineEnds(f.text)) }

func (f *jsFile) lineEnds(s string) string {
	if f.crlf {
		return strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}
func (f *jsFile) changed() bool { return f.edited }
func (f *jsFile) notes() []string {
	return f.dropped
}

// jsKey writes a property key the way the original's files do: bare when
// it is an identifier, single-quoted otherwise.
func jsKey(k string) string {
	if isIdent(k) {
		return k
	}
	return jsString(k)
}

func isIdent(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

func jsString(s string) string {
	q := strconv.Quote(s)
	q = q[1 : len(q)-1]
	q = strings.ReplaceAll(q, `\"`, `"`)
	q = strings.ReplaceAll(q, `'`, `\'`)
	return "'" + q + "'"
}

// staticJS evaluates literal expressions.
func staticJS(e ast.Expression) (any, bool) {
	switch e := e.(type) {
	case *ast.StringLiteral:
		return e.Value.String(), true
	case *ast.NumberLiteral:
		switch v := e.Value.(type) {
		case int64:
			return float64(v), true
		case float64:
			return v, true
		}
	case *ast.BooleanLiteral:
		return e.Value, true
	case *ast.NullLiteral:
		return nil, true
	case *ast.TemplateLiteral:
		if e.Tag == nil && len(e.Expressions) == 0 && len(e.Elements) == 1 {
			return e.Elements[0].Parsed.String(), true
		}
	case *ast.UnaryExpression:
		if e.Operator == token.MINUS {
			if v, ok := staticJS(e.Operand); ok {
				if n, ok := v.(float64); ok {
					return -n, true
				}
			}
		}
	case *ast.ArrayLiteral:
		out := make([]any, 0, len(e.Value))
		for _, x := range e.Value {
			v, ok := staticJS(x)
			if !ok {
				return nil, false
			}
			out = append(out, v)
		}
		return out, true
	}
	return nil, false
}

func (f *jsFile) export(path []string) (value, bool) {
	p, _ := f.prop(path)
	if p == nil {
		return value{}, false
	}
	if !p.keyed {
		return value{}, false
	}
	if p.method {
		return value{src: reindent(f.text[p.start:p.valEnd], f.propIndent(p), ""), comments: f.leadingComments(p), method: true}, true
	}
	v := value{src: reindent(f.text[p.valStart:p.valEnd], f.propIndent(p), ""), comments: f.leadingComments(p)}
	if s, ok := staticJS(p.value); ok && p.obj == nil {
		v.static, v.isStatic = s, true
	}
	return v, true
}

func (f *jsFile) extract(path []string) ([]byte, error) {
	p, _ := f.prop(path)
	if p == nil {
		return nil, fmt.Errorf("%s: no %s", f.name, strings.Join(path, "."))
	}
	if p.obj == nil {
		return nil, fmt.Errorf("%s:%d: %s is not an object literal", f.name, f.line(p.start), strings.Join(path, "."))
	}
	inner := reindent(f.text[p.valStart:p.valEnd], f.propIndent(p), "")
	out := f.text[:f.root.lbrace] + inner + f.text[f.root.rbrace+1:]
	if _, err := parseJSFile(f.name, out); err != nil {
		return nil, fmt.Errorf("internal error: extracting %s: %v", strings.Join(path, "."), err)
	}
	return []byte(f.lineEnds(out)), nil
}

func isPrefix(prefix, path []string) bool {
	if len(prefix) > len(path) {
		return false
	}
	for i := range prefix {
		if prefix[i] != path[i] {
			return false
		}
	}
	return true
}

func bindingNames(list []*ast.Binding) []string {
	var out []string
	for _, b := range list {
		if id, ok := b.Target.(*ast.Identifier); ok {
			out = append(out, id.Name.String())
		}
	}
	return out
}

// stmtLines is the text of the whole lines a statement occupies.
func (f *jsFile) stmtLines(st ast.Node) string {
	a := lineStart(f.text, int(st.Idx0())-1)
	// Comment lines right above the statement belong to it.
	for a > 0 {
		prev := lineStart(f.text, a-1)
		l := strings.TrimSpace(f.text[prev : a-1])
		if !strings.HasPrefix(l, "//") && !strings.HasPrefix(l, "/*") && !strings.HasPrefix(l, "*") {
			break
		}
		a = prev
	}
	b := lineEnd(f.text, max(f.end(st)-1, a))
	return strings.TrimRight(f.text[a:b], "\n")
}

// carryPrelude copies the top-level declarations of src into f, before
// its module.exports, so that values merged from src still find them. A
// name declared differently in both files is refused.
func (f *jsFile) carryPrelude(src *jsFile) error {
	declared := map[string]string{}
	for _, ps := range f.prelude {
		for _, n := range ps.names {
			declared[n] = ps.text
		}
	}
	var add []string
	for _, ps := range src.prelude {
		same, clash := false, ""
		for _, n := range ps.names {
			if t, ok := declared[n]; ok {
				if strings.TrimSpace(t) == strings.TrimSpace(ps.text) {
					same = true
				} else {
					clash = n
				}
			}
		}
		if clash != "" {
			return fmt.Errorf("%s: %q is declared in both %s and %s with different text; rename one, then run again", src.name, clash, src.name, f.name)
		}
		if !same {
			add = append(add, ps.text)
		}
	}
	if len(add) == 0 {
		return nil
	}
	text := strings.Join(add, "\n") + "\n\n"
	if f.exportAt > 0 && strings.TrimSpace(f.text[lineStart(f.text, f.exportAt-1):f.exportAt]) != "" {
		text = "\n" + text // keep a comment above module.exports apart from what is added
	}
	return f.replace(f.exportAt, f.exportAt, text)
}

// end returns the offset just after a node. goja computes the end of an
// identifier from the length of its decoded name, which is wrong for
// non-ASCII names, so identifiers are measured in the text instead.
func (f *jsFile) end(n ast.Node) int {
	var e int
	switch n := n.(type) {
	case *ast.Identifier:
		p := int(n.Idx) - 1
		for p >= 0 && p < len(f.text) {
			r, size := utf8.DecodeRuneInString(f.text[p:])
			if r == '_' || r == '$' || r == '\\' || r == '\u200c' || r == '\u200d' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) {
				p += size
				continue
			}
			break
		}
		e = p
	case *ast.DotExpression:
		e = f.end(&n.Identifier)
	case *ast.BinaryExpression:
		e = f.end(n.Right)
	case *ast.AssignExpression:
		e = f.end(n.Right)
	case *ast.ConditionalExpression:
		e = f.end(n.Alternate)
	case *ast.SequenceExpression:
		e = f.end(n.Sequence[len(n.Sequence)-1])
	case *ast.AwaitExpression:
		e = f.end(n.Argument)
	case *ast.UnaryExpression:
		e = f.end(n.Operand)
		if n.Postfix {
			e += 2
		}
	case *ast.NewExpression:
		if n.ArgumentList == nil {
			e = f.end(n.Callee)
		} else {
			e = int(n.Idx1()) - 1
		}
	case *ast.ArrowFunctionLiteral:
		if b, ok := n.Body.(*ast.ExpressionBody); ok {
			e = f.end(b.Expression)
		} else {
			e = int(n.Idx1()) - 1
		}
	case *ast.PropertyShort:
		e = f.end(&n.Name)
		if n.Initializer != nil {
			e = f.end(n.Initializer)
		}
	case *ast.ExpressionStatement:
		e = f.end(n.Expression)
	case *ast.VariableStatement:
		e = f.bindingsEnd(n.List, int(n.Idx1())-1)
	case *ast.LexicalDeclaration:
		e = f.bindingsEnd(n.List, int(n.Idx1())-1)
	default:
		e = int(n.Idx1()) - 1
	}
	return min(max(e, 0), len(f.text))
}

func (f *jsFile) bindingsEnd(list []*ast.Binding, def int) int {
	if len(list) == 0 {
		return def
	}
	b := list[len(list)-1]
	if b.Initializer != nil {
		return f.end(b.Initializer)
	}
	return f.end(b.Target)
}
