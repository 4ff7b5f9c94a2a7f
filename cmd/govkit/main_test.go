package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func runCapture(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(context.Background(), args, stdio{strings.NewReader(""), &out, &errb})
	return code, out.String(), errb.String()
}

func TestDispatch(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // substring of stdout
		wantErr  string // substring of stderr
	}{
		{"no arguments print usage and exit 2", nil, 2, "", "Usage: govkit"},
		{"unknown command is named, with a hint", []string{"frobnicate"}, 2, "", "govkit: unknown command \"frobnicate\"\nrun 'govkit help'\n"},
		{"help lists every command", []string{"help"}, 0, "docplatform", ""},
		{"-h prints usage on stdout", []string{"-h"}, 0, "Usage: govkit", ""},
		{"version prints the version and revision", []string{"version"}, 0, "(revision ", ""},
		{"version takes no arguments", []string{"version", "x"}, 2, "", "govkit version: unexpected argument \"x\"\n"},
		{"help version is help", []string{"help", "version"}, 0, "Usage: govkit version", ""},
		{"version -h is help", []string{"version", "-h"}, 0, "Usage: govkit version", ""},
		{"version names a bad flag", []string{"version", "--x"}, 2, "", "govkit version: unknown flag --x\nrun 'govkit help version'\n"},
		{"help help is help", []string{"help", "help"}, 0, "Usage: govkit help", ""},
		{"help of a subcommand", []string{"help", "notify", "serve"}, 0, "Usage: govkit notify serve", ""},
		{"unknown subcommand of a part exits 2", []string{"notify", "frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"a part without a subcommand names its commands and exits 2", []string{"event"}, 2, "", "govkit event: which command? to-date, validate\nrun 'govkit help event'\n"},
		{"dev names an unknown flag", []string{"dev", "--bogus"}, 2, "", "govkit dev: unknown flag --bogus\nrun 'govkit help dev'\n"},
		{"dev names a stray argument", []string{"dev", "extra-arg"}, 2, "", "govkit dev: unexpected argument \"extra-arg\"\nrun 'govkit help dev'\n"},
		{"dev's token lifetime is a Go duration", []string{"dev", "--token-lifetime", "soon"}, 2, "", "govkit dev: invalid value \"soon\" for --token-lifetime"},
		{"dev's token lifetime is at least a second", []string{"dev", "--token-lifetime", "500ms"}, 2, "", "govkit dev: --token-lifetime must be at least 1s\nrun 'govkit help dev'\n"},
		{"dev -h names every port flag, on stdout", []string{"dev", "-h"}, 0, "--smtp-port", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCapture(tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout %q lacks %q", out, tt.wantOut)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tt.wantErr)
			}
		})
	}
}

// freePorts are the port flags of every listener of `govkit dev` set to
// 0, so that tests never take the fixed default ports.
func freePorts() []string {
	var args []string
	for _, l := range devListeners {
		args = append(args, "--"+l.flag, "0")
	}
	return args
}

func TestDevSaysWhatItStartedAndStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stop as soon as everything has started
	var out, errb bytes.Buffer
	code := run(ctx, append([]string{"dev", "--data-dir", t.TempDir()}, freePorts()...), stdio{strings.NewReader(""), &out, &errb})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"document platform", "notification service", "Try first:", "sign in as alice", "/api/docs",
		"/api/explorer", "Sign in as someone else", "isBroadcast", "/mail/", "demo API key", "demo-road-closures", "stopping"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dev output lacks %q:\n%s", want, out.String())
		}
	}
	// dev is one process: a warning about replicas is noise there.
	if all := out.String() + errb.String(); strings.Contains(all, "REDIS_URL") || strings.Contains(all, "replicas") {
		t.Errorf("dev warns about replicas:\n%s", all)
	}
}

// A taken port is replaced by a free one, and the warning names the flag
// that moves it and the port used instead.
func TestDevAnnouncesATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	for _, l := range devListeners {
		t.Run(l.flag, func(t *testing.T) {
			var warn bytes.Buffer
			p, _ := strconv.Atoi(port)
			ln, err := devListen("127.0.0.1", l, p, 0, &warn)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			_, got, _ := net.SplitHostPort(ln.Addr().String())
			if got == port {
				t.Fatalf("listened on the taken port %s", port)
			}
			want := "govkit dev: warning: port " + port + " for " + l.what + " is taken (bind: address already in use); using port " + got + " instead. Choose another with --" + l.flag + ".\n"
			if warn.String() != want {
				t.Errorf("warning\n%q\nwant\n%q", warn.String(), want)
			}
		})
	}
	t.Run("through govkit dev", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out, errb bytes.Buffer
		args := append([]string{"dev", "--no-demo", "--data-dir", t.TempDir()}, freePorts()...)
		args = append(args, "--notify-port", port)
		if code := run(ctx, args, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if !strings.Contains(errb.String(), "port "+port+" for the notification service is taken") || !strings.Contains(errb.String(), "--notify-port") {
			t.Errorf("stderr does not announce the taken port:\n%s", errb.String())
		}
		if strings.Contains(out.String(), "127.0.0.1:"+port+"/api") {
			t.Errorf("the overview prints the taken port:\n%s", out.String())
		}
	})
}

