package jmesfilter_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jmespath-community/go-jmespath/pkg/api"

	"github.com/govkit/govkit/notify/jmesfilter"
)

// doubling is an expression that doubles an array n times: a few dozen
// bytes that describe 2^n elements.
func doubling(n int) string { return strings.Repeat("[@,@][] | ", n) + "@" }

// nestedPairs builds [x,x] around x n times: little memory (the halves are
// shared), 2^n leaves for anything that walks it.
func nestedPairs(n int) string { return strings.Repeat("[@,@] | ", n) + "@" }

func TestEvaluationsOverBudgetDoNotMatch(t *testing.T) {
	e := engine(t)
	data := map[string]any{"w": 1e12, "s": strings.Repeat("x", 1000), "list": []any{3.0, 1.0, 2.0}, "neg": -1e300}
	for _, expr := range []string{
		"pad_left('x', w) == 'y'",
		"pad_right(s, w) == 'y'",
		"w > `1` && length(" + doubling(40) + ") > `0`",
		"w > `1` && to_string(" + nestedPairs(40) + ") == 'x'",
		"w > `1` && (" + nestedPairs(30) + ") == (" + nestedPairs(30) + ")",
		"w > `1` && contains([" + nestedPairs(30) + "], " + nestedPairs(30) + ")",
		"w > `1` && length(join('', [s] | " + doubling(40) + ")) > `0`",
		"w > `1` && length(replace(replace(replace(s, '', s), '', s), '', s)) > `0`",
		"w > `1` && length(sort_by(" + doubling(40) + ", &to_string(@))) > `0`",
		"w > `1` && length((" + doubling(30) + ")[*].list[*]) > `0`",
		"w > `1` && length(items(from_items(zip(" + doubling(30) + ", " + doubling(30) + ")))) > `0`",
		"w > `1` && length(split(replace(replace(s, '', s), '', s), '')) > `0`",
		"w > `1` && let $a = " + doubling(40) + " in length($a) > `0`",
		"w > `1` && length(" + doubling(40) + "[?@ == `1`]) > `0`",
		"w > `1` && length(map(&[@, @], " + doubling(40) + ")) > `0`",
		"w > `1` && max_by(" + doubling(40) + ", &w) != `null`",
		"w > `1` && count_args(" + nestedPairs(40) + ")",
		"w > `1` && contains_ci(to_string(" + nestedPairs(40) + "), 'x')",
	} {
		ok, err := e.Match(context.Background(), expr, data)
		if ok || !errors.Is(err, jmesfilter.ErrBudget) {
			t.Errorf("%.60s…: Match = %v, %v; want no match over budget", expr, ok, err)
		}
	}
}

func TestCustomFunctionsRunUnderTheDeadline(t *testing.T) {
	e, err := jmesfilter.NewWithLimits(jmesfilter.Functions{
		"spin": {Call: func(ctx context.Context, _ []any) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}},
		"huge": {Call: func(context.Context, []any) (any, error) {
			out := make([]any, 1<<20)
			for i := range out {
				out[i] = "xxxxxxxxxx"
			}
			return out, nil
		}},
	}, jmesfilter.Limits{Time: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{"spin()", "length(huge()) > `0`"} {
		ok, err := e.Match(context.Background(), expr, map[string]any{})
		if ok || !errors.Is(err, jmesfilter.ErrBudget) {
			t.Errorf("%s: Match = %v, %v; want no match over budget", expr, ok, err)
		}
	}
}

func TestFiltersThatCannotFitAreRefusedWhenWritten(t *testing.T) {
	e := engine(t)
	for _, tc := range []struct{ expr, reason string }{
		{"pad_left('x', `1000000000000`) == 'y'", "width"},
		{"pad_right(name, `1e12`)", "width"},
		{strings.Repeat("(", 100) + "a" + strings.Repeat(")", 100), "nests"},
		{strings.Repeat("[", 70) + "a" + strings.Repeat("]", 70), "nests"},
		{strings.Repeat("!", 100) + "a", "nests"},
		{"a" + strings.Repeat(".a", 100), "nests"},
		{"length(" + doubling(40) + ") > `0`", "without data"},
		{"to_string(" + nestedPairs(40) + ") == 'x'", "without data"},
		{"a" + strings.Repeat(" | a", 70), "nests"},
	} {
		err := e.Validate("broadcastPushNotificationFilter", tc.expr)
		var se *jmesfilter.SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Error(), tc.reason) || !strings.Contains(se.Error(), "broadcastPushNotificationFilter") {
			t.Errorf("%.50s…: %v; want a SyntaxError naming the field and %q", tc.expr, err, tc.reason)
		}
	}
	// The trial run does not call configured functions for the writer.
	if err := e.Validate("f", "slow() && length("+doubling(10)+") > `0`"); err != nil {
		t.Errorf("a filter calling a slow custom function was refused: %v", err)
	}
	for _, ok := range []string{"pad_left(name, `10`, '0') == '000000name'", "w > `1` && length(" + doubling(40) + ") > `0`", strings.Repeat("(", 30) + "a" + strings.Repeat(")", 30)} {
		if err := e.Validate("f", ok); err != nil {
			t.Errorf("%.50s…: refused: %v", ok, err)
		}
	}
}

