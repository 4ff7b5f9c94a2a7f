// Package eventcli is the "govkit event" command line: validate checks
// files of Event records against the rules of package event, and to-date
// converts them to the date form in a time zone. The cmd/govkit file only
// wires these functions in, so everything here is tested as a library.
//
// Input, for both commands, is each FILE in turn ("-" or no FILE at all is
// standard input): one JSON object, a JSON array of objects, or NDJSON
// (one object per line, blank lines ignored). It is read as a stream, one
// record at a time, so a file of millions of lines takes constant memory.
// A record that is not valid JSON, or not an object, is an invalid record.
// Every problem is reported with the line its record starts on:
//
//	FILE:LINE: PROPERTY: problem (rule N)
//
// where N is the rule number of package event ("json" for a record that is
// not a JSON object, "order" for the --order check, "convert" for a
// datetime whose local date falls outside the years 0000-9999). A summary
// line follows. Exit status: 0 all records valid, 1 some record invalid, 2 a
// file could not be read or the usage was wrong.
//
// Decisions where the spec is silent: with --format json, stdout carries
// only the problem objects (one per line) and the summary goes to stderr,
// so the output stays NDJSON; with text it goes to stdout after the
// problems. An empty input has no records and is valid. A record over
// 1 MiB is an invalid record, so no input can take unbounded memory. If
// the first record of a non-array input spans several lines, records are
// split by matching brackets (pretty-printed objects one after another);
// if it fits on its line, the input is NDJSON and a broken line breaks
// only itself. An input that starts with '[' is one array; after a structural error in it (a missing
// comma) the rest of that file cannot be split into records and is
// reported as one problem. In to-date, date-form events are written back
// unchanged and datetime events become the dates they fall on in --tz
// (default America/Vancouver: servers often run in UTC, where the machine
// zone would turn the conversion into truncation; --tz Local uses it).
package eventcli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/govkit/govkit/event"
	"github.com/govkit/govkit/internal/cliflags"
)

// Streams are the standard streams a command reads and writes.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// DefaultZone is the zone to-date converts in unless --tz says otherwise:
// the Event's "typically Pacific" frame of reference.
const DefaultZone = "America/Vancouver"

const validateUsage = `Usage: govkit event validate [--order] [--format text|json] [FILE...]

Checks every Event record in each FILE ("-" or none: standard input). A file
holds one JSON object, a JSON array of objects, or NDJSON. Prints one line
per problem, FILE:LINE: PROPERTY: problem (rule N), then a summary.
Exit status: 0 all valid, 1 some record invalid, 2 unreadable file or bad usage.

Flags:
`

const toDateUsage = `Usage: govkit event to-date [--tz ZONE] [FILE...]

Writes the date-form equivalent of every Event record in each FILE ("-" or
none: standard input) to standard output as NDJSON. Date-form events are
written unchanged; a datetime becomes the calendar date it falls on in ZONE,
never its UTC date. Invalid records are reported on standard error as
validate reports them, and skipped. Exit status as for validate.

Flags:
`

// Validate runs "govkit event validate" with the arguments after
// "validate" and returns the exit status.
func Validate(ctx context.Context, args []string, s Streams) int {
	fs := flag.NewFlagSet("govkit event validate", flag.ContinueOnError)
	order := fs.Bool("order", false, "also report an end before its start (compared as instants or dates)")
	format := fs.String("format", "text", "problem format: text (FILE:LINE: PROPERTY: problem) or json (one object per line)")
	if code, ok := parseFlags(ctx, fs, args, validateUsage, s); !ok {
		return code
	}
	if *format != "text" && *format != "json" {
		return cliflags.Usagef(fs, "--format must be text or json, not %q", *format)
	}
	out := bufio.NewWriterSize(s.Out, 64<<10)
	defer out.Flush()
	rep := &reporter{w: out, json: *format == "json"}
	summary := out
	if rep.json {
		summary = bufio.NewWriter(s.Err)
		defer summary.Flush()
	}
	check := func(rec record) bool {
		if err := event.Validate(rec.data); err != nil {
			rep.problems(rec.line, err)
			return false
		}
		if !*order {
			return true
		}
		e, _ := event.Parse(rec.data)
		if err := e.CheckOrder(); err != nil {
			rep.problems(rec.line, err)
			return false
		}
		return true
	}
	st := run(ctx, "validate", fs.Args(), s, rep, check)
	if st.any() {
		fmt.Fprintf(summary, "%s: %s%s\n", plural(st.files, "file"), st, st.unreadableText())
	}
	return st.code()
}

