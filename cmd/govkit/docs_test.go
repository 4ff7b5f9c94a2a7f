package main

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/cliflags"
)

// repoRoot is where the docs are, from this package's directory.
const repoRoot = "../.."

// A docCommand is one govkit command line the docs show.
type docCommand struct {
	where string   // file:line
	words []string // after "govkit"
	// synopsis: the line shows a usage pattern ([--dir D], <command>,
	// N+1), not a command to paste; its flags must exist, but it is not
	// parsed.
	synopsis bool
}

// govkitLine finds "govkit CMD …" in text: the rest of the line up to the
// end of a code span, a comment, a pipe or a redirection.
var govkitLine = regexp.MustCompile("(?:^|[\\s`(/\"'])govkit ((?:dev|notify|docplatform|event|healthcheck|version|help)\\b[^`#;&<>\"]*)")

// argList finds the argument lists of compose, Helm and Dockerfile
// (command: [...], args: [...], CMD [...]).
var argList = regexp.MustCompile(`(?:command|args|CMD|test):?\s*\[([^\]]*)\]`)

// docCommands extracts every govkit command line of README.md,
// CONTRIBUTING.md and the files under deploy/ (but its Go tests).
func docCommands(t *testing.T) []docCommand {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md", "Dockerfile"}
	err := filepath.WalkDir(filepath.Join(repoRoot, "deploy"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".go") {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var cmds []docCommand
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		// Helm's template actions are not arguments.
		text = regexp.MustCompile(`\{\{[^}]*\}\}`).ReplaceAllString(text, "")
		for _, l := range candidateLines(text, strings.HasSuffix(f, ".md")) {
			where := f + ":" + strconv.Itoa(l.n)
			for _, m := range govkitLine.FindAllStringSubmatch(l.text, -1) {
				cmds = append(cmds, splitDocCommand(where, m[1])...)
			}
			for _, m := range argList.FindAllStringSubmatch(l.text, -1) {
				var words []string
				for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
					words = append(words, q[1])
				}
				if len(words) > 0 && words[0] == "CMD" {
					words = words[1:]
				}
				if len(words) > 0 && strings.HasSuffix(words[0], "/govkit") {
					words = words[1:]
				}
				if len(words) > 0 {
					if _, ok := commands()[words[0]]; ok {
						cmds = append(cmds, docCommand{where: where, words: words})
					}
				}
			}
		}
	}
	return cmds
}

type numberedLine struct {
	n    int // the first line's number
	text string
}

var codeSpanText = regexp.MustCompile("`([^`]+)`")

// candidateLines are the lines of text that may hold a command: every
// line of a plain file, with shell continuation lines joined. In Markdown
// commands are code: the lines of an indented block (a paragraph whose
// lines are all indented four spaces or more), and each code span of the
// other paragraphs (one may wrap onto the next line); prose that says
// "govkit version, so …" is not a command.
func candidateLines(text string, markdown bool) []numberedLine {
	lines := strings.Split(text, "\n")
	var out []numberedLine
	joinContinued := func(i int) (numberedLine, int) {
		l := numberedLine{i + 1, lines[i]}
		for strings.HasSuffix(strings.TrimSpace(l.text), "\\") && i+1 < len(lines) {
			l.text = strings.TrimSuffix(strings.TrimSpace(l.text), "\\") + " " + lines[i+1]
			i++
		}
		return l, i
	}
	if !markdown {
		for i := 0; i < len(lines); i++ {
			var l numberedLine
			l, i = joinContinued(i)
			out = append(out, l)
		}
		return out
	}
	for start := 0; start < len(lines); {
		if strings.TrimSpace(lines[start]) == "" {
			start++
			continue
		}
		end := start
		code := true
		for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
			code = code && strings.HasPrefix(lines[end], "    ")
			end++
		}
		if code {
			for i := start; i < end; i++ {
				var l numberedLine
				l, i = joinContinued(i)
				out = append(out, l)
			}
		} else {
			para := strings.Join(lines[start:end], "\n")
			for _, m := range codeSpanText.FindAllStringSubmatchIndex(para, -1) {
				n := start + 1 + strings.Count(para[:m[0]], "\n")
				out = append(out, numberedLine{n, strings.Join(strings.Fields(para[m[2]:m[3]]), " ")})
			}
		}
		start = end
	}
	return out
}

// splitDocCommand splits a command line into words; a word with "\|"
// or "|" (a table's alternatives: serve\|grant-admin) stands for each.
func splitDocCommand(where, s string) []docCommand {
	s = strings.TrimSpace(strings.TrimRight(s, " \t`.,:;)"))
	if first, _, _ := strings.Cut(s, " "); strings.HasSuffix(first, ":") {
		return nil // "govkit dev: warning: …", what a command prints
	}
	c := docCommand{where: where, synopsis: strings.ContainsAny(s, "[]<>…") || strings.Contains(s, "N+1") || strings.Contains(s, "...")}
	for _, w := range strings.Fields(s) {
		if w == "|" {
			break
		}
		c.words = append(c.words, strings.Trim(w, `'"`))
	}
	for i, w := range c.words {
		w = strings.ReplaceAll(w, `\|`, "|")
		if alts := strings.Split(w, "|"); len(alts) > 1 && !strings.HasPrefix(w, "-") {
			var out []docCommand
			for _, a := range alts {
				d := docCommand{where: c.where, synopsis: c.synopsis, words: append(append(append([]string{}, c.words[:i]...), a), c.words[i+1:]...)}
				out = append(out, splitDocCommand(where, strings.Join(d.words, " "))...)
			}
			return out
		}
	}
	return []docCommand{c}
}

