package testsvc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/redis/go-redis/v9"
)

// Faults a test injects into real parts. The shared PostgreSQL and Redis
// are never stopped (other tests, and other people's, use them): a test
// black-holes or cuts its own TCP proxy in front of them (FaultProxy), or
// starts its own server process and stops or freezes that (OwnRedis,
// OwnS3).

// FaultProxy is a TCP proxy a test puts in front of a server to fail it
// without touching it. It forwards until told otherwise.
type FaultProxy struct {
	Addr   string // host:port to connect to instead of the server
	target string

	mu    sync.Mutex
	ln    net.Listener
	mode  proxyMode
	conns map[net.Conn]bool // every open connection, both sides
	gate  *sync.Cond        // copies wait here while black-holed
	t     testing.TB
}

type proxyMode int

const (
	forwarding proxyMode = iota
	blackholed           // accept and read nothing, answer nothing
	refusing             // accept and reset at once, as a host with nothing on the port
)

// NewFaultProxy listens on a free loopback port and forwards each
// connection to target (host:port). It stops when the test ends.
func NewFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}, t: t}
	p.gate = sync.NewCond(&p.mu)
	go p.serve(ln)
	t.Cleanup(func() {
		p.mu.Lock()
		p.ln.Close()
		p.mode = forwarding
		p.closeAll()
		p.gate.Broadcast()
		p.mu.Unlock()
	})
	return p
}

// URL returns u (a URL of the server) with its host and port replaced by
// the proxy's.
func (p *FaultProxy) URL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		p.t.Fatalf("testsvc: %v", err)
	}
	parsed.Host = p.Addr
	return parsed.String()
}

func (p *FaultProxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.mode == refusing {
			// The port stays ours (closing the listener would free it
			// for anyone's next ephemeral port): each connection is reset.
			p.mu.Unlock()
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			continue
		}
		p.conns[c] = true
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *FaultProxy) forward(client net.Conn) {
	defer p.drop(client)
	p.mu.Lock()
	for p.mode == blackholed {
		p.gate.Wait() // accepted, and never answered
	}
	p.mu.Unlock()
	server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	if !p.conns[client] { // closed while dialling
		p.mu.Unlock()
		server.Close()
		return
	}
	p.conns[server] = true
	p.mu.Unlock()
	defer p.drop(server)
	done := make(chan struct{}, 2)
	go func() { p.copy(server, client); done <- struct{}{} }()
	go func() { p.copy(client, server); done <- struct{}{} }()
	<-done
}

// copy forwards src to dst; while black-holed, what it read is held.
func (p *FaultProxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.mode == blackholed && p.conns[src] {
				p.gate.Wait()
			}
			open := p.conns[src]
			p.mu.Unlock()
			if !open {
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *FaultProxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// closeAll closes every connection; p.mu is held.
func (p *FaultProxy) closeAll() {
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, as from a host that lost the connection
		}
		c.Close()
		delete(p.conns, c)
	}
}

// Blackhole makes the server seem frozen: connections, open and new, are
// kept open and answered nothing, as behind a network that drops packets
// or from a stopped host.
func (p *FaultProxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setMode(blackholed)
}

// Refuse makes the server seem down: open connections are reset, and so
// is each new one as soon as it is accepted (what a client sees of a
// host with nothing listening, but for the error's name).
func (p *FaultProxy) Refuse() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setMode(refusing)
}

// Restore forwards again. Connections held by a black hole are reset (as
// after a network that dropped them for long), so clients reconnect.
func (p *FaultProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setMode(forwarding)
}

// setMode moves to m; p.mu is held.
func (p *FaultProxy) setMode(m proxyMode) {
	if p.mode == m {
		return
	}
	from := p.mode
	p.mode = m
	if m == refusing || from == blackholed {
		p.closeAll()
	}
	p.gate.Broadcast()
}

