// Command loadrun is the document platform's load harness: it builds
// govkit, starts `govkit docplatform serve` as a separate process on SQLite
// and on PostgreSQL with the development OpenID provider, signs in through
// that provider over HTTP, and drives the platform with a closed-loop load
// generator from its own process. For each scenario it reports requests
// per second, p50 and p99 latency, errors, and the server's CPU time per
// request read from /proc (the generator's CPU is not counted), next to a
// bare net/http handler run the same way in the same run as the floor.
//
//	go run ./internal/tools/loadrun                       # SQLite (and PostgreSQL when GOVKIT_TEST_POSTGRES_URL is set)
//	go run ./internal/tools/loadrun -c 32 -d 10s -json before.json
//	go run ./internal/tools/loadrun -store postgres -postgres 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable'
//
// It prints a Markdown table for BENCHMARKS.md. It is a tool, not a test:
// `go test ./...` runs only its smoke test, and that only with GOVKIT_LOAD=1.
//
// `loadrun bare-server -listen ADDR` is the floor's server; the harness
// runs itself with it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/govkit/govkit/internal/cliflags"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bare-server" {
		os.Exit(bareServer(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// options are the command's flags.
type options struct {
	conns       int
	duration    time.Duration
	warmup      time.Duration
	maxRequests int // per scenario; 0: time-bounded only
	stores      []string
	postgres    string
	scenarios   []string // ids; empty: all
	docs        int
	uploadBytes int
	govkit      string // prebuilt binary; empty: build one
	jsonOut     string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("go run ./internal/tools/loadrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var stores, scenarios string
	fs.IntVar(&o.conns, "c", 32, "concurrent connections, each a closed loop (one request at a time)")
	fs.DurationVar(&o.duration, "d", 10*time.Second, "measured duration of each scenario")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "load before each measured window (opens the connections, warms caches)")
	fs.IntVar(&o.maxRequests, "requests", 0, "end a scenario's measured window after this many requests (0: after -d only)")
	fs.StringVar(&stores, "store", "", "comma-separated stores: sqlite, postgres (default sqlite, and postgres when a PostgreSQL URL is known)")
	fs.StringVar(&o.postgres, "postgres", os.Getenv("GOVKIT_TEST_POSTGRES_URL"), "administrative PostgreSQL URL; the harness creates its own database there and drops it (default $GOVKIT_TEST_POSTGRES_URL)")
	fs.StringVar(&scenarios, "scenarios", "", "comma-separated scenario ids (default all): "+strings.Join(scenarioIDs(), ", "))
	fs.IntVar(&o.docs, "docs", 1000, "documents seeded in the group before the listing")
	fs.IntVar(&o.uploadBytes, "upload-bytes", 1<<20, "size of the uploaded document")
	fs.StringVar(&o.govkit, "govkit", "", "a govkit binary to run instead of building ./cmd/govkit")
	fs.StringVar(&o.jsonOut, "json", "", "also write the results as JSON to this file (to compare runs)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: go run ./internal/tools/loadrun [flags]")
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args, stdout); !ok {
		return code
	}
	if stores == "" {
		stores = "sqlite"
		if o.postgres != "" {
			stores += ",postgres"
		}
	}
	o.stores = split(stores)
	o.scenarios = split(scenarios)
	if err := o.check(); err != nil {
		fmt.Fprintf(stderr, "loadrun: %v\n", err)
		return 2
	}
	if err := runAll(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "loadrun: %v\n", err)
		return 1
	}
	return 0
}

func (o options) check() error {
	switch {
	case o.conns < 1 || o.conns > 4096:
		return fmt.Errorf("-c must be 1 to 4096, got %d", o.conns)
	case o.duration <= 0:
		return fmt.Errorf("-d must be positive")
	case o.warmup < 0 || o.maxRequests < 0:
		return fmt.Errorf("-warmup and -requests must not be negative")
	case o.docs < 0 || o.docs > 100000:
		return fmt.Errorf("-docs must be 0 to 100000, got %d", o.docs)
	case o.uploadBytes < 1 || o.uploadBytes > 20<<20:
		return fmt.Errorf("-upload-bytes must be 1 to %d (below the platform's 25 MiB limit)", 20<<20)
	}
	for _, s := range o.stores {
		if s != "sqlite" && s != "postgres" {
			return fmt.Errorf("-store: unknown store %q (sqlite, postgres)", s)
		}
		if s == "postgres" && o.postgres == "" {
			return fmt.Errorf("-store postgres needs -postgres URL or GOVKIT_TEST_POSTGRES_URL")
		}
	}
	for _, id := range o.scenarios {
		if !slices.Contains(scenarioIDs(), id) {
			return fmt.Errorf("-scenarios: unknown scenario %q (%s)", id, strings.Join(scenarioIDs(), ", "))
		}
	}
	return nil
}

