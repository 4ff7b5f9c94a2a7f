package main

import (
	"context"
	"io"
)

// startDocplatformDev starts the document platform for `govkit dev`.
func startDocplatformDev(ctx context.Context, o devOptions, w io.Writer) (func(context.Context) error, error) {
	return nil, errPartNotBuilt
}