// TestSameAnswersAsTheLibrary checks the bounded evaluator against the
// library's interpreter, which the service used before, on expressions
// that cover every node and function.
func TestSameAnswersAsTheLibrary(t *testing.T) {
	var data any
	if err := json.Unmarshal([]byte(`{
		"name": "Jane Foo", "age": 42, "n": -3.5, "t": true, "z": null, "e": "", "empty": [], "obj": {},
		"tags": ["roads", "weather", "b", "a"], "nums": [3, 1, 2, 10],
		"people": [{"name": "a", "age": 30, "tags": ["x"]}, {"name": "b", "age": 20, "tags": ["y", "z"]}, {"name": "c", "age": 40}],
		"nested": [[1, 2], [3, [4, 5]], 6],
		"region": {"code": "north", "zip": "V8V", "more": {"x": 1}}
	}`), &data); err != nil {
		t.Fatal(err)
	}
	exprs := []string{
		"name", "region.code", "region.more.x", "missing.x", "people[0].name", "people[-1].age", "people[5]",
		"people[*].name", "people[*].tags[0]", "people[?age > `25`].name", "people[?tags].name", "nested[]", "nested[][]",
		"tags[1:3]", "tags[::-1]", "tags[::2]", "tags[-2:]", "nums[10:]", "name[0:4]", "name[::-1]",
		"obj.*", "*.code", "[name, age]", "{n: name, a: age}", "people[].{n: name}",
		"age > `40`", "age >= `42`", "age < `0`", "age <= `42`", "age == `42`", "age != `42`", "name == 'Jane Foo'",
		"tags == ['roads', 'weather', 'b', 'a']", "region == {code: 'north'}", "name > `1`",
		"t && name", "z || 'default'", "e || empty || obj || 'x'", "!t", "!e", "age + `1`", "age - n", "age * `2`",
		"age / `4`", "age % `5`", "age // `5`", "-age", "+n", "`1` + 'x'",
		"@", "@.name", "$.name", "name | length(@)", "people | [0]", "let $x = age in $x", "let $x = age, $y = $x in [$x, $y]",
		"abs(n)", "avg(nums)", "ceil(n)", "floor(n)", "contains(tags, 'b')", "contains(name, 'Foo')", "contains(nums, `10`)",
		"ends_with(name, 'Foo')", "starts_with(name, 'Ja')", "find_first(name, 'o')", "find_last(name, 'o')",
		"find_first(name, 'o', `6`)", "find_first(name, 'o', `1`, `3`)", "from_items([['a', `1`], ['b', `2`]])",
		"group_by(people, &name)", "items(region.more)", "join(', ', tags)", "keys(region.more)", "length(name)",
		"length(tags)", "length(region)", "lower(name)", "upper(name)", "map(&age, people)", "max(nums)", "max(tags)",
		"max_by(people, &age).name", "min(nums)", "min_by(people, &age).name", "merge(region, {zip: 'x'})",
		"not_null(z, e, name)", "pad_left(name, `12`)", "pad_right(name, `12`, '-')", "pad_left(name, `2`)",
		"replace(name, 'o', '0')", "replace(name, 'o', '0', `1`)", "reverse(tags)", "reverse(name)", "sort(nums)",
		"sort(tags)", "sort_by(people, &age)[*].name", "sort_by(people, &name)[*].name", "split(name, ' ')",
		"split(name, 'o', `1`)", "sum(nums)", "to_array(name)", "to_array(tags)", "to_number('12')", "to_number(name)",
		"to_string(region)", "to_string(name)", "trim('  x  ')", "trim_left('xxay', 'x')", "trim_right('ayyy', 'y')",
		"type(name)", "type(nums)", "type(z)", "values(region.more)", "zip(tags, nums)",
		"length(people[?contains(tags || `[]`, 'y')])", "people[?age > `25`] | length(@)",
	}
	e := engine(t)
	for _, expr := range exprs {
		want, werr := api.Search(expr, data)
		f, err := e.Compile(expr)
		if err != nil {
			t.Errorf("%s: compile: %v", expr, err)
			continue
		}
		got, gerr := evalResult(f, data)
		if (werr != nil) != (gerr != nil) {
			t.Errorf("%s: error %v, library's %v", expr, gerr, werr)
			continue
		}
		if werr == nil && !reflect.DeepEqual(normalizeGroups(got), normalizeGroups(want)) {
			t.Errorf("%s = %#v, library's %#v", expr, got, want)
		}
	}
}

// evalResult returns what an expression evaluates to, through a filter
// that reports it by way of a custom function.
func evalResult(f *jmesfilter.Filter, data any) (any, error) {
	var got any
	e, err := jmesfilter.New(jmesfilter.Functions{"capture": {
		Signature: []jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{jmesfilter.TypeAny}}},
		Call: func(_ context.Context, args []any) (any, error) {
			got = args[0]
			return true, nil
		},
	}})
	if err != nil {
		return nil, err
	}
	_, err = e.Match(context.Background(), "capture("+f.String()+")", data)
	return got, err
}

// normalizeGroups turns the library's group_by answer and ours into the
// same shape (it keeps empty results as nil slices).
func normalizeGroups(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