// runAll builds govkit, runs every store's scenarios and prints the report.
func runAll(ctx context.Context, o options, stdout, stderr io.Writer) error {
	tmp, err := os.MkdirTemp("", "govkit-loadrun-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	rep := report{Commit: commit(root), Started: time.Now().UTC(), LoadStart: loadavg(),
		Connections: o.conns, Seconds: o.duration.Seconds(), Warmup: o.warmup.Seconds(), Docs: o.docs}
	bin := o.govkit
	if bin == "" {
		bin = filepath.Join(tmp, "govkit")
		fmt.Fprintf(stderr, "loadrun: building govkit (%s)\n", rep.Commit)
		if err := build(ctx, root, bin); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, store := range o.stores {
		fmt.Fprintf(stderr, "loadrun: %s: starting the platform (load average %s)\n", store, loadavg())
		rs, err := runStore(ctx, o, store, bin, self, filepath.Join(tmp, store), stderr)
		rep.Results = append(rep.Results, rs...)
		if err != nil {
			if len(rep.Results) > 0 {
				rep.LoadEnd = loadavg()
				fmt.Fprintln(stdout, "\nloadrun: the run stopped; what it measured before:")
				rep.markdown(stdout)
			}
			return fmt.Errorf("%s: %w", store, err)
		}
	}
	rep.LoadEnd = loadavg()
	rep.markdown(stdout)
	if o.jsonOut != "" {
		return rep.writeJSON(o.jsonOut)
	}
	return nil
}

// runStore runs the floor and the platform's scenarios on one store: a
// fresh provider, platform process and database each time.
func runStore(ctx context.Context, o options, store, bin, self, dir string, log io.Writer) ([]result, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var db *pgDatabase
	dbURL := filepath.Join(dir, "docplatform.db")
	if store == "postgres" {
		var err error
		if db, err = createDatabase(ctx, o.postgres); err != nil {
			return nil, err
		}
		defer db.drop()
		dbURL = db.url
	}
	var out []result
	if wanted(o, "bare") {
		r, err := runBare(ctx, o, self, dir, store)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	p, err := startPlatform(ctx, bin, dir, dbURL)
	if err != nil {
		return out, err
	}
	defer p.stop()
	s, err := prepare(ctx, p, o, log)
	if err != nil {
		return out, err
	}
	for _, sc := range platformScenarios(s, o) {
		if !wanted(o, sc.id) {
			continue
		}
		fmt.Fprintf(log, "loadrun: %s: %s\n", store, sc.name)
		r, err := measure(ctx, sc, o, p.child, db)
		r.Store = store
		out = append(out, r)
		if err != nil {
			return out, fmt.Errorf("%s: %w", sc.name, err)
		}
		if p.exited() {
			return out, fmt.Errorf("the platform stopped during %s:\n%s", sc.name, p.tail())
		}
	}
	floor := 0.0
	for _, r := range out {
		if r.ID == "bare" {
			floor = r.CPUPerRequest
		}
	}
	for i := range out {
		if floor > 0 {
			out[i].RatioToBare = out[i].CPUPerRequest / floor
		}
	}
	return out, nil
}

func runBare(ctx context.Context, o options, self, dir, store string) (result, error) {
	addr, err := freeAddr()
	if err != nil {
		return result{}, err
	}
	c, err := startChild("bare-server", filepath.Join(dir, "bare-server.log"), nil, self, "bare-server", "-listen", addr)
	if err != nil {
		return result{}, err
	}
	defer c.stop()
	if err := c.waitReady(ctx, "http://"+addr+"/"); err != nil {
		return result{}, err
	}
	r, err := measure(ctx, bareScenario("http://"+addr+"/"), o, c, nil)
	r.Store = store
	return r, err
}

func wanted(o options, id string) bool {
	return len(o.scenarios) == 0 || slices.Contains(o.scenarios, id)
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
