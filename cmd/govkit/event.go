package main

import "context"

func runEvent(ctx context.Context, args []string, io stdio) int {
	return dispatch(ctx, "event", map[string]command{}, args, io)
}
