package main

import (
	"context"
	"io"
)

// startNotifyDev starts the notification service for `govkit dev`.
func startNotifyDev(ctx context.Context, o devOptions, w io.Writer) (func(context.Context) error, error) {
	return nil, errPartNotBuilt
}
