// Command govkit is the single binary of the govkit module: the Event CLI,
// the document platform, the notification service and `dev`, which runs all
// of them on embedded defaults.
//
// This file only dispatches subcommands; each part's wiring lives in a file
// named after it (event.go, docplatform.go, notify.go, dev.go).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"syscall"
)

// version, when set at build time with -ldflags "-X main.version=…",
// replaces the module version the Go toolchain records (see versionText).
var version = ""

// stdio is what a subcommand may read and write; tests pass buffers.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// A command runs one subcommand and returns the process exit code:
// 0 success, 1 the work found a problem, 2 bad usage or a failure to start.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, io stdio) int
}

// subcommands holds the subcommands of event, docplatform and notify. Each
// part's file adds its own in an init function, so the parts' wiring stays in
// the file named after the part.
var subcommands = map[string]map[string]command{
	"event":       {},
	"docplatform": {},
	"notify":      {},
}

func commands() map[string]command {
	return map[string]command{
		"dev":         {"run every part on embedded defaults (SQLite, dev OpenID provider, embedded stores, mail catcher)", runDev},
		"docplatform": {"the document platform: serve, grant-admin, check-config", runPart("docplatform")},
		"notify":      {"the notification service: serve, admin, check-config, copy-store, upgrade", runPart("notify")},
		"event":       {"validate Event records, convert them to date form", runPart("event")},
		"healthcheck": {"GET a health endpoint; exit 0 when it answers 2xx (for container health checks)", runHealthcheck},
		"version":     {"print the version", runVersion},
		"help":        {"show this help", runHelp},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 {
		usage(io.err)
		return 2
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		switch args[0] {
		case "-h", "-help", "--help":
			usage(io.out)
			return 0
		}
		fmt.Fprintf(io.err, "govkit: unknown command %q\n\n", args[0])
		usage(io.err)
		return 2
	}
	return cmd.run(ctx, args[1:], io)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: govkit <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for name := range cmds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-12s %s\n", name, cmds[name].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "govkit <command> -h" for the arguments of a command.`)
}

func runHelp(_ context.Context, args []string, io stdio) int {
	if len(args) == 0 {
		usage(io.out)
		return 0
	}
	if _, ok := commands()[args[0]]; !ok {
		fmt.Fprintf(io.err, "govkit help: unknown command %q\n", args[0])
		return 2
	}
	return run(context.Background(), []string{args[0], "-h"}, io)
}

func runVersion(_ context.Context, args []string, io stdio) int {
	if len(args) > 0 {
		fmt.Fprintln(io.err, "Usage: govkit version")
		return 2
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprintln(io.out, versionText(bi, version))
	return 0
}

// runPart returns the command that dispatches to a part's subcommands.
func runPart(name string) func(context.Context, []string, stdio) int {
	return func(ctx context.Context, args []string, io stdio) int {
		return dispatch(ctx, name, subcommands[name], args, io)
	}
}

// dispatch runs one of a command's own subcommands (govkit notify serve, …).
func dispatch(ctx context.Context, parent string, subs map[string]command, args []string, io stdio) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		w := io.err
		code := 2
		if len(args) > 0 {
			w, code = io.out, 0
		}
		fmt.Fprintf(w, "Usage: govkit %s <command> [arguments]\n\nCommands:\n", parent)
		names := make([]string, 0, len(subs))
		for name := range subs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			fmt.Fprintf(w, "  %-12s %s\n", name, subs[name].summary)
		}
		return code
	}
	sub, ok := subs[args[0]]
	if !ok {
		fmt.Fprintf(io.err, "govkit %s: unknown command %q (try govkit %s -h)\n", parent, args[0], parent)
		return 2
	}
	return sub.run(ctx, args[1:], io)
}
