package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/internal/cliflags"
	"github.com/govkit/govkit/internal/devlog"
	"github.com/govkit/govkit/notify/httpapi"
)

// devOptions are the settings every part started by `govkit dev` shares.
type devOptions struct {
	dataDir string // everything the embedded defaults keep on disk
	host    string // interface to listen on; loopback by default
	// tokenLifetime is the development OpenID provider's access-token
	// lifetime (the document platform's sessions refresh at 75 % of it).
	tokenLifetime time.Duration
	noDemo        bool // do not seed the demo world on a fresh data directory
	// listeners are the ports of devListeners, opened, by flag name.
	listeners map[string]net.Listener
	logs      *devlog.Output // every part logs here, one line per request
	// shared carries what a part hands to the parts started after it.
	shared *devShared
}

// devShared is what parts learn from each other while they start.
type devShared struct {
	// consoleOIDC is the development provider as the notification
	// console's OIDC sign-in uses it, set by the document platform's part
	// (which runs the provider); nil when that part did not start.
	consoleOIDC *httpapi.DevOIDC
}

// A devListener is one port `govkit dev` listens on: a stable default, a
// flag to move it, and what it is for. `govkit dev` opens them all before
// starting the parts, so that a taken port is announced with the flag
// that moves it; a part takes its listeners from devOptions.listeners by
// flag name. Adding a listener is a line here and a line in its part.
type devListener struct {
	flag string
	port int
	what string
}

var devListeners = []devListener{
	{"platform-port", 3002, "the document platform"},
	{"provider-port", 8081, "the development OpenID provider"},
	{"notify-port", 3000, "the notification service"},
	{"smtp-port", 1025, "the mail catcher's SMTP server"},
	{"inbound-smtp-port", 2525, "the notification service's inbound SMTP server (list-unsubscribe and bounce mail)"},
}

// A devPart is one service that `govkit dev` runs. start returns once the
// part is serving, after printing its URLs and demo logins to w, with the
// lines of "Try first" it suggests; the returned stop shuts it down
// gracefully within the context's deadline.
type devPart struct {
	name  string
	start func(ctx context.Context, opts devOptions, w io.Writer) (devRunning, error)
}

// devRunning is a started part.
type devRunning struct {
	stop     func(context.Context) error
	tryFirst []string
}

// errPartNotBuilt is returned by a part whose code is not in this build yet,
// so that dev can say plainly what it did not start.
var errPartNotBuilt = errors.New("not part of this build yet")

func devParts() []devPart {
	return []devPart{
		{"document platform", startDocplatformDev},
		{"notification service", startNotifyDev},
	}
}

const devUsage = `Usage: govkit dev [flags]

Runs every part of govkit on embedded defaults until interrupted (Ctrl-C):
the document platform on SQLite with a development OpenID provider, and
the notification service with an embedded document store and a mail
catcher. Everything is kept in --data-dir; the first start of a fresh data
directory seeds a demo world (--no-demo skips it). Every part logs one line
per request to stdout.

Each listener has a stable default port; a taken one is replaced by a free
port and a warning names the flag that moves it. The data directory
remembers the port used instead, and the next start tries it first (the
caught mail's links and open tabs keep working).

Flags:
`

