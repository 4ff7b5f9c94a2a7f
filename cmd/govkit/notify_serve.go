package main

import (
	"context"
	"os"
	"strings"

	"github.com/govkit/govkit/notify/httpapi"
)

func init() {
	subcommands["notify"]["serve"] = command{"serve the notification service (NotifyBC 6 API) of a deployment directory", runNotifyServe}
}

// runNotifyServe reads the environment here, once, and leaves the rest to
// package httpapi.
func runNotifyServe(ctx context.Context, args []string, io stdio) int {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return httpapi.Main(ctx, args, env, io.out, io.err)
}
