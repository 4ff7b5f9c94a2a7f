package cliflags

import (
	"bytes"
	"flag"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		args      []string
		code      int
		ok, usage bool
	}{
		{[]string{"-n", "3"}, 0, true, false},
		{[]string{"-h"}, 0, false, true},
		{[]string{"-nope"}, 2, false, true},
		{[]string{"-n", "3", "stray"}, 2, false, true},
	} {
		var out bytes.Buffer
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.SetOutput(&out)
		n := fs.Int("n", 0, "a number")
		code, ok := Parse(fs, c.args)
		if code != c.code || ok != c.ok {
			t.Errorf("%q: (%d, %v), want (%d, %v)", c.args, code, ok, c.code, c.ok)
		}
		if got := bytes.Contains(out.Bytes(), []byte("Usage")); got != c.usage {
			t.Errorf("%q: usage printed %v, want %v:\n%s", c.args, got, c.usage, out.String())
		}
		if c.ok && *n != 3 {
			t.Errorf("%q: -n = %d", c.args, *n)
		}
	}
}
