package cliflags

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"testing"
)

func TestParse(t *testing.T) {
	hint := "run 'govkit help cmd'\n"
	for _, c := range []struct {
		name           string
		args           []string
		code           int
		ok             bool
		stdout, stderr string
	}{
		{"flags parse", []string{"-n", "3", "--data-dir", "d"}, 0, true, "", ""},
		{"-h prints the usage on stdout", []string{"-h"}, 0, false, "Usage: govkit cmd\n  --data-dir string\n    \tdata (default \"./data\")\n  --n int\n    \ta number\n", ""},
		{"--help too", []string{"--help"}, 0, false, "Usage: govkit cmd\n  --data-dir string\n    \tdata (default \"./data\")\n  --n int\n    \ta number\n", ""},
		{"an unknown flag is named", []string{"--nope"}, 2, false, "", "govkit cmd: unknown flag --nope\n" + hint},
		{"a flag without its value", []string{"--data-dir"}, 2, false, "", "govkit cmd: --data-dir needs a value\n" + hint},
		{"a bad value", []string{"-n", "x"}, 2, false, "", "govkit cmd: invalid value \"x\" for --n: parse error\n" + hint},
		{"a stray argument is named", []string{"-n", "3", "stray"}, 2, false, "", "govkit cmd: unexpected argument \"stray\"\n" + hint},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			fs := flag.NewFlagSet("govkit cmd", flag.ContinueOnError)
			fs.SetOutput(&errb)
			n := fs.Int("n", 0, "a number")
			fs.String("data-dir", "./data", "data")
			fs.Usage = func() {
				fmt.Fprintln(fs.Output(), "Usage: govkit cmd")
				PrintDefaults(fs)
			}
			code, ok := Parse(context.Background(), fs, c.args, &out)
			if code != c.code || ok != c.ok {
				t.Errorf("(%d, %v), want (%d, %v)", code, ok, c.code, c.ok)
			}
			if c.ok && *n != 3 {
				t.Errorf("-n = %d", *n)
			}
			if out.String() != c.stdout || errb.String() != c.stderr {
				t.Errorf("stdout %q stderr %q, want %q and %q", out.String(), errb.String(), c.stdout, c.stderr)
			}
		})
	}
}

func TestParseOnlyHandsOverTheFlagsAndEnds(t *testing.T) {
	var got *flag.FlagSet
	ctx := ParseOnly(context.Background(), func(fs *flag.FlagSet) { got = fs })
	fs := flag.NewFlagSet("govkit cmd", flag.ContinueOnError)
	fs.Int("n", 0, "a number")
	code, ok := Parse(ctx, fs, []string{"-n", "3"}, &bytes.Buffer{})
	if code != 0 || ok || got != fs || fs.Lookup("n").Value.String() != "3" {
		t.Errorf("(%d, %v), flag set handed over %v", code, ok, got == fs)
	}
}

func TestHint(t *testing.T) {
	for name, want := range map[string]string{
		"govkit":               "run 'govkit help'",
		"govkit notify serve":  "run 'govkit help notify serve'",
		"go run ./tools/thing": "run 'go run ./tools/thing -h'",
	} {
		if got := Hint(name); got != want {
			t.Errorf("Hint(%q) = %q, want %q", name, got, want)
		}
	}
}
