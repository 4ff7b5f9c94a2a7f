package main

import (
	"context"
	"io"

	"github.com/govkit/govkit/notify/httpapi"
)

// startNotifyDev starts the notification service for `govkit dev`: the
// embedded document store in the data dir, a mail catcher with its page at
// /mail/, SMS to the log; it prints the URLs.
func startNotifyDev(ctx context.Context, o devOptions, w io.Writer) (func(context.Context) error, error) {
	d, err := httpapi.StartDev(ctx, httpapi.DevOptions{DataDir: o.dataDir, Host: o.host, InboundSMTPPort: o.inboundSMTPPort}, w)
	if err != nil {
		return nil, err
	}
	return d.Stop, nil
}
