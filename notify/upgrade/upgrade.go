package upgrade

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/govkit/govkit/internal/cliflags"
)

// Options is one run of the tool. The environment it depends on (NODE_ENV,
// NOTIFYBC_NODE_ROLE) is read once by the command and passed in here.
type Options struct {
	Dir      string // the deployment directory (holding server/ or src/)
	From, To int    // From 0: detect from the files; To 0: From+1
	Env      string // --env: the environment whose files v3→v4 merges
	DryRun   bool
	Database string // MongoDB URI; empty: no database work

	NodeEnv     string // NODE_ENV
	NodeRole    string // NOTIFYBC_NODE_ROLE
	HasNodeRole bool   // whether NOTIFYBC_NODE_ROLE is set at all
}

// Exit codes, as for every govkit command.
const (
	ExitOK       = 0
	ExitProblems = 1 // the deployment cannot be upgraded as it is
	ExitUsage    = 2
)

// Main runs `govkit notify upgrade` with its command-line arguments.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("govkit notify upgrade", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Dir, "dir", ".", "deployment directory (the one holding server/ or src/)")
	fs.IntVar(&o.From, "from", 0, "major version the deployment is at now (1…5); detected from the files when they show it")
	fs.IntVar(&o.To, "to", 0, "major version to move to: only from+1")
	fs.StringVar(&o.Env, "env", "", "v3→v4: the environment (NODE_ENV) whose config.<env> files are merged into the local ones")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print the changes as a unified diff and change nothing")
	fs.StringVar(&o.Database, "database", "", "MongoDB URI of the deployment's database, for the data changes and checks of a step")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: govkit notify upgrade --from N --to N+1 [--dir D] [--env NAME] [--dry-run] [--database URI]

Moves a notification service deployment one major version up (N = 1…5):
rewrites its config, middleware and datasource files to the next version's
layout and keys, and prints the manual steps of that version. Every file it
changes or removes is kept under D/`+BackupDir+`/.

