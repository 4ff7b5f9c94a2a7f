package main

import (
	"context"
	"io"
)

func runNotify(ctx context.Context, args []string, io stdio) int {
	return dispatch(ctx, "notify", map[string]command{}, args, io)
}

func startNotifyDev(ctx context.Context, o devOptions, w io.Writer) (func(context.Context) error, error) {
	return nil, errPartNotBuilt
}
