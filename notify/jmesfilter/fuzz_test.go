package jmesfilter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/govkit/govkit/notify/jmesfilter"
)

// FuzzValidateAndMatch feeds arbitrary filters, as an anonymous subscriber
// may send them, through the write-time check and one evaluation: a refusal
// must be a 400 SyntaxError, and an accepted filter must evaluate without
// taking the process down.
func FuzzValidateAndMatch(f *testing.F) {
	for _, s := range []string{"a == 'b'", "a === 'b'", "contains_ci(name,'FOO')", "sort_by(@, &a)[0]", "let $x = a in $x", "[?a > `1`] | length(@)", "((((a))))", "`{\"a\": [1, 2]}`.a[-1]"} {
		f.Add(s)
	}
	e := engine(f)
	data := map[string]any{"name": "foo", "a": 2.0, "list": []any{map[string]any{"a": 1.0}}}
	f.Fuzz(func(t *testing.T, expr string) {
		if err := e.Validate("broadcastPushNotificationFilter", expr); err != nil {
			var se *jmesfilter.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Validate error %T %v is not a *SyntaxError", err, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = e.Match(ctx, expr, data)
	})
}
