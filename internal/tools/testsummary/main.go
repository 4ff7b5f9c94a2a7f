// Command testsummary runs `go test -json` with the arguments it is given
// and prints what plain `go test` prints — a line per package, and the
// output of a failing test as soon as it fails — followed by a closing
// summary: how many tests passed, failed and were skipped, the failed tests
// by name, and the skipped ones grouped by the reason they gave (so a
// missing GOVKIT_TEST_REDIS_ADDR shows as one line with its count, not as
// dozens of quiet skips behind a row of "ok").
//
// It is the project's test command (README.md, .ci/run):
//
//	go run ./internal/tools/testsummary ./...
//	go run ./internal/tools/testsummary -run TestDev -count 1 ./cmd/...
//
// Every argument goes to `go test` unchanged; -v streams every line of
// test output as it comes. The exit status is go test's (0 when everything
// passed, 1 otherwise), or 2 when go test could not be started.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"time"
)

func main() {
	// Ctrl-C reaches go test through the terminal's process group; this
	// process stays to summarise what ran.
	signal.Ignore(os.Interrupt)
	os.Exit(testAndSummarize(os.Args[1:], "", os.Stdout, os.Stderr))
}

// testAndSummarize runs go test -json with args in dir ("" the current
// directory), writes the report to stdout and returns the exit status.
func testAndSummarize(args []string, dir string, stdout, stderr io.Writer) int {
	verbose := slices.ContainsFunc(args, func(a string) bool {
		return a == "-v" || a == "--v" || a == "-v=true" || a == "-test.v" || a == "-test.v=true"
	})
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Dir = dir
	cmd.Stderr = stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 2
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 2
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	r := newRun(out, verbose)
	r.read(events)
	waitErr := cmd.Wait()
	r.summary(time.Since(start))
	var exit *exec.ExitError
	switch {
	case errors.As(waitErr, &exit):
		return exit.ExitCode()
	case waitErr != nil:
		fmt.Fprintln(stderr, "testsummary:", waitErr)
		return 2
	case r.failed() > 0:
		return 1
	}
	return 0
}

// event is one line of `go test -json` (cmd/test2json's TestEvent, plus
// the build events go test adds).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Output     string
	Elapsed    float64
}

// test is what a run keeps of one test while it runs.
type test struct {
	output []string
}

// pkg is what a run keeps of one package while its tests run.
type pkg struct {
	output  []string // lines not attributed to a test
	closing []string // "ok  pkg 0.1s", "FAIL pkg …": printed last
	running map[string]*test
}

// run reads the event stream, writes what plain go test would, and keeps
// the counts for the summary.
type run struct {
	w       *bufio.Writer
	verbose bool

	pkgs   map[string]*pkg
	builds map[string][]string // build output by import path

	passed, skipped       int
	failures              []string // "package Test" of failed tests
	unfinished            []string // tests running when their package failed
	skips                 map[string][]string
	skipOrder             []string
	pkgOK, pkgFail, pkgNo int
	buildFailures         []string
	other                 []string // lines that were not JSON
}

func newRun(w *bufio.Writer, verbose bool) *run {
	return &run{w: w, verbose: verbose, pkgs: map[string]*pkg{}, builds: map[string][]string{}, skips: map[string][]string{}}
}

func (r *run) failed() int { return len(r.failures) + len(r.unfinished) + r.pkgFail }

func (r *run) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// go test prints a few things outside the JSON stream (a
			// setup failure, go vet's findings in older versions).
			r.other = append(r.other, string(line))
			r.print(string(line) + "\n")
			continue
		}
		r.handle(e)
	}
}

func (r *run) print(s string) {
	r.w.WriteString(s)
	r.w.Flush()
}

func (r *run) pkg(name string) *pkg {
	p := r.pkgs[name]
	if p == nil {
		p = &pkg{running: map[string]*test{}}
		r.pkgs[name] = p
	}
	return p
}

func (r *run) handle(e event) {
	switch e.Action {
	case "build-output":
		r.builds[e.ImportPath] = append(r.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		r.print(strings.Join(r.builds[e.ImportPath], ""))
		r.buildFailures = append(r.buildFailures, e.ImportPath)
		delete(r.builds, e.ImportPath)
		return
	}
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package)
	if e.Test == "" {
		r.packageEvent(e, p)
		return
	}
	t := p.running[e.Test]
	if t == nil {
		t = &test{}
		p.running[e.Test] = t
	}
	switch e.Action {
	case "output":
		t.output = append(t.output, e.Output)
		if r.verbose {
			r.print(e.Output)
		}
		if strings.HasPrefix(e.Output, "=== ") {
			// RUN, PAUSE, CONT, NAME: plain go test shows none of them.
			t.output = t.output[:len(t.output)-1]
		}
	case "pass":
		r.passed++
		delete(p.running, e.Test)
	case "skip":
		reason := skipReason(t.output)
		if _, ok := r.skips[reason]; !ok {
			r.skipOrder = append(r.skipOrder, reason)
		}
		r.skips[reason] = append(r.skips[reason], e.Package+" "+e.Test)
		r.skipped++
		delete(p.running, e.Test)
	case "fail":
		r.failures = append(r.failures, e.Package+" "+e.Test)
		if !r.verbose {
			r.print(strings.Join(t.output, ""))
		}
		delete(p.running, e.Test)
	}
}

