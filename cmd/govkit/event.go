package main

import (
	"context"

	"github.com/govkit/govkit/event/eventcli"
)

// The Event CLI lives in package eventcli; this file only registers it.
func init() {
	subcommands["event"]["validate"] = command{"check Event records (object, JSON array or NDJSON) against the rules", runEventValidate}
	subcommands["event"]["to-date"] = command{"convert Event records to date form in a time zone (default America/Vancouver)", runEventToDate}
}

func runEventValidate(ctx context.Context, args []string, io stdio) int {
	return eventcli.Validate(ctx, args, eventcli.Streams{In: io.in, Out: io.out, Err: io.err})
}

func runEventToDate(ctx context.Context, args []string, io stdio) int {
	return eventcli.ToDate(ctx, args, eventcli.Streams{In: io.in, Out: io.out, Err: io.err})
}
