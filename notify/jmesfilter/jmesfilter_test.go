package jmesfilter_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/jmesfilter"
)

// containsCI is the original's documented example custom function.
var containsCI = jmesfilter.Function{
	Signature: []jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{jmesfilter.TypeString}}, {Types: []jmesfilter.ArgType{jmesfilter.TypeString}}},
	Call: func(_ context.Context, args []any) (any, error) {
		a, b := args[0].(string), args[1].(string)
		if a == "" || b == "" {
			return false, nil
		}
		return strings.Contains(strings.ToLower(a), strings.ToLower(b)), nil
	},
}

func engine(t testing.TB) *jmesfilter.Engine {
	t.Helper()
	e, err := jmesfilter.New(jmesfilter.Functions{
		"contains_ci": containsCI,
		"count_args": {
			Signature: []jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{jmesfilter.TypeAny}, Variadic: true}},
			Call:      func(_ context.Context, args []any) (any, error) { return len(args), nil },
		},
		"fails": {
			Call: func(context.Context, []any) (any, error) { return nil, errors.New("backend down") },
		},
		"slow": {
			Call: func(ctx context.Context, _ []any) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
		},
		"both": {
			Signature: []jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{jmesfilter.TypeBoolean, jmesfilter.TypeNull}}},
			Call:      func(_ context.Context, args []any) (any, error) { return true, nil },
		},
		"names": {
			Signature: []jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{jmesfilter.TypeArrayString}}},
			Call:      func(_ context.Context, args []any) (any, error) { return len(args[0].([]any)) > 0, nil },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		expr    string
		wantErr string // substring; empty means valid
	}{
		{"a JavaScript === comparison is refused", "a === 'b'", "invalid broadcastPushNotificationFilter"},
		{"an equality with a raw string is accepted", "a == 'b'", ""},
		{"a built-in function call is accepted", "contains(name,'f')", ""},
		{"a custom function from config is accepted", "contains_ci(name,'FOO')", ""},
		{"an unknown function is refused at write time", "no_such_fn(a)", "unknown function no_such_fn()"},
		{"a custom function with too few arguments is refused", "contains_ci(name)", "contains_ci() takes 2 arguments but received 1"},
		{"a built-in function with too many arguments is refused", "length(a, b)", "length() takes 1 argument but received 2"},
		{"a variadic custom function needs its fixed arguments", "count_args()", "takes at least 1 argument"},
		{"an empty expression is refused", "  ", "empty"},
		{"text cannot escape the filter brackets", "a] | [b", "invalid"},
		{"an unclosed string is refused", "a == 'b", "invalid"},
		{"a too long expression is refused", strings.Repeat("a && ", 1000) + "a", "longer than"},
		{"boolean logic and comparisons are accepted", "(age >= `18` && region == 'north') || !blocked", ""},
	}
	e := engine(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := e.Validate("broadcastPushNotificationFilter", tc.expr)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate(%q) = %v, want nil", tc.expr, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%q) = nil, want error containing %q", tc.expr, tc.wantErr)
			}
			var se *jmesfilter.SyntaxError
			if !errors.As(err, &se) || se.StatusCode() != 400 {
				t.Fatalf("error %T %v is not a 400 SyntaxError", err, err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "invalid broadcastPushNotificationFilter: ") {
				t.Fatalf("Validate(%q) = %q, want it to name the field and contain %q", tc.expr, err, tc.wantErr)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	data := `{"name":"foo","age":30,"zero":0,"empty":"","list":[],"obj":{},"tags":["a","b"],"nested":{"region":"north"}}`
	tests := []struct {
		name string
		expr string
		want bool
	}{
		{"a true comparison matches", "name == 'foo'", true},
		{"a false comparison does not match", "name == 'bar'", false},
		{"a built-in function result decides", "contains(name,'f')", true},
		{"a custom function from config decides", "contains_ci(name,'FOO')", true},
		{"a custom function returning false does not match", "contains_ci(name,'BAR')", false},
		{"zero is truthy in JMESPath", "zero", true},
		{"the empty string is falsy", "empty", false},
		{"an empty array is falsy", "list", false},
		{"an empty object is falsy", "obj", false},
		{"null (a missing field) is falsy", "missing", false},
		{"a non-empty array is truthy", "tags", true},
		{"numbers compare with backtick literals", "age > `18`", true},
		{"nested fields are reached", "nested.region == 'north'", true},
		{"a variadic custom function takes many arguments", "count_args(name, age, zero) == `3`", true},
		{"a custom function may accept boolean or null", "both(missing)", true},
		{"array[string] arguments are checked element-wise", "names(tags)", true},
	}
	e := engine(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				t.Fatal(err)
			}
			got, err := e.Match(context.Background(), tc.expr, v)
			if err != nil {
				t.Fatalf("Match(%q): %v", tc.expr, err)
			}
			if got != tc.want {
				t.Fatalf("Match(%q) = %v, want %v", tc.expr, got, tc.want)
			}
		})
	}
}

func TestEvaluationErrorsAreNoMatch(t *testing.T) {
	e := engine(t)
	data := map[string]any{"name": "foo", "age": 3.0}
	tests := []struct {
		name string
		expr string
		want string
	}{
		{"a custom function's error is reported", "fails()", "backend down"},
		{"a wrong argument type for a custom function is reported", "contains_ci(age, 'x')", "expected argument 1 to be type string but received type number"},
		{"array[string] refuses an array of numbers", "names([`1`])", "expected argument 1 to be type array[string]"},
		{"a wrong argument type for a built-in is reported", "length(age)", "invalid type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Match(context.Background(), tc.expr, data)
			if got || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Match(%q) = %v, %v; want false and an error containing %q", tc.expr, got, err, tc.want)
			}
		})
	}
}