// resolve finds the command a doc line names: the words that name it, and
// whether it is a leaf (has flags of its own).
func resolve(words []string) (path []string, leaf bool, ok bool) {
	c, ok := commands()[words[0]]
	if !ok {
		return nil, false, false
	}
	path = words[:1]
	subs, isPart := subcommands[words[0]]
	if !isPart {
		return path, words[0] != "help", true
	}
	if len(words) < 2 || strings.HasPrefix(words[1], "-") {
		return path, false, true // the part itself, "govkit notify"
	}
	sc, ok := subs[words[1]]
	if !ok {
		return nil, false, false
	}
	_ = c
	path = words[:2]
	if len(sc.subs) == 0 {
		return path, true, true
	}
	if len(words) < 3 || strings.HasPrefix(words[2], "-") {
		return path, false, true
	}
	for _, child := range sc.subs {
		if words[2] == child {
			return words[:3], true, true
		}
	}
	return nil, false, false
}

// flagsOf is the flag set of the command at path, from its real parser.
func flagsOf(t *testing.T, path []string) *flag.FlagSet {
	t.Helper()
	var got *flag.FlagSet
	ctx := cliflags.ParseOnly(context.Background(), func(f *flag.FlagSet) { got = f })
	var out, errb bytes.Buffer
	run(ctx, path, stdio{strings.NewReader(""), &out, &errb})
	if got == nil {
		t.Fatalf("govkit %s did not hand over its flags: %s", strings.Join(path, " "), errb.String())
	}
	return got
}

// Every govkit command line of the README, CONTRIBUTING and deploy/ names
// a real command, and its flags are the command's: each line is parsed
// by the command's own flag parser (the command is not run); a usage
// pattern ([--dir D]) has its flags looked up. And every flag of every
// command is in the README.
func TestDocsShowRealCommandsAndFlags(t *testing.T) {
	cmds := docCommands(t)
	if len(cmds) < 60 {
		t.Fatalf("only %d command lines found in the docs", len(cmds))
	}
	flagName := regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	parsed := 0
	for _, c := range cmds {
		path, leaf, ok := resolve(c.words)
		if !ok {
			t.Errorf("%s: govkit %s: no such command", c.where, strings.Join(c.words, " "))
			continue
		}
		if path[0] == "help" {
			if len(c.words) > 1 && !c.synopsis {
				if _, _, ok := resolve(c.words[1:]); !ok {
					t.Errorf("%s: govkit %s: no such command", c.where, strings.Join(c.words, " "))
				}
			}
			continue
		}
		if !leaf {
			if len(c.words) > len(path) {
				t.Errorf("%s: govkit %s: %q is not a command of govkit %s", c.where, strings.Join(c.words, " "), c.words[len(path)], strings.Join(path, " "))
			}
			continue
		}
		fs := flagsOf(t, path)
		for _, w := range c.words[len(path):] {
			for _, m := range flagName.FindAllStringSubmatch(w, -1) {
				if fs.Lookup(m[1]) == nil {
					t.Errorf("%s: govkit %s: no flag --%s", c.where, strings.Join(path, " "), m[1])
				}
			}
		}
		if c.synopsis {
			continue
		}
		var got *flag.FlagSet
		ctx := cliflags.ParseOnly(context.Background(), func(f *flag.FlagSet) { got = f })
		var out, errb bytes.Buffer
		asksHelp := slices.ContainsFunc(c.words, func(w string) bool { return w == "-h" || w == "--help" || w == "-help" })
		if code := run(ctx, c.words, stdio{strings.NewReader(""), &out, &errb}); code != 0 || got == nil && !asksHelp {
			t.Errorf("%s: govkit %s: the command's parser refuses it (exit %d): %s", c.where, strings.Join(c.words, " "), code, strings.TrimSpace(errb.String()))
			continue
		}
		parsed++
	}
	t.Logf("%d command lines in the docs, %d parsed by their command's flags", len(cmds), parsed)
	if parsed < 30 {
		t.Errorf("only %d command lines parsed", parsed)
	}

	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range allCommands() {
		fs := commandFlags(t, p)
		if fs == nil {
			continue
		}
		fs.VisitAll(func(f *flag.Flag) {
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).Match(readme) {
				t.Errorf("README.md does not mention --%s of govkit %s", f.Name, p)
			}
		})
	}
}

// The README's Commands table names every command and subcommand of the
// command table.
func TestReadmeCommandsTableIsComplete(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Commands\n")
	if !ok {
		t.Fatal("README.md has no Commands section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `govkit ") {
			rows = append(rows, line)
		}
	}
	for _, p := range allCommands() {
		found := false
		for _, row := range rows {
			first, _, _ := strings.Cut(strings.TrimPrefix(row, "| `govkit "), "`")
			words := strings.FieldsFunc(first, func(r rune) bool { return r == ' ' || r == '|' || r == '\\' })
			if len(words) > 0 && words[0] == p.words[0] {
				found = true
				for _, w := range p.words[1:] {
					if !regexp.MustCompile(`[\s|(` + "`" + `]` + regexp.QuoteMeta(w) + `\b`).MatchString(row) {
						t.Errorf("the Commands table's row of govkit %s does not name %q", p.words[0], w)
					}
				}
			}
		}
		if !found {
			t.Errorf("the README's Commands table has no row for govkit %s", p.words[0])
		}
	}
}
