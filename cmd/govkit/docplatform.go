package main

import (
	"context"
	"io"
)

func runDocplatform(ctx context.Context, args []string, io stdio) int {
	return dispatch(ctx, "docplatform", map[string]command{}, args, io)
}

func startDocplatformDev(ctx context.Context, o devOptions, w io.Writer) (func(context.Context) error, error) {
	return nil, errPartNotBuilt
}