// Process is a server process a test started and may stop, freeze,
// thaw and start again on the same port and data. It is killed when the
// test ends.
type Process struct {
	t    testing.TB
	name string
	args []string
	env  []string // added to the test's environment
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func startProcess(t testing.TB, ready func() error, name string, args ...string) *Process {
	t.Helper()
	return startProcessEnv(t, ready, nil, name, args...)
}

func startProcessEnv(t testing.TB, ready func() error, env []string, name string, args ...string) *Process {
	t.Helper()
	p := &Process{t: t, name: name, args: args, env: env}
	p.Start(ready)
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.cmd != nil {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// Start starts the process (again) and waits until ready says it answers.
func (p *Process) Start(ready func() error) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.t.Fatalf("testsvc: %s is already running", p.name)
	}
	cmd := exec.Command(p.name, p.args...)
	if p.env != nil {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out := &limitedBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := startOnLockedThread(cmd); err != nil {
		p.t.Fatalf("testsvc: start %s: %v", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	done := p.done
	go func() { cmd.Wait(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ready()
		if err == nil {
			return
		}
		select {
		case <-done:
			p.cmd = nil
			p.t.Fatalf("testsvc: %s exited at start: %s", p.name, out.String())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("testsvc: %s does not answer: %v; output: %s", p.name, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends the process with SIGTERM (SIGKILL after 10 s) and waits.
func (p *Process) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

// Kill ends the process with SIGKILL and waits.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	<-p.done
	p.cmd = nil
}

// Pause freezes the process (SIGSTOP): it keeps its port, and the kernel
// keeps accepting connections for it, but it answers nothing.
func (p *Process) Pause() { p.signal(syscall.SIGSTOP) }

// Resume thaws a paused process (SIGCONT).
func (p *Process) Resume() { p.signal(syscall.SIGCONT) }

func (p *Process) signal(s syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		p.t.Fatalf("testsvc: %s is not running", p.name)
	}
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Fatalf("testsvc: signal %s: %v", p.name, err)
	}
}

// OwnedRedis is a redis-server of the test's own.
type OwnedRedis struct {
	*Process
	Addr  string
	ready func() error
}

// Start starts it again on the same port: with no data (OwnRedis), or
// with what its append-only file kept (OwnRedisAOF).
func (r *OwnedRedis) Start() { r.Process.Start(r.ready) }

// OwnRedis starts a redis-server of the test's own on a free loopback
// port, without persistence, for tests that stop or freeze it (the shared
// one is never touched). It skips like RequireRedis when Redis is not
// configured for tests, and fails when redis-server is missing.
func OwnRedis(t testing.TB) *OwnedRedis {
	t.Helper()
	return ownRedis(t, "--appendonly", "no")
}

// OwnRedisAOF is OwnRedis with an append-only file (appendonly yes,
// appendfsync everysec, as production sets it): stopped (SIGTERM) and
// started again, it comes back with every write it answered; killed, it
// may lose the last second's.
func OwnRedisAOF(t testing.TB) *OwnedRedis {
	t.Helper()
	return ownRedis(t, "--appendonly", "yes", "--appendfsync", "everysec")
}

func ownRedis(t testing.TB, persistence ...string) *OwnedRedis {
	t.Helper()
	RequireRedis(t) // the same condition as every Redis test
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("testsvc: redis-server not found (install the redis-server package): %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	r := &OwnedRedis{Addr: addr}
	r.ready = func() error {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Ping(ctx).Err()
	}
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--dir", t.TempDir()}, persistence...)
	r.Process = startProcess(t, r.ready, bin, args...)
	return r
}

// OwnedS3 is a versitygw of the test's own, with one bucket.
type OwnedS3 struct {
	*Process
	S3
	ready func() error
}

// Start starts it again on the same port and directory: the bucket and
// the objects are still there.
func (s *OwnedS3) Start() { s.Process.Start(s.ready) }

// OwnS3 starts a versitygw of the test's own (the binary RequireS3 would
// use) on a free loopback port over a fresh directory, and creates a
// bucket, for tests that stop or freeze the store.
func OwnS3(t testing.TB) *OwnedS3 {
	t.Helper()
	bin := os.Getenv(EnvS3)
	if bin == "" {
		bin = S3ServerPath()
	}
	if _, err := os.Stat(bin); err != nil {
		missing(t, "versitygw not found: set %s to a versitygw binary (.ci/install-deps builds versitygw %s into %s)", EnvS3, S3ServerVersion, S3ServerPath())
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &OwnedS3{S3: S3{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), Region: "us-east-1",
		AccessKeyID: "govkit" + randomHex(4), SecretAccessKey: randomHex(16), Bucket: "govkit-own-" + randomHex(6)}}
	s.ready = func() error {
		resp, err := (&net.Dialer{Timeout: time.Second}).Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return err
		}
		resp.Close()
		return nil
	}
	s.Process = startProcess(t, s.ready, bin, "--access", s.AccessKeyID, "--secret", s.SecretAccessKey,
		"--region", s.Region, "--port", "127.0.0.1:"+strconv.Itoa(port), "--quiet", "posix", t.TempDir())
	client, err := minio.New("127.0.0.1:"+strconv.Itoa(port), &minio.Options{
		Creds: credentials.NewStaticV4(s.AccessKeyID, s.SecretAccessKey, ""), Region: s.Region, BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Client = client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatalf("testsvc: create bucket: %v", err)
	}
	return s
}

// limitedBuffer keeps the first max bytes a process writes.
type limitedBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// envFerretDBChild carries the PostgreSQL URL and the address of a
// FerretDB server process OwnFerretDB starts (the test binary run again).
const envFerretDBChild = "GOVKIT_TEST_FERRETDB_CHILD"

// ServeFerretDBChild must be called first thing in the TestMain of a
// package that uses OwnFerretDB: in the process OwnFerretDB started, it
// runs FerretDB until killed and never returns; elsewhere it does nothing.
func ServeFerretDBChild() {
	v := os.Getenv(envFerretDBChild)
	if v == "" {
		return
	}
	addr, pg, _ := strings.Cut(v, " ")
	f, err := ferretdb.New(&ferretdb.Config{
		Listener: ferretdb.ListenerConfig{TCP: addr}, Handler: "postgresql", PostgreSQLURL: pg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsvc: FerretDB:", err)
		os.Exit(1)
	}
	if err := f.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "testsvc: FerretDB:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// OwnedFerretDB is a FerretDB server process of the test's own.
type OwnedFerretDB struct {
	*Process
	URI   string // mongodb://127.0.0.1:port/ (no database)
	ready func() error
}

// Start starts it again on the same port and database.
func (f *OwnedFerretDB) Start() { f.Process.Start(f.ready) }

// OwnFerretDB starts FerretDB (the pinned v1) as a process of its own —
// the test binary run again; its TestMain must call ServeFerretDBChild —
// on a free loopback port and a fresh PostgreSQL database of this test,
// for tests that stop, kill or freeze the store (RequireFerretDB's runs
// in the test's process, which a signal cannot freeze alone).
func OwnFerretDB(t testing.TB) *OwnedFerretDB {
	t.Helper()
	pg := RequirePostgres(t)
	indexIDs(t, pg)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	f := &OwnedFerretDB{URI: "mongodb://" + addr + "/"}
	f.ready = func() error {
		c, err := (&net.Dialer{Timeout: time.Second}).Dial("tcp", addr)
		if err != nil {
			return err
		}
		c.Close()
		return nil
	}
	f.Process = startProcessEnv(t, f.ready, []string{envFerretDBChild + "=" + addr + " " + pg}, os.Args[0], "-test.run=^$")
	return f
}
