package main

import (
	"bytes"
	"context"
	"flag"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/cliflags"
)

// commandPath is one command line prefix that names a command: ["notify",
// "admin", "add"], with what the table says of it.
type commandPath struct {
	words []string
	cmd   command
	// dispatcher: the command only chooses a subcommand (notify, notify
	// admin); a stray word is an unknown command, not an argument.
	dispatcher bool
}

func (p commandPath) String() string { return strings.Join(p.words, " ") }

// allCommands walks the command table: every command, every part's
// subcommands, and the subcommands a command dispatches to by itself.
func allCommands() []commandPath {
	var all []commandPath
	for name, c := range commands() {
		subs, isPart := subcommands[name]
		all = append(all, commandPath{words: []string{name}, cmd: c, dispatcher: isPart})
		for sub, sc := range subs {
			all = append(all, commandPath{words: []string{name, sub}, cmd: sc, dispatcher: len(sc.subs) > 0})
			for _, child := range sc.subs {
				all = append(all, commandPath{words: []string{name, sub, child}, cmd: sc})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].String() < all[j].String() })
	return all
}

// commandFlags is the flag set of a leaf command, from its real parser
// (the command is not run), or nil for a command without one.
func commandFlags(t *testing.T, p commandPath) *flag.FlagSet {
	t.Helper()
	if p.dispatcher || p.words[0] == "help" {
		return nil
	}
	var fs *flag.FlagSet
	ctx := cliflags.ParseOnly(context.Background(), func(f *flag.FlagSet) { fs = f })
	var out, errb bytes.Buffer
	if code := run(ctx, p.words, stdio{strings.NewReader(""), &out, &errb}); code != 0 || fs == nil {
		t.Fatalf("govkit %s did not hand over its flags: exit %d, stderr %q", p, code, errb.String())
	}
	return fs
}

// singleDash finds a flag written with one dash in help text ("-data-dir"
// rather than "--data-dir"); "-" alone (standard input) is not one.
var singleDash = regexp.MustCompile(`(?:^|[\s\[(|,])-[a-zA-Z][a-zA-Z0-9-]*`)

// Every command and subcommand follows one convention (package cliflags):
// help exits 0 with the usage on stdout, however asked; a bad flag or a
// stray argument is named in one line "govkit CMD: …" followed by one
// line of hint, exit 2; usage text writes flags as --name.
func TestEveryCommandFollowsTheConvention(t *testing.T) {
	all := allCommands()
	if len(all) < 17 {
		t.Fatalf("only %d commands found in the table", len(all))
	}
	for _, p := range all {
		t.Run(strings.ReplaceAll(p.String(), " ", "_"), func(t *testing.T) {
			hint := "run 'govkit help " + p.String() + "'\n"
			code, help, errOut := runCapture(append([]string{"help"}, p.words...)...)
			if code != 0 || errOut != "" || !strings.HasPrefix(help, "Usage: govkit "+p.words[0]) {
				t.Fatalf("govkit help %s: exit %d, stdout %q, stderr %q", p, code, help, errOut)
			}
			for _, h := range []string{"-h", "--help", "-help"} {
				code, out, errOut := runCapture(append(append([]string{}, p.words...), h)...)
				if code != 0 || out != help || errOut != "" {
					t.Errorf("govkit %s %s: exit %d, stderr %q, stdout differs from govkit help's: %v", p, h, code, errOut, out != help)
				}
			}
			if m := singleDash.FindString(help); m != "" {
				t.Errorf("help of govkit %s writes a flag with one dash (%q):\n%s", p, strings.TrimSpace(m), help)
			}
			fs := commandFlags(t, p)
			if fs != nil {
				fs.VisitAll(func(f *flag.Flag) {
					if !strings.Contains(help, "--"+f.Name+" ") && !strings.Contains(help, "--"+f.Name+"\n") {
						t.Errorf("help of govkit %s does not show --%s", p, f.Name)
					}
				})
			}

			bad := append(append([]string{}, p.words...), "--no-such-flag")
			if p.words[0] == "help" {
				// help takes command names; a flag after it is
				// named as any other unknown word is.
				bad = []string{"help", "no-such-command"}
			}
			code, out, errOut := runCapture(bad...)
			want := "govkit " + p.String() + ": unknown flag --no-such-flag\n" + hint
			if p.words[0] == "help" {
				want = "govkit help: unknown command \"no-such-command\"\n" + hint
			}
			if code != 2 || out != "" || errOut != want {
				t.Errorf("govkit %s: exit %d, stdout %q, stderr\n%q\nwant\n%q", strings.Join(bad, " "), code, out, errOut, want)
			}

			if p.cmd.args && !p.dispatcher {
				return // its arguments are files or a URL
			}
			code, out, errOut = runCapture(append(append([]string{}, p.words...), "stray-arg")...)
			want = "govkit " + p.String() + ": unexpected argument \"stray-arg\"\n" + hint
			if p.dispatcher {
				want = "govkit " + p.String() + ": unknown command \"stray-arg\"\n" + hint
			}
			if code != 2 || out != "" || errOut != want {
				t.Errorf("govkit %s stray-arg: exit %d, stdout %q, stderr\n%q\nwant\n%q", p, code, out, errOut, want)
			}
		})
	}
}

// The top level follows the convention too.
func TestTopLevelConvention(t *testing.T) {
	for _, c := range []struct {
		args       []string
		code       int
		out, err   string
		exactError bool
	}{
		{[]string{"--no-such-flag"}, 2, "", "govkit: unknown flag --no-such-flag\nrun 'govkit help'\n", true},
		{[]string{"frobnicate"}, 2, "", "govkit: unknown command \"frobnicate\"\nrun 'govkit help'\n", true},
		{[]string{"--help"}, 0, "Usage: govkit <command>", "", true},
		{[]string{"help"}, 0, "Usage: govkit <command>", "", true},
		{nil, 2, "", "Usage: govkit <command>", false},
	} {
		code, out, errOut := runCapture(c.args...)
		if code != c.code || !strings.HasPrefix(out, c.out) || (c.out == "" && out != "") ||
			(c.exactError && errOut != c.err) || !strings.HasPrefix(errOut, c.err) {
			t.Errorf("govkit %q: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
		}
	}
}
