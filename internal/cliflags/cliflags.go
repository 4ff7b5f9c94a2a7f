// Package cliflags is the one convention every govkit command follows with
// its flags and arguments, so that a person who learned one command knows
// them all:
//
//   - help (-h, --help, `govkit help CMD`) prints the command's usage on
//     standard output and exits 0;
//   - a bad flag, a bad value or a stray argument prints one line
//     "govkit CMD: …" naming it, then one line "run 'govkit help CMD'", on
//     standard error, and exits 2 (the usage is not repeated: thirty lines
//     of flags bury the one line that says what was wrong);
//   - usage text writes flags as the README does, --data-dir.
//
// A command makes its flag.FlagSet with flag.ContinueOnError, named
// "govkit CMD" (e.g. "govkit notify serve"), with its output set to
// standard error and a Usage function that writes to fs.Output().
package cliflags

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Parse parses args with fs for a command that takes no positional
// arguments. When ok is false the command is over and exits with code.
func Parse(ctx context.Context, fs *flag.FlagSet, args []string, stdout io.Writer) (code int, ok bool) {
	code, ok = ParseArgs(ctx, fs, args, stdout)
	if ok && fs.NArg() > 0 {
		return Usagef(fs, "unexpected argument %q", fs.Arg(0)), false
	}
	return code, ok
}

// ParseArgs is Parse for a command that takes positional arguments
// (fs.Args()); the command checks them itself and reports a wrong one
// with Usagef.
func ParseArgs(ctx context.Context, fs *flag.FlagSet, args []string, stdout io.Writer) (code int, ok bool) {
	stderr, usage := fs.Output(), fs.Usage
	// The flag package would print its own message and the whole usage
	// on a bad flag; say it once, our way, instead.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		PrintUsage(fs, stdout)
		return 0, false
	case err != nil:
		return Usagef(fs, "%s", describe(err)), false
	}
	if f, _ := ctx.Value(parseOnlyKey{}).(func(*flag.FlagSet)); f != nil {
		f(fs)
		return 0, false
	}
	return 0, true
}

// PrintUsage writes fs's usage to w.
func PrintUsage(fs *flag.FlagSet, w io.Writer) {
	out := fs.Output()
	fs.SetOutput(w)
	defer fs.SetOutput(out)
	if fs.Usage != nil {
		fs.Usage()
		return
	}
	fmt.Fprintf(w, "Usage: %s [flags]\n\nFlags:\n", fs.Name())
	PrintDefaults(fs)
}

// Usagef reports a mistake in the command line the convention's way, on
// fs's output, and returns 2, the exit code of bad usage.
func Usagef(fs *flag.FlagSet, format string, a ...any) int {
	Fail(fs.Output(), fs.Name(), fmt.Sprintf(format, a...))
	return 2
}

// Fail writes the two lines of a usage mistake of the command named name
// ("govkit notify serve") to w.
func Fail(w io.Writer, name, msg string) {
	fmt.Fprintf(w, "%s: %s\n%s\n", name, msg, Hint(name))
}

// Hint is the line that says where the usage of the command named name is.
func Hint(name string) string {
	if rest, ok := strings.CutPrefix(name, "govkit"); ok {
		return "run 'govkit help" + rest + "'"
	}
	return "run '" + name + " -h'"
}

// PrintDefaults writes fs's flags to fs.Output() as flag.PrintDefaults
// does, but with two dashes (--data-dir), as the README and every example
// write them; Go's flag package accepts both.
func PrintDefaults(fs *flag.FlagSet) {
	w := fs.Output()
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		line += "\n    \t" + strings.ReplaceAll(text, "\n", "\n    \t")
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			if g, ok := f.Value.(flag.Getter); ok && isString(g.Get()) {
				line += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				line += fmt.Sprintf(" (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(w, line)
	})
}

// describe says what was wrong with a flag in the convention's words: the
// flag package's messages name flags with one dash ("-bogus").
func describe(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimLeft(name, "-")
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + strings.TrimLeft(name, "-") + " needs a value"
	}
	// invalid value "x" for flag -name: reason
	if strings.HasPrefix(msg, "invalid ") {
		if i := strings.Index(msg, " for flag -"); i >= 0 {
			return msg[:i] + " for --" + strings.TrimLeft(msg[i+len(" for flag -"):], "-")
		}
	}
	return msg
}

func isString(v any) bool { _, ok := v.(string); return ok }

type parseOnlyKey struct{}

// ParseOnly returns a context under which a command's Parse or ParseArgs,
// after parsing its flags successfully, hands the flag set to f and ends
// the command (exit 0) instead of running it. The documentation check
// uses it to try every command line the docs show against the command's
// real flags without starting anything.
func ParseOnly(ctx context.Context, f func(*flag.FlagSet)) context.Context {
	return context.WithValue(ctx, parseOnlyKey{}, f)
}