// packageEvent handles what concerns a whole package: its closing line
// ("ok", "FAIL", "?") and output no test claimed.
func (r *run) packageEvent(e event, p *pkg) {
	switch e.Action {
	case "output":
		if e.Output == "PASS\n" {
			return // plain go test prints only "ok" for a passing package
		}
		if isPackageLine(e.Output) {
			p.closing = append(p.closing, e.Output)
			return
		}
		p.output = append(p.output, e.Output)
		if r.verbose {
			r.print(e.Output)
		}
	case "pass":
		r.pkgOK++
		r.print(strings.Join(p.closing, ""))
		delete(r.pkgs, e.Package)
	case "skip":
		r.pkgNo++
		r.print(strings.Join(p.closing, ""))
		delete(r.pkgs, e.Package)
	case "fail":
		r.pkgFail++
		// A panic or a timeout ends the test binary: the tests still
		// running never report, and their output is what explains it.
		var names []string
		for name := range p.running {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if !r.verbose {
				r.print(strings.Join(p.running[name].output, ""))
			}
			r.unfinished = append(r.unfinished, e.Package+" "+name)
		}
		if !r.verbose {
			r.print(strings.Join(p.output, ""))
		}
		r.print(strings.Join(p.closing, ""))
		delete(r.pkgs, e.Package)
	}
}

// isPackageLine reports whether a line is one of those plain go test
// prints for every package.
func isPackageLine(s string) bool {
	return strings.HasPrefix(s, "ok  \t") || strings.HasPrefix(s, "FAIL\t") || strings.HasPrefix(s, "?   \t") || s == "FAIL\n"
}

// logLine is a t.Log/t.Skip line: indentation, file:line, the message.
var logLine = regexp.MustCompile(`^\s+[^\s:]+\.go:\d+: (.*)$`)

// skipReason is the last message a skipped test logged before "--- SKIP"
// (the argument of t.Skip, with its continuation lines), without the
// file and line, so that every test skipped for one reason groups together.
func skipReason(output []string) string {
	reason := ""
	for i, l := range output {
		l = strings.TrimRight(l, "\n")
		m := logLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		parts := []string{strings.TrimSpace(m[1])}
		for _, c := range output[i+1:] {
			c = strings.TrimRight(c, "\n")
			if logLine.MatchString(c) || strings.HasPrefix(strings.TrimSpace(c), "--- ") || strings.HasPrefix(c, "=== ") || strings.TrimSpace(c) == "" {
				break
			}
			parts = append(parts, strings.TrimSpace(c))
		}
		reason = strings.Join(parts, " ")
	}
	if reason == "" {
		return "(no reason given)"
	}
	return reason
}

// summary writes the closing report.
func (r *run) summary(took time.Duration) {
	w := r.w
	fmt.Fprintf(w, "\n=== test summary (%s) ===\n", took.Round(time.Second))
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped; packages: %d ok, %d failed, %d without tests\n",
		r.passed, len(r.failures)+len(r.unfinished), r.skipped, r.pkgOK, r.pkgFail, r.pkgNo)
	if len(r.buildFailures) > 0 {
		fmt.Fprintf(w, "\nDid not build (%d):\n", len(r.buildFailures))
		for _, b := range r.buildFailures {
			fmt.Fprintf(w, "  %s\n", b)
		}
	}
	if len(r.failures) > 0 {
		fmt.Fprintf(w, "\nFailed (%d):\n", len(r.failures))
		for _, f := range r.failures {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if len(r.unfinished) > 0 {
		fmt.Fprintf(w, "\nDid not finish: the package stopped while they ran (panic or -timeout) (%d):\n", len(r.unfinished))
		for _, f := range r.unfinished {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if r.skipped > 0 {
		fmt.Fprintf(w, "\nSkipped (%d), by reason:\n", r.skipped)
		order := slices.Clone(r.skipOrder)
		slices.SortStableFunc(order, func(a, b string) int { return len(r.skips[b]) - len(r.skips[a]) })
		for _, reason := range order {
			tests := r.skips[reason]
			fmt.Fprintf(w, "  %4d  %s\n", len(tests), reason)
			const show = 3
			for i, t := range tests {
				if i == show {
					fmt.Fprintf(w, "          … and %d more\n", len(tests)-show)
					break
				}
				fmt.Fprintf(w, "          %s\n", t)
			}
		}
	}
	if r.failed() == 0 && len(r.buildFailures) == 0 {
		fmt.Fprintln(w, "\nPASS")
	} else {
		fmt.Fprintln(w, "\nFAIL")
	}
}
