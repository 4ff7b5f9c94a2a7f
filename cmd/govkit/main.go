// Command govkit is the single binary of the govkit module: the Event CLI,
// the document platform, the notification service and `dev`, which runs all
// of them on embedded defaults.
//
// This file only dispatches subcommands; each part's wiring lives in a file
// named after it (event.go, docplatform.go, notify.go, dev.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
	"syscall"

	"github.com/govkit/govkit/internal/cliflags"
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
// Every command follows package cliflags' convention for help and for
// mistakes in its command line.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, io stdio) int
	// args is whether the command takes positional arguments (a URL,
	// files); the others refuse a stray one.
	args bool
	// subs are the names of the subcommands a command dispatches to by
	// itself (notify admin's add, list, …); the parts' subcommands are in
	// the subcommands table instead.
	subs []string
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
		"dev":         {summary: "run every part on embedded defaults (SQLite, dev OpenID provider, embedded stores, mail catcher)", run: runDev},
		"docplatform": {summary: "the document platform: serve, grant-admin, check-config", run: runPart("docplatform")},
		"notify":      {summary: "the notification service: serve, admin, check-config, copy-store, upgrade", run: runPart("notify")},
		"event":       {summary: "validate Event records, convert them to date form", run: runPart("event")},
		"healthcheck": {summary: "GET a health endpoint; exit 0 when it answers 2xx (for container health checks)", run: runHealthcheck, args: true},
		"version":     {summary: "print the version", run: runVersion},
		"help":        {summary: "show the commands, or the usage of one (govkit help notify serve)", run: runHelp, args: true},
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
		if isHelp(args[0]) {
			usage(io.out)
			return 0
		}
		cliflags.Fail(io.err, "govkit", unknown(args[0]))
		return 2
	}
	return cmd.run(ctx, args[1:], io)
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// unknown says what is wrong with arg where a command name was expected.
func unknown(arg string) string {
	if strings.HasPrefix(arg, "-") {
		return "unknown flag --" + strings.TrimLeft(arg, "-")
	}
	return fmt.Sprintf("unknown command %q", arg)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: govkit <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	listCommands(w, commands())
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "govkit help <command>" (or "govkit <command> --help") for the usage of a command.`)
}

func listCommands(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for name := range cmds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-13s %s\n", name, cmds[name].summary)
	}
}

// runHelp is `govkit help [COMMAND [SUBCOMMAND…]]`: the usage of a
// command is what `govkit COMMAND SUBCOMMAND… --help` prints.
func runHelp(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 {
		usage(io.out)
		return 0
	}
	if args[0] == "help" || isHelp(args[0]) {
		fmt.Fprintln(io.out, "Usage: govkit help [<command> [<subcommand>…]]")
		fmt.Fprintln(io.out, "\nWithout a command, lists the commands; with one, prints its usage (as --help does).")
		return 0
	}
	if _, ok := commands()[args[0]]; !ok {
		cliflags.Fail(io.err, "govkit help", unknown(args[0]))
		return 2
	}
	return run(ctx, append(append([]string{}, args...), "--help"), io)
}

func runVersion(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("govkit version", flag.ContinueOnError)
	fs.SetOutput(io.err)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: govkit version")
		fmt.Fprintln(fs.Output(), "\nPrints the version, the revision it was built from, the Go version and the platform.")
	}
	if code, ok := cliflags.Parse(ctx, fs, args, io.out); !ok {
		return code
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
	name := "govkit " + parent
	if len(args) == 0 {
		names := make([]string, 0, len(subs))
		for n := range subs {
			names = append(names, n)
		}
		sort.Strings(names)
		cliflags.Fail(io.err, name, "which command? "+strings.Join(names, ", "))
		return 2
	}
	if isHelp(args[0]) {
		fmt.Fprintf(io.out, "Usage: govkit %s <command> [arguments]\n\nCommands:\n", parent)
		listCommands(io.out, subs)
		fmt.Fprintf(io.out, "\nRun \"govkit help %s <command>\" for the usage of a command.\n", parent)
		return 0
	}
	sub, ok := subs[args[0]]
	if !ok {
		cliflags.Fail(io.err, name, unknown(args[0]))
		return 2
	}
	return sub.run(ctx, args[1:], io)
}