// A port that is free is used as given, without a warning.
func TestDevUsesTheGivenPort(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(probe.Addr().String())
	probe.Close()
	p, _ := strconv.Atoi(port)
	var warn bytes.Buffer
	ln, err := devListen("127.0.0.1", devListeners[0], p, 0, &warn)
	if err != nil {
		t.Skipf("port %s was taken again in between: %v", port, err)
	}
	defer ln.Close()
	if _, got, _ := net.SplitHostPort(ln.Addr().String()); got != port || warn.Len() != 0 {
		t.Errorf("listened on %s with warning %q, want %s and none", got, warn.String(), port)
	}
}

// When a default port is taken, the port used instead is remembered in the
// data directory and tried first on the next start (the caught mail's
// links and open tabs keep working), which says so; when that one is taken
// too, a free one is found again. A port given with its flag is used as
// given, and leaves what is remembered alone.
func TestDevKeepsTheChosenPortsOfADataDirectory(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	defaultPort := taken.Addr().(*net.TCPAddr).Port
	// The notification service's default is a port this test holds, so
	// that the default is taken whatever else runs on this machine.
	i := slices.IndexFunc(devListeners, func(l devListener) bool { return l.flag == "notify-port" })
	saved := devListeners[i].port
	devListeners[i].port = defaultPort
	t.Cleanup(func() { devListeners[i].port = saved })

	dataDir := t.TempDir()
	start := func(extra ...string) (stdout, stderr string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var out, errb bytes.Buffer
		var args []string
		for _, l := range devListeners {
			if l.flag != "notify-port" {
				args = append(args, "--"+l.flag, "0")
			}
		}
		args = append(append([]string{"dev", "--no-demo", "--data-dir", dataDir}, args...), extra...)
		if code := run(ctx, args, stdio{strings.NewReader(""), &out, &errb}); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String(), errb.String()
	}
	usedPort := func(stderr string) string {
		t.Helper()
		m := regexp.MustCompile(`using port (\d+) instead`).FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("no port chosen instead of the taken %d:\n%s", defaultPort, stderr)
		}
		return m[1]
	}
	def := strconv.Itoa(defaultPort)

	_, errOut := start()
	first := usedPort(errOut)

	out, errOut := start()
	want := "govkit dev: port " + first + " for the notification service, as on the last start with this data directory (port " + def + " was taken then). Choose another with --notify-port.\n"
	if !strings.Contains(errOut, want) || strings.Contains(errOut, "is taken") {
		t.Errorf("second start does not say it keeps port %s:\n%s", first, errOut)
	}
	if !strings.Contains(out, "127.0.0.1:"+first+"/") {
		t.Errorf("second start does not serve on %s:\n%s", first, out)
	}

	// Given with its flag, a port is used as given; the memory stays.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	given := strconv.Itoa(probe.Addr().(*net.TCPAddr).Port)
	probe.Close()
	if out, errOut := start("--notify-port", given); strings.Contains(errOut, "as on the last start") || !strings.Contains(out, "127.0.0.1:"+given+"/") {
		t.Errorf("--notify-port %s was not used as given:\n%s\n%s", given, out, errOut)
	}
	if _, errOut := start(); !strings.Contains(errOut, want) {
		t.Errorf("a start with --notify-port made dev forget port %s:\n%s", first, errOut)
	}

	// The remembered port taken too: a free one again, remembered next.
	hold, err := net.Listen("tcp", "127.0.0.1:"+first)
	if err != nil {
		t.Fatalf("the remembered port %s: %v", first, err)
	}
	_, errOut = start()
	second := usedPort(errOut)
	hold.Close()
	if second == first {
		t.Fatalf("used the remembered port %s although it was held", first)
	}
	if _, errOut = start(); !strings.Contains(errOut, "govkit dev: port "+second+" for the notification service, as on the last start") {
		t.Errorf("the port chosen last (%s) is not the one tried first:\n%s", second, errOut)
	}

	// The remembered port taken and the default free again: the default,
	// and nothing is remembered any more.
	taken.Close()
	hold, err = net.Listen("tcp", "127.0.0.1:"+second)
	if err != nil {
		t.Fatalf("the remembered port %s: %v", second, err)
	}
	out, errOut = start()
	hold.Close()
	if strings.Contains(errOut, "is taken") || strings.Contains(errOut, "as on the last start") || !strings.Contains(out, "127.0.0.1:"+def+"/") {
		t.Errorf("the free default %s was not used:\n%s\n%s", def, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dataDir, devPortsFile)); !os.IsNotExist(err) {
		t.Errorf("%s outlives a start on the default ports: %v", devPortsFile, err)
	}
}