Flags:
`)
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args, stdout); !ok {
		return code
	}
	o.NodeEnv, _ = getenv("NODE_ENV")
	o.NodeRole, o.HasNodeRole = getenv("NOTIFYBC_NODE_ROLE")
	return Run(ctx, o, stdout, stderr)
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Run performs one upgrade step and returns the exit code.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) int {
	res, err := run(ctx, o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "govkit notify upgrade: %v\n", err)
		var ue *usageError
		if errors.As(err, &ue) {
			return ExitUsage
		}
		return ExitProblems
	}
	if res.problems > 0 {
		return ExitProblems
	}
	return ExitOK
}

type result struct {
	problems int
}

func stepsList(from, to int) string {
	var b strings.Builder
	for v := from; v < to; v++ {
		fmt.Fprintf(&b, "\n  govkit notify upgrade --from %d --to %d", v, v+1)
	}
	return b.String()
}

func run(ctx context.Context, o Options, out io.Writer) (result, error) {
	var res result
	if o.From != 0 && (o.From < 1 || o.From > 5) {
		return res, &usageError{fmt.Sprintf("--from %d: the tool upgrades from v1 to v5 (v6 is the latest)", o.From)}
	}
	if o.To != 0 && (o.To < 2 || o.To > 6) {
		return res, &usageError{fmt.Sprintf("--to %d: the versions are v2 to v6", o.To)}
	}
	if o.From != 0 && o.To != 0 && o.To != o.From+1 {
		if o.To <= o.From {
			return res, &usageError{fmt.Sprintf("--from %d --to %d: only upgrades, one major version at a time", o.From, o.To)}
		}
		return res, &usageError{fmt.Sprintf("--from %d --to %d: one major version at a time; run these in order:%s", o.From, o.To, stepsList(o.From, o.To))}
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return res, &usageError{err.Error()}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return res, &usageError{fmt.Sprintf("--dir %s: not a directory", o.Dir)}
	}
	if o.Database != "" {
		if _, err := databaseName(o.Database); err != nil {
			return res, &usageError{err.Error()}
		}
	}
	w, err := loadWorkspace(dir)
	if err != nil {
		return res, err
	}
	ev := gather(w)
	w.ev = ev
	from := o.From
	if from == 0 {
		v, derr := ev.detect()
		switch {
		case derr != nil && ev.parseError != nil:
			return res, ev.parseError
		case derr != nil:
			return res, &usageError{fmt.Sprintf("cannot tell the deployment's version from %s: %v; give --from", o.Dir, derr)}
		case v == 6:
			fmt.Fprintf(out, "The files in %s are in the v6 layout, the latest: nothing to upgrade.\n", o.Dir)
			return res, nil
		}
		from = v
		fmt.Fprintf(out, "Detected v%d from the files.\n", from)
		if o.To != 0 && o.To != from+1 {
			return res, &usageError{fmt.Sprintf("the deployment is at v%d, and --to %d is not the next version; run these in order:%s", from, o.To, stepsList(from, max(o.To, from+1)))}
		}
	}
	to := from + 1
	// Files older than this step must go through the earlier steps first.
	if ev.hi <= from {
		older := ev.hi - 1
		return res, fmt.Errorf("a file of the wrong version: %s, so the deployment is at v%d or older, not v%d; run first:%s", ev.hiWhy, older, from, stepsList(max(ev.lo, 1), from))
	}
	mode := ""
	if o.DryRun {
		mode = " (dry run: nothing is changed)"
	}
	fmt.Fprintf(out, "Upgrading %s from v%d to v%d%s\n", dir, from, to, mode)

	if err := rewrites[from](w, &o); err != nil {
		return res, err
	}
	changes := w.changes()
	if len(changes) == 0 && ev.lo > to {
		return res, fmt.Errorf("a file of the wrong version: %s, so the deployment is already at v%d or later; this step (v%d → v%d) does not apply", ev.loWhy, ev.lo, from, to)
	}
	printActions := func() {
		for _, a := range w.actions {
			fmt.Fprintf(out, "  %s\n", a)
		}
	}
	if len(changes) == 0 {
		fmt.Fprintf(out, "\nNothing to change: the files are already in the v%d layout.\n", to)
	} else if o.DryRun {
		printActions()
		fmt.Fprintln(out)
		for _, c := range changes {
			fmt.Fprint(out, unifiedDiff(c.rel, c.old, c.new))
		}
	} else {
		backup, err := applyChanges(dir, from, changes)
		if err != nil {
			return res, err
		}
		printActions()
		fmt.Fprintf(out, "\nChanged %d file(s):\n", len(changes))
		for _, c := range changes {
			verb := "rewritten"
			switch {
			case c.old == nil:
				verb = "created"
			case c.new == nil:
				verb = "removed"
			}
			fmt.Fprintf(out, "  %s %s\n", verb, c.rel)
		}
		rel, _ := filepath.Rel(dir, backup)
		fmt.Fprintf(out, "Backups of the changed and removed files: %s\n", filepath.Join(o.Dir, rel))
	}
	if len(w.notes) > 0 {
		fmt.Fprintln(out, "\nNotes:")
		for _, n := range w.notes {
			fmt.Fprintf(out, "  - %s\n", n)
		}
	}

	var facts dbFacts
	if o.Database != "" {
		facts, err = databaseStep(ctx, o, from, out)
		if err != nil {
			return res, err
		}
		res.problems += facts.problems
	}
	fmt.Fprintf(out, "\nManual steps for v%d → v%d:\n", from, to)
	for i, s := range manualSteps(from, &o, w, facts) {
		fmt.Fprintf(out, "%2d. %s\n", i+1, indentAfterFirst(s, "    "))
	}
	if from+1 < 6 {
		fmt.Fprintf(out, "\nThen continue with: govkit notify upgrade --from %d --to %d\n", to, to+1)
	}
	return res, nil
}

func indentAfterFirst(s, ind string) string {
	return strings.ReplaceAll(s, "\n", "\n"+ind)
}
