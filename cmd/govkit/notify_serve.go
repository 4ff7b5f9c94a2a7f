package main

import (
	"context"
	"os"
	"strings"

	"github.com/govkit/govkit/notify/httpapi"
)

func init() {
	subcommands["notify"]["serve"] = command{summary: "serve the notification service (NotifyBC 6 API) of a deployment directory", run: runNotifyServe}
	subcommands["notify"]["admin"] = command{summary: "add, list, remove administrators or set their passwords (add|set-password|list|remove)", run: runNotifyAdmin, subs: httpapi.AdminCommands}
	subcommands["notify"]["check-config"] = command{summary: "read serve's configuration, connect to each part it names, say what works", run: runNotifyCheckConfig}
	subcommands["notify"]["copy-store"] = command{summary: "copy the deployment's store (the embedded one) into a MongoDB database", run: runNotifyCopyStore}
}

// runNotifyServe reads the environment here, once, and leaves the rest to
// package httpapi.
func runNotifyServe(ctx context.Context, args []string, io stdio) int {
	return httpapi.Main(ctx, args, environ(), io.out, io.err)
}

func runNotifyAdmin(ctx context.Context, args []string, io stdio) int {
	return httpapi.AdminMain(ctx, args, environ(), io.in, io.out, io.err)
}

func runNotifyCopyStore(ctx context.Context, args []string, io stdio) int {
	return httpapi.CopyStoreMain(ctx, args, environ(), io.out, io.err)
}

func runNotifyCheckConfig(ctx context.Context, args []string, io stdio) int {
	return httpapi.CheckMain(ctx, args, environ(), io.out, io.err)
}

// environ is the process environment as a map: what notify's .js config
// files see as process.env.
func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
