package main

import (
	"context"

	"github.com/govkit/govkit/event/eventcli"
)

// The Event CLI lives in package eventcli; this file only registers it.
func init() {
	subcommands["event"]["validate"] = command{summary: "check Event records (object, JSON array or NDJSON) against the rules", run: runEventValidate, args: true}
	subcommands["event"]["to-date"] = command{summary: "convert Event records to date form in a time zone (default America/Vancouver)", run: runEventToDate, args: true}
}

func runEventValidate(ctx context.Context, args []string, io stdio) int {
	return eventcli.Validate(ctx, args, eventcli.Streams{In: io.in, Out: io.out, Err: io.err})
}

func runEventToDate(ctx context.Context, args []string, io stdio) int {
	return eventcli.ToDate(ctx, args, eventcli.Streams{In: io.in, Out: io.out, Err: io.err})
}