// ToDate runs "govkit event to-date" with the arguments after "to-date"
// and returns the exit status.
func ToDate(ctx context.Context, args []string, s Streams) int {
	fs := flag.NewFlagSet("govkit event to-date", flag.ContinueOnError)
	tz := fs.String("tz", DefaultZone, "time zone of the converting system (IANA name, UTC, or Local for this machine's zone)")
	if code, ok := parseFlags(ctx, fs, args, toDateUsage, s); !ok {
		return code
	}
	loc, err := loadZone(*tz)
	if err != nil {
		return cliflags.Usagef(fs, "--tz %q: %v", *tz, err)
	}
	out := bufio.NewWriterSize(s.Out, 64<<10)
	defer out.Flush()
	errw := bufio.NewWriter(s.Err)
	defer errw.Flush()
	rep := &reporter{w: errw}
	line := make([]byte, 0, 128)
	convert := func(rec record) bool {
		e, err := event.Parse(rec.data)
		if err == nil {
			e, err = e.ToDateForm(loc)
		}
		if err != nil {
			rep.problems(rec.line, err)
			return false
		}
		line, _ = e.AppendJSON(line[:0])
		out.Write(append(line, '\n'))
		return true
	}
	st := run(ctx, "to-date", fs.Args(), s, rep, convert)
	if st.any() {
		fmt.Fprintf(errw, "%s: %s, converted in %s%s\n", plural(st.files, "file"), st, loc, st.unreadableText())
	}
	return st.code()
}

func loadZone(name string) (*time.Location, error) {
	if name == "Local" {
		return time.Local, nil
	}
	if name == "" {
		return nil, errors.New("empty zone name")
	}
	return time.LoadLocation(name)
}

// parseFlags parses args the way every govkit command does (package
// cliflags); when it returns false the command is over with the returned
// status.
func parseFlags(ctx context.Context, fs *flag.FlagSet, args []string, text string, s Streams) (int, bool) {
	fs.SetOutput(s.Err)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), text)
		cliflags.PrintDefaults(fs)
	}
	return cliflags.ParseArgs(ctx, fs, args, s.Out)
}

// stats counts what a run saw. files counts the files read to their end;
// a file that could not be opened or read to its end counts in unreadable
// (records read from it before the error count too).
type stats struct {
	files, records, invalid, problems int
	unreadable                        int
}

// any reports whether there is anything to summarise: with no file read,
// a summary of zeroes would only hide the error above it.
func (st stats) any() bool { return st.files > 0 || st.records > 0 }

// unreadableText ends the summary when some file could not be read, so
// that the counts are not taken for the whole input.
func (st stats) unreadableText() string {
	if st.unreadable == 0 {
		return ""
	}
	return "; " + plural(st.unreadable, "file") + " could not be read to the end"
}

func (st stats) String() string {
	return fmt.Sprintf("%s, %d valid, %d invalid (%s)",
		plural(st.records, "record"), st.records-st.invalid, st.invalid, plural(st.problems, "problem"))
}

func (st stats) code() int {
	switch {
	case st.unreadable > 0:
		return 2
	case st.invalid > 0:
		return 1
	}
	return 0
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// run feeds every record of every file to handle, which reports what is
// wrong with it and says whether it was valid.
func run(ctx context.Context, cmd string, files []string, s Streams, rep *reporter, handle func(record) bool) stats {
	if len(files) == 0 {
		files = []string{"-"}
	}
	var st stats
	for _, name := range files {
		if ctx.Err() != nil {
			rep.w.Flush()
			fmt.Fprintf(s.Err, "govkit event %s: interrupted\n", cmd)
			st.unreadable++
			break
		}
		var in io.Reader = s.In
		var f *os.File
		if name != "-" {
			var err error
			if f, err = os.Open(name); err != nil {
				// What was reported so far comes out first, so that the
				// error stands where it happened.
				rep.w.Flush()
				fmt.Fprintf(s.Err, "govkit event %s: %v\n", cmd, err)
				st.unreadable++
				continue
			}
			in = f
		}
		rep.file = name
		err := eachRecord(ctx, in, &st, rep, handle)
		if f != nil {
			f.Close()
		}
		if err != nil {
			rep.w.Flush()
			fmt.Fprintf(s.Err, "govkit event %s: %s: %v\n", cmd, name, err)
			st.unreadable++
			continue
		}
		st.files++
	}
	st.problems = rep.count
	return st
}

func eachRecord(ctx context.Context, in io.Reader, st *stats, rep *reporter, handle func(record) bool) error {
	rr := newRecordReader(in)
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return errors.New("interrupted")
		}
		rec, err := rr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		st.records++
		if rec.problem != nil {
			rep.problems(rec.line, *rec.problem)
			st.invalid++
			continue
		}
		if !handle(rec) {
			st.invalid++
		}
	}
}

// reporter writes problems as text lines or JSON objects.
type reporter struct {
	w     *bufio.Writer
	json  bool
	file  string
	count int
}

type jsonProblem struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Property string `json:"property"`
	Rule     string `json:"rule"`
	Message  string `json:"message"`
}

func (r *reporter) problems(line int, err error) {
	var ps event.Problems
	var p event.Problem
	switch {
	case errors.As(err, &ps):
	case errors.As(err, &p):
		ps = event.Problems{p}
	default:
		ps = event.Problems{{Property: event.PropertyRecord, Rule: event.RuleJSON, Err: err, Detail: err.Error()}}
	}
	for _, p := range ps {
		r.count++
		if r.json {
			b, _ := json.Marshal(jsonProblem{r.file, line, p.Property, p.Rule.String(), p.Detail})
			r.w.Write(append(b, '\n'))
			continue
		}
		fmt.Fprintf(r.w, "%s:%d: %s\n", r.file, line, oneLine(p.Error()))
	}
}

// oneLine keeps a message on its line whatever the input held.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\n\r") {
		return s
	}
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}