func runDev(ctx context.Context, args []string, io stdio) int {
	fs := flag.NewFlagSet("govkit dev", flag.ContinueOnError)
	fs.SetOutput(io.err)
	var o devOptions
	fs.StringVar(&o.dataDir, "data-dir", "./data", "directory for everything the embedded defaults keep on disk (databases, keys, logins, caught mail)")
	fs.StringVar(&o.host, "host", "127.0.0.1", "interface to listen on")
	fs.DurationVar(&o.tokenLifetime, "token-lifetime", 5*time.Minute, "access-token lifetime of the development OpenID provider (a Go duration: 30s, 80s, 5m)")
	fs.BoolVar(&o.noDemo, "no-demo", false, "do not seed the demo world on the first start of a data directory")
	ports := map[string]*int{}
	for _, l := range devListeners {
		ports[l.flag] = fs.Int(l.flag, l.port, "port of "+l.what+" (0: any free port)")
	}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), devUsage)
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args, io.out); !ok {
		return code
	}
	if o.tokenLifetime < time.Second {
		return cliflags.Usagef(fs, "--token-lifetime must be at least 1s")
	}
	if err := os.MkdirAll(o.dataDir, 0o700); err != nil {
		fmt.Fprintf(io.err, "govkit dev: %v\n", err)
		return 2
	}
	o.shared = &devShared{}
	o.listeners = map[string]net.Listener{}
	// Only a default port is replaced by the one remembered: a port given
	// with its flag is what the person asked for now.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	chosen := loadChosenPorts(o.dataDir)
	for _, l := range devListeners {
		asked := *ports[l.flag]
		remembered := 0
		if c, ok := chosen[l.flag]; ok && c.Asked == asked && !given[l.flag] {
			remembered = c.Used
		}
		ln, err := devListen(o.host, l, asked, remembered, io.err)
		if err != nil {
			closeListeners(o.listeners)
			fmt.Fprintf(io.err, "govkit dev: %s (--%s): %v\n", l.what, l.flag, err)
			return 2
		}
		o.listeners[l.flag] = ln
		switch used := listenerPort(ln); {
		case given[l.flag]: // kept for the starts without the flag
		case used != asked:
			chosen[l.flag] = chosenPort{Asked: asked, Used: used}
		default:
			delete(chosen, l.flag)
		}
	}
	if err := saveChosenPorts(o.dataDir, chosen); err != nil {
		fmt.Fprintf(io.err, "govkit dev: warning: cannot remember the ports chosen: %v\n", err)
	}
	color := false
	if f, ok := io.out.(*os.File); ok {
		color = devlog.IsTerminal(f)
	}
	// Until the parts have started and the overview is printed, only
	// warnings are logged: the overview is what a newcomer reads first.
	var level slog.LevelVar
	level.Set(slog.LevelWarn)
	o.logs = devlog.New(io.out, color, &level)

	fmt.Fprintf(io.out, "govkit dev: data in %s\n\n", o.dataDir)
	var stops []func(context.Context) error
	var tryFirst []string
	started := 0
	for _, p := range devParts() {
		r, err := p.start(ctx, o, io.out)
		switch {
		case errors.Is(err, errPartNotBuilt):
			fmt.Fprintf(io.out, "%s: not started (%v)\n", p.name, err)
		case err != nil:
			fmt.Fprintf(io.err, "govkit dev: %s: %v\n", p.name, err)
			shutdown(stops)
			closeListeners(o.listeners)
			return 1
		default:
			started++
			stops = append(stops, r.stop)
			tryFirst = append(tryFirst, r.tryFirst...)
		}
	}
	if len(tryFirst) > 0 {
		fmt.Fprintln(io.out, "\nTry first:")
		for i, line := range tryFirst {
			fmt.Fprintf(io.out, "  %d. %s\n", i+1, strings.ReplaceAll(line, "\n", "\n     "))
		}
	}
	fmt.Fprintf(io.out, "\ngovkit dev: %d part(s) running; the event CLI is `govkit event`. Logs follow, one line per request. Press Ctrl-C to stop.\n\n", started)
	level.Set(slog.LevelInfo)
	<-ctx.Done()
	fmt.Fprintln(io.out, "govkit dev: stopping")
	shutdown(stops)
	return 0
}

// devListen listens on the listener's port, or on a free one when that is
// taken, with a warning that names the flag. remembered, when not 0, is
// the port used instead on the last start with this data directory, tried
// first: the caught mail's links, the console's sign-in redirects and the
// tabs left open keep working across restarts while the port stays taken.
func devListen(host string, l devListener, port, remembered int, warn io.Writer) (net.Listener, error) {
	if remembered != 0 && remembered != port {
		if ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(remembered))); err == nil {
			fmt.Fprintf(warn, "govkit dev: port %d for %s, as on the last start with this data directory (port %d was taken then). Choose another with --%s.\n",
				remembered, l.what, port, l.flag)
			return ln, nil
		}
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err == nil || port == 0 {
		return ln, err
	}
	ln, ferr := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if ferr != nil {
		return nil, err
	}
	_, free, _ := net.SplitHostPort(ln.Addr().String())
	fmt.Fprintf(warn, "govkit dev: warning: port %d for %s is taken (%v); using port %s instead. Choose another with --%s.\n",
		port, l.what, unwrapListenError(err), free, l.flag)
	return ln, nil
}

func listenerPort(ln net.Listener) int {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return 0
}

// devPortsFile, in the data directory, remembers the ports `govkit dev`
// used instead of taken ones, so that the next start tries them first.
const devPortsFile = "dev-ports.json"

// chosenPort is a port used instead of the one asked for (a flag's
// default, or its value): remembered only while the same one is asked.
type chosenPort struct {
	Asked int `json:"asked"`
	Used  int `json:"used"`
}

func loadChosenPorts(dataDir string) map[string]chosenPort {
	m := map[string]chosenPort{}
	b, err := os.ReadFile(filepath.Join(dataDir, devPortsFile))
	if err == nil {
		// A file that does not parse is forgotten: it only holds hints.
		_ = json.Unmarshal(b, &m)
	}
	return m
}

func saveChosenPorts(dataDir string, m map[string]chosenPort) error {
	path := filepath.Join(dataDir, devPortsFile)
	if len(m) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// unwrapListenError keeps the system's reason ("address already in use")
// without the repeated address.
func unwrapListenError(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

func closeListeners(ls map[string]net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}

// shutdown stops the parts in reverse order of starting, giving them a
// bounded time to finish in-flight work.
func shutdown(stops []func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i := len(stops) - 1; i >= 0; i-- {
		_ = stops[i](ctx)
	}
}

// logger returns the logger of one part of `govkit dev`.
func (o devOptions) logger(part string) *slog.Logger { return o.logs.Logger(part) }
