package query

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of filter values, in JSON and bracket form
// alike: deeper input is refused before any recursion can exhaust the stack.
const maxDepth = 32

// maxItems bounds the keys of one object and the items of one list in a
// filter or where: the embedded store evaluates a query against each
// document it scans, so a where of 80,000 conditions, or an $in of as many
// values, would cost it seconds per request. The same bound applies to
// objects in request bodies (notify.MaxKeys).
const maxItems = 1000

// maxArrayIndex is the largest bracket index read as an array position, as
// in the qs library the original uses; a larger one is an object key.
const maxArrayIndex = 20

// object is a JSON object that keeps its key order, which matters for sort
// documents.
type object []member

type member struct {
	key string
	val any
}

func (o object) get(key string) (any, bool) {
	for _, m := range o {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// decodeJSON parses s into object, []any, string, json.Number, bool and nil.
func decodeJSON(param, s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := decodeValue(dec, param, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(param, "is not valid JSON: unexpected data after the value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, param string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errorf(param, "is nested more than %d levels deep", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError(param, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var o object
			at := map[string]int{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, jsonError(param, err)
				}
				key, _ := kt.(string)
				v, err := decodeValue(dec, param, depth+1)
				if err != nil {
					return nil, err
				}
				// JSON.parse keeps the last of duplicated keys, in the
				// place of the first.
				if i, dup := at[key]; dup {
					o[i].val = v
					continue
				}
				if len(o) == maxItems {
					return nil, errorf(param, "has an object of more than %d keys", maxItems)
				}
				at[key] = len(o)
				o = append(o, member{key, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonError(param, err)
			}
			if o == nil {
				o = object{}
			}
			return o, nil
		case '[':
			list := []any{}
			for dec.More() {
				if len(list) == maxItems {
					return nil, errorf(param, "has a list of more than %d items", maxItems)
				}
				v, err := decodeValue(dec, param, depth+1)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonError(param, err)
			}
			return list, nil
		}
		return nil, errorf(param, "is not valid JSON")
	default:
		return t, nil
	}
}

func jsonError(param string, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return errorf(param, "is not valid JSON: %s at offset %d", se.Error(), se.Offset)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(param, "is not valid JSON: unexpected end of input")
	}
	return errorf(param, "is not valid JSON: %s", err.Error())
}

// param reads parameter name from q in either form: one value holding JSON
// (name={…}), or bracket keys (name[a][b]=v) assembled into a tree whose
// leaves are strings, as the qs library the original uses does. present is
// false when neither form is there.
func param(q url.Values, name string) (v any, present bool, err error) {
	plain, hasPlain := q[name]
	var bracketKeys []string
	for k := range q {
		if strings.HasPrefix(k, name+"[") {
			bracketKeys = append(bracketKeys, k)
		}
	}
	switch {
	case hasPlain && len(bracketKeys) > 0:
		return nil, false, errorf(name, "is given both as JSON and in bracket form; use one")
	case hasPlain:
		if len(plain) > 1 {
			return nil, false, errorf(name, "is given %d times; give it once", len(plain))
		}
		s := strings.TrimSpace(plain[0])
		if s == "" {
			return nil, false, nil
		}
		v, err := decodeJSON(name, s)
		if err != nil {
			return nil, false, err
		}
		return v, true, nil
	case len(bracketKeys) > 0:
		v, err := bracketTree(q, name, bracketKeys)
		if err != nil {
			return nil, false, err
		}
		return v, true, nil
	}
	return nil, false, nil
}

// qsNode is a bracket-form value under construction.
type qsNode struct {
	leaf     []string // values given for exactly this key
	children map[string]*qsNode
	order    []string // child keys in first-seen order
	appended []string // values of key[] (appended to a list)
}

func (n *qsNode) child(k string) *qsNode {
	if n.children == nil {
		n.children = map[string]*qsNode{}
	}
	c, ok := n.children[k]
	if !ok {
		c = &qsNode{}
		n.children[k] = c
		n.order = append(n.order, k)
	}
	return c
}

func bracketTree(q url.Values, name string, keys []string) (any, error) {
	sort.Strings(keys)
	root := &qsNode{}
	for _, k := range keys {
		segs, err := splitBrackets(name, k)
		if err != nil {
			return nil, err
		}
		if len(segs) > maxDepth {
			return nil, errorf(k, "is nested more than %d levels deep", maxDepth)
		}
		n := root
		for i, s := range segs {
			if s == "" {
				if i != len(segs)-1 {
					return nil, errorf(k, "[] may only end a parameter name")
				}
				n.appended = append(n.appended, q[k]...)
				n = nil
				break
			}
			n = n.child(s)
		}
		if n != nil {
			n.leaf = append(n.leaf, q[k]...)
		}
	}
	return root.value(name)
}

// splitBrackets turns "filter[where][a]" into ["where", "a"].
func splitBrackets(name, key string) ([]string, error) {
	rest := key[len(name):]
	var segs []string
	for rest != "" {
		if rest[0] != '[' {
			return nil, errorf(key, "is not a valid bracket parameter name")
		}
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return nil, errorf(key, "is not a valid bracket parameter name: missing ]")
		}
		segs = append(segs, rest[1:end])
		rest = rest[end+1:]
	}
	return segs, nil
}

func (n *qsNode) value(path string) (any, error) {
	if len(n.children) > maxItems || len(n.leaf) > maxItems || len(n.appended) > maxItems {
		return nil, errorf(path, "has more than %d keys or values", maxItems)
	}
	hasKids := len(n.children) > 0
	switch {
	case hasKids && (len(n.leaf) > 0 || len(n.appended) > 0):
		return nil, errorf(path, "is given both as a value and with [keys]; use one form")
	case len(n.appended) > 0 && len(n.leaf) > 0:
		return nil, errorf(path, "is given both as name= and name[]=; use one form")
	case len(n.appended) > 0:
		list := make([]any, len(n.appended))
		for i, s := range n.appended {
			list[i] = s
		}
		return list, nil
	case !hasKids:
		if len(n.leaf) == 1 {
			return n.leaf[0], nil
		}
		list := make([]any, len(n.leaf))
		for i, s := range n.leaf {
			list[i] = s
		}
		return list, nil
	}
	// Children with small integer keys only form a list, ordered by index
	// and compacted, as qs does.
	indexed := true
	for _, k := range n.order {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i > maxArrayIndex || strconv.Itoa(i) != k {
			indexed = false
			break
		}
	}
	if indexed {
		keys := append([]string(nil), n.order...)
		sort.Slice(keys, func(a, b int) bool {
			x, _ := strconv.Atoi(keys[a])
			y, _ := strconv.Atoi(keys[b])
			return x < y
		})
		list := make([]any, 0, len(keys))
		for _, k := range keys {
			v, err := n.children[k].value(path + "[" + k + "]")
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	}
	o := make(object, 0, len(n.order))
	for _, k := range n.order {
		v, err := n.children[k].value(path + "[" + k + "]")
		if err != nil {
			return nil, err
		}
		o = append(o, member{k, v})
	}
	return o, nil
}

// isJSONList reports whether s is one parameter holding a bracketed JSON
// list, the array form of version 1.
func isJSONList(s string) ([]any, bool) {
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '[' || t[len(t)-1] != ']' {
		return nil, false
	}
	var list []any
	dec := json.NewDecoder(bytes.NewReader([]byte(t)))
	if err := dec.Decode(&list); err != nil {
		return nil, false
	}
	return list, true
}
