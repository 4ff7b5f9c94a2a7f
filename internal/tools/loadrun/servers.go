package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/govkit/govkit/docplatform/devidp"
)

// relaxedLimit is every THROTTLE_*_LIMIT of the platform under load: high
// enough that no scenario is throttled, while the memory counters still
// run on every request as they do in production.
const relaxedLimit = "1000000000"

// clientID is the platform's client at the development provider.
const clientID = "govkit-docplatform"

// A child is a process the harness started: in its own process group (so a
// Ctrl-C at the terminal reaches the harness, which stops it in order) and
// killed by the kernel should the harness die first. Its stdout and stderr
// go to a log file, whose tail is shown when it fails.
type child struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func startChild(name, logPath string, env []string, bin string, args ...string) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); close(c.done) }()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop asks the process to end (SIGTERM: a graceful shutdown), then kills
// it after 10 s.
func (c *child) stop() {
	if c.exited() {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}

// tail is the end of the process's log, for error messages.
func (c *child) tail() string {
	b, _ := os.ReadFile(c.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return fmt.Sprintf("--- last lines of %s (%s) ---\n%s", c.name, c.log, strings.Join(lines, "\n"))
}

// waitReady polls url until it answers 200, the process exits, or a
// minute passes (a loaded machine starts slowly).
func (c *child) waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(time.Minute)
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited before answering %s (%v)\n%s", c.name, url, c.cmd.ProcessState, c.tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer %s within a minute\n%s", c.name, url, c.tail())
		}
	}
}

// platform is `govkit docplatform serve` with its development provider.
type platform struct {
	*child
	base     string // http://127.0.0.1:port
	bin, dir string
	env      []string
	idp      *devidp.Server
}

// startPlatform starts the development provider in this process (it only
// serves the sign-ins, before the measured windows) and the platform as a
// child process on databaseURL, and waits until it answers /api/health.
func startPlatform(ctx context.Context, bin, dir, databaseURL string) (*platform, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	base := "http://" + addr
	secret, clientSecret := randomHex(32), randomHex(32)
	idp, err := devidp.Start(ctx, "127.0.0.1:0", devidp.Config{
		Clients: []devidp.Client{{ID: clientID, Secret: clientSecret,
			RedirectURIs: []string{base + "/api/auth/callback"}, PostLogoutRedirectURIs: []string{base}}},
		// Tokens outlive any run, so none expires mid-measurement.
		AccessTokenLifetime: 24 * time.Hour,
		Logger:              discardLogger(),
	})
	if err != nil {
		return nil, err
	}
	env := []string{
		"SSO_AUTH_SERVER_URL=" + idp.URL, "SSO_REALM=" + idp.Realm,
		"SSO_CLIENT_ID=" + clientID, "SSO_CLIENT_SECRET=" + clientSecret,
		"SSO_REDIRECT_URI=" + base + "/api/auth/callback", "FRONTEND_URL=" + base,
		// development: cookies without Secure, so they travel over http.
		"NODE_ENV=development", "COOKIE_SECRET=" + secret, "DATABASE_URL=" + databaseURL,
		"THROTTLE_GLOBAL_LIMIT=" + relaxedLimit, "THROTTLE_AUTH_LIMIT=" + relaxedLimit,
		"THROTTLE_AUTH_REFRESH_LIMIT=" + relaxedLimit,
	}
	// Nothing else from the harness's environment (a REDIS_URL would
	// change what is measured), but the Go runtime's own settings.
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOMAXPROCS", "GOGC", "GOMEMLIMIT", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	c, err := startChild("govkit docplatform serve", filepath.Join(dir, "platform.log"), env,
		bin, "docplatform", "serve", "--data-dir", dir, "--listen", addr)
	if err != nil {
		idp.Close()
		return nil, err
	}
	p := &platform{child: c, base: base, bin: bin, dir: dir, env: env, idp: idp}
	if err := c.waitReady(ctx, base+"/api/health"); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *platform) stop() {
	p.child.stop()
	p.idp.Close()
}

// grantAdmin makes a signed-in user system admin the way an operator does:
// `govkit docplatform grant-admin` on the platform's database.
func (p *platform) grantAdmin(ctx context.Context, email string) error {
	cmd := exec.CommandContext(ctx, p.bin, "docplatform", "grant-admin", "--email", email, "--data-dir", p.dir)
	cmd.Env = p.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("govkit docplatform grant-admin: %v: %s", err, out)
	}
	return nil
}

// bareServer is `loadrun bare-server`: the floor, a net/http handler
// answering 200 with a small JSON body, with the standard library's
// defaults.
func bareServer(args []string) int {
	fs := flag.NewFlagSet("loadrun bare-server", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	body := []byte(`{"status":"ok"}` + "\n")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	if err := http.ListenAndServe(*listen, h); err != nil {
		fmt.Fprintln(os.Stderr, "loadrun bare-server:", err)
		return 1
	}
	return 0
}

// freeAddr is a loopback address with a port the kernel just handed out.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// pgDatabase is the harness's own database on the PostgreSQL server.
type pgDatabase struct {
	admin, name, url string
}

func createDatabase(ctx context.Context, admin string) (*pgDatabase, error) {
	u, err := url.Parse(admin)
	if err != nil {
		return nil, fmt.Errorf("-postgres: %w", err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	name := "govkit_load_" + randomHex(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("PostgreSQL: create database %s: %w", name, err)
	}
	u.Path = "/" + name
	return &pgDatabase{admin: admin, name: name, url: u.String()}, nil
}

func (d *pgDatabase) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.admin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loadrun: drop database %s: %v\n", d.name, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+d.name+" WITH (FORCE)"); err != nil {
		fmt.Fprintf(os.Stderr, "loadrun: drop database %s: %v\n", d.name, err)
	}
}

// backendCPU is the CPU time of each PostgreSQL backend serving the
// harness's database, by pid, read from /proc (the server runs on this
// machine). Nil when it cannot be read.
func (d *pgDatabase) backendCPU(ctx context.Context) map[int]time.Duration {
	conn, err := pgx.Connect(ctx, d.admin)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", d.name)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := map[int]time.Duration{}
	for _, pid := range pids {
		if t, err := processCPU(int(pid)); err == nil {
			out[int(pid)] = t
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// clockTicks is sysconf(_SC_CLK_TCK), the unit of /proc/<pid>/stat's
// times: USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// processCPU is the user plus system CPU time a process has used.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// fields 14 and 15 (utime, stime) follow its closing one.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("malformed /proc stat")
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed /proc stat")
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// processRSS is a process's resident set in KiB (VmRSS).
func processRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// loadavg is the machine's 1, 5 and 15 minute load averages, as uptime
// shows them.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// moduleRoot is the directory of the go.mod of the module the harness is
// run in (the repository).
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run loadrun inside the govkit module (go run ./internal/tools/loadrun)")
	}
	return filepath.Dir(mod), nil
}

// build builds ./cmd/govkit once into bin.
func build(ctx context.Context, root, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/govkit")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/govkit: %v\n%s", err, out)
	}
	return nil
}

// commit names the code measured: the short commit, +dirty when the work
// tree has changes.
func commit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+dirty"
	}
	return c
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
