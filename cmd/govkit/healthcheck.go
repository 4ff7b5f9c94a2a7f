package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/govkit/govkit/internal/cliflags"
)

// runHealthcheck is `govkit healthcheck URL`: it GETs a health endpoint and
// exits 0 on a 2xx answer, 1 otherwise. Container images built FROM scratch
// or distroless have no shell or curl, so the image's HEALTHCHECK runs the
// binary itself.
func runHealthcheck(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("govkit healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.err)
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: govkit healthcheck [--timeout 5s] URL")
		fmt.Fprintln(fs.Output(), "\nExits 0 when GET URL answers 2xx, 1 otherwise (for container health checks).\n\nFlags:")
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.ParseArgs(ctx, fs, args, io.out); !ok {
		return code
	}
	switch fs.NArg() {
	case 0:
		return cliflags.Usagef(fs, "which URL? e.g. http://127.0.0.1:3000/api/health")
	case 1:
	default:
		return cliflags.Usagef(fs, "unexpected argument %q (one URL only)", fs.Arg(1))
	}
	u, err := url.Parse(fs.Arg(0))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cliflags.Usagef(fs, "%q is not an http(s) URL", fs.Arg(0))
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		fmt.Fprintf(io.err, "govkit healthcheck: %v\n", err)
		return 2
	}
	// No redirects: a health endpoint that redirects is not healthy.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintf(io.err, "govkit healthcheck: %v\n", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fmt.Fprintf(io.err, "govkit healthcheck: %s\n", resp.Status)
		return 1
	}
	fmt.Fprintln(io.out, resp.Status)
	return 0
}
