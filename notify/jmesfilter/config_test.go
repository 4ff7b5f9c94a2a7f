package jmesfilter_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/jmesfilter"
)

// TestFunctionsFromAConfigFile loads the original's documented example, an
// async contains_ci in src/config.local.js, through package config and uses
// it in filters.
func TestFunctionsFromAConfigFile(t *testing.T) {
	dir := t.TempDir()
	js := `const _ = require('lodash');
module.exports = {
  notification: {
    broadcastCustomFilterFunctions: {
      contains_ci: {
        _func: async function (resolvedArgs) {
          if (!resolvedArgs[0] || !resolvedArgs[1]) {
            return false;
          }
          return new Promise((resolve) => {
            setTimeout(() => resolve(_.toLower(resolvedArgs[0]).indexOf(_.toLower(resolvedArgs[1])) >= 0), 1);
          });
        },
        _signature: [{ types: [2] }, { types: [2] }],
      },
      first_or: {
        _func: function (resolvedArgs) { return resolvedArgs[0] || resolvedArgs[1] || null; },
        _signature: [{ types: [1] }, { types: ['string'], optional: true }],
      },
    },
  },
};
`
	if err := os.WriteFile(filepath.Join(dir, "config.local.js"), []byte(js), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Options{Dir: dir, NodeEnv: "production", JSPoolSize: 2})
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	e, err := jmesfilter.New(jmesfilter.FromConfig(c.Notification.BroadcastCustomFilterFunctions))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		expr string
		data map[string]any
		want bool
	}{
		{"the async config function matches case-insensitively", "contains_ci(name,'FOO')", map[string]any{"name": "foo bar"}, true},
		{"the async config function can say no", "contains_ci(name,'baz')", map[string]any{"name": "foo bar"}, false},
		{"an optional argument may be left out", "first_or(name) == 'x'", map[string]any{"name": "x"}, true},
		{"an optional argument may be given", "first_or(missing, 'y') == 'y'", map[string]any{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := e.Validate("broadcastPushNotificationFilter", tc.expr); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := e.Match(context.Background(), tc.expr, tc.data)
			if err != nil || got != tc.want {
				t.Fatalf("Match(%q) = %v, %v; want %v", tc.expr, got, err, tc.want)
			}
		})
	}
	err = e.Validate("broadcastPushNotificationSubscriptionFilter", "first_or(a, 'b', 'c')")
	if err == nil {
		t.Fatal("three arguments for a function of at most two were accepted")
	}
	_, err = e.Match(context.Background(), "contains_ci(n, 'x')", map[string]any{"n": 5})
	if err == nil {
		t.Fatal("a number for a string argument was passed to the config function")
	}
}