func TestCustomFunctionsSeeTheContext(t *testing.T) {
	e := engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	got, err := e.Match(ctx, "slow()", map[string]any{"a": 1.0})
	if got || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, %v; want false and the context's error", got, err)
	}
}

func TestCustomFunctionReplacesBuiltin(t *testing.T) {
	e, err := jmesfilter.New(jmesfilter.Functions{
		"length": {
			Signature: []jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{jmesfilter.TypeAny}}},
			Call:      func(context.Context, []any) (any, error) { return 42, nil },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Match(context.Background(), "length(name) == `42`", map[string]any{"name": "ab"})
	if err != nil || !got {
		t.Fatalf("got %v, %v; want the custom length", got, err)
	}
}

func TestDataShapesAreNormalized(t *testing.T) {
	e := engine(t)
	oid := bson.NewObjectID()
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		data any
		expr string
	}{
		{"Go integers compare as numbers", map[string]any{"n": 5, "m": int64(7), "u": uint8(1)}, "n == `5` && m == `7` && u == `1`"},
		{"bson.D documents are objects", bson.D{{Key: "a", Value: bson.D{{Key: "b", Value: int32(2)}}}}, "a.b == `2`"},
		{"bson.M and bson.A are objects and arrays", bson.M{"tags": bson.A{"x", "y"}}, "contains(tags, 'y')"},
		{"typed slices are arrays", map[string]any{"tags": []string{"x"}}, "tags[0] == 'x'"},
		{"object ids are hex strings", map[string]any{"id": oid}, "id == '" + oid.Hex() + "'"},
		{"times are RFC 3339 UTC strings", map[string]any{"t": when}, "t == '2026-01-02T03:04:05.000Z'"},
		{"json.Number is a number", map[string]any{"n": json.Number("2.5")}, "n == `2.5`"},
		{"custom function results are normalized", map[string]any{"a": "x"}, "count_args(a) == `1`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.Match(context.Background(), tc.expr, tc.data)
			if err != nil || !got {
				t.Fatalf("Match(%q) = %v, %v; want true", tc.expr, got, err)
			}
		})
	}
}

func TestParseSignature(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    []jmesfilter.ArgSpec
		wantErr string
	}{
		{"the original's numeric codes are read", `[{"types":[2]},{"types":[2]}]`,
			[]jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{2}}, {Types: []jmesfilter.ArgType{2}}}, ""},
		{"type names are read", `[{"types":["number","null"],"variadic":true}]`,
			[]jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{jmesfilter.TypeNumber, jmesfilter.TypeNull}, Variadic: true}}, ""},
		{"optional arguments are read", `[{"types":[2]},{"types":[0],"optional":true}]`,
			[]jmesfilter.ArgSpec{{Types: []jmesfilter.ArgType{2}}, {Types: []jmesfilter.ArgType{0}, Optional: true}}, ""},
		{"an unknown code is refused", `[{"types":[12]}]`, nil, "_signature[0].types[0]"},
		{"an unknown name is refused", `[{"types":["text"]}]`, nil, `unknown type "text"`},
		{"an entry without types is refused", `[{}]`, nil, "_signature[0].types must be a non-empty list"},
		{"only the last argument may be variadic", `[{"types":[1],"variadic":true},{"types":[1]}]`, nil, "only the last"},
		{"a signature that is not a list is refused", `{"types":[1]}`, nil, "must be a list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var raw any
			if err := json.Unmarshal([]byte(tc.raw), &raw); err != nil {
				t.Fatal(err)
			}
			got, err := jmesfilter.ParseSignature(raw)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Variadic != tc.want[i].Variadic || got[i].Optional != tc.want[i].Optional || len(got[i].Types) != len(tc.want[i].Types) {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
				for k := range got[i].Types {
					if got[i].Types[k] != tc.want[i].Types[k] {
						t.Fatalf("got %+v, want %+v", got, tc.want)
					}
				}
			}
		})
	}
}

func TestNewRefusesBadDeclarations(t *testing.T) {
	tests := []struct {
		name string
		fns  jmesfilter.Functions
		want string
	}{
		{"a function without _func is refused", jmesfilter.Functions{"f": {}}, "broadcastCustomFilterFunctions.f: no _func"},
		{"a required argument after an optional one is refused", jmesfilter.Functions{"f": {Call: containsCI.Call, Signature: []jmesfilter.ArgSpec{
			{Types: []jmesfilter.ArgType{1}, Optional: true}, {Types: []jmesfilter.ArgType{1}}}}}, "required after an optional"},
		{"a signature entry without types is refused", jmesfilter.Functions{"f": {Call: containsCI.Call, Signature: []jmesfilter.ArgSpec{{}}}}, "_signature[0] has no types"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := jmesfilter.New(tc.fns); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCompileIsCachedAndConcurrent(t *testing.T) {
	e := engine(t)
	f1, err := e.Compile("name == 'foo'")
	if err != nil {
		t.Fatal(err)
	}
	f2, _ := e.Compile("name == 'foo'")
	if f1 != f2 {
		t.Fatal("the second Compile of the same expression did not come from the cache")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 200 {
				data := map[string]any{"name": "foo", "k": float64(k + i)}
				if ok, err := e.Match(context.Background(), "name == 'foo' && k >= `0`", data); !ok || err != nil {
					t.Errorf("Match = %v, %v", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
