package query

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Strings reads the array parameter name in the repeated form:
// name=a&name=b, also written name[]=a&name[]=b or name[0]=a&name[1]=b.
// Values are taken as given, never split on commas. One parameter holding
// a bracketed JSON list (name=["a","b"], the form of version 1) is an *Error
// whose message shows the repeated form. Absent means nil.
func Strings(q url.Values, name string) ([]string, error) {
	var out []string
	out = append(out, q[name]...)
	out = append(out, q[name+"[]"]...)
	type indexed struct {
		i    int
		vals []string
	}
	var idx []indexed
	for k, v := range q {
		if !strings.HasPrefix(k, name+"[") || !strings.HasSuffix(k, "]") || k == name+"[]" {
			continue
		}
		n := k[len(name)+1 : len(k)-1]
		i, err := strconv.Atoi(n)
		if err != nil || i < 0 || strconv.Itoa(i) != n {
			return nil, errorf(name, "unexpected parameter %q; repeat the parameter instead: %s", k, repeated(name, []any{"a", "b"}))
		}
		idx = append(idx, indexed{i, v})
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a].i < idx[b].i })
	for _, e := range idx {
		out = append(out, e.vals...)
	}
	if len(out) > maxItems {
		return nil, errorf(name, "has more than %d values", maxItems)
	}
	for _, v := range out {
		if list, ok := isJSONList(v); ok {
			return nil, errorf(name, "a JSON list in one parameter (%s=%s) is not supported; repeat the parameter: %s", name, v, repeated(name, list))
		}
	}
	return out, nil
}

// repeated shows list in the repeated form, e.g. a=x&a=y.
func repeated(name string, list []any) string {
	if len(list) == 0 {
		list = []any{"a", "b"}
	}
	parts := make([]string, len(list))
	for i, v := range list {
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
		}
		parts[i] = url.QueryEscape(name) + "=" + url.QueryEscape(s)
	}
	return strings.Join(parts, "&")
}
