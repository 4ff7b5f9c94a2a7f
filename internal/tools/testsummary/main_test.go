package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testdata/stream.json is what `go test -json -timeout 3s ./...` printed
// for a module with a passing, a failing and three skipping tests (two
// with one reason), a package that does not build, one whose test hangs
// past the timeout, and one without tests.
func TestSummaryOfARecordedRun(t *testing.T) {
	f, err := os.Open("testdata/stream.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	r := newRun(w, false)
	r.read(f)
	r.summary(4 * time.Second)
	w.Flush()
	out := b.String()

	for _, want := range []string{
		// streamed as plain go test prints it
		"b/b_test.go:3:31: declared and not used: x\n",
		"    a_test.go:5: boom\n        second line\n--- FAIL: TestSub/two (0.00s)\n",
		"?   \ttj/d\t[no test files]\n",
		"panic: test timed out after 3s\n",
		// the summary
		"=== test summary (4s) ===\n1 passed, 3 failed, 4 skipped; packages: 0 ok, 3 failed, 1 without tests\n",
		"Did not build (1):\n  tj/b [tj/b.test]\n",
		"Failed (2):\n  tj/a TestSub/two\n  tj/a TestSub\n",
		"Did not finish: the package stopped while they ran (panic or -timeout) (1):\n  tj/c TestHang\n",
		"Skipped (4), by reason:\n     2  GOVKIT_TEST_REDIS_ADDR is not set\n          tj/a TestSub/one\n          tj/a TestSkipMulti\n" +
			"     1  set X to run this\n          tj/a TestSkip\n     1  (no reason given)\n          tj/a TestSkipNow\n",
		"\nFAIL\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, not := range []string{"=== RUN", "hello", "--- PASS", "PASS\nok"} {
		if strings.Contains(out, not) {
			t.Errorf("output has %q, which plain go test does not print for passing tests:\n%s", not, out)
		}
	}
	// The hung test's stack comes before its package's FAIL line.
	if strings.Index(out, "panic: test timed out") > strings.Index(out, "FAIL\ttj/c") {
		t.Errorf("the package line came before the output that explains it:\n%s", out)
	}
}

func TestSkipReason(t *testing.T) {
	tests := []struct {
		name   string
		output []string
		want   string
	}{
		{"the message of t.Skip, without file and line", []string{"    x_test.go:12: GOVKIT_TEST_REDIS_ADDR is not set\n", "--- SKIP: TestX (0.00s)\n"}, "GOVKIT_TEST_REDIS_ADDR is not set"},
		{"the last message when the test logged before skipping", []string{"    x_test.go:3: starting\n", "    x_test.go:9: no chromium\n"}, "no chromium"},
		{"a message over several lines is joined", []string{"        x_test.go:3: set GOVKIT_LOAD=1\n", "            to run the load test\n", "    --- SKIP: TestX/a (0.00s)\n"}, "set GOVKIT_LOAD=1 to run the load test"},
		{"t.SkipNow gives no reason", []string{"--- SKIP: TestX (0.00s)\n"}, "(no reason given)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := skipReason(tt.output); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The command runs the real go test on a module and exits as it does.
func TestRunsGoTest(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.org/m\n\ngo 1.22\n")
	write("m_test.go", `package m

import "testing"

func TestPasses(t *testing.T) {}
func TestSkips(t *testing.T)  { t.Skip("EXAMPLE_SERVICE is not set") }
func TestFails(t *testing.T)  { t.Fatal("it broke") }
`)
	var out, errb bytes.Buffer
	code := testAndSummarize([]string{"./..."}, dir, &out, &errb)
	if code != 1 {
		t.Errorf("exit %d, want 1 (stderr %q)", code, errb.String())
	}
	for _, want := range []string{"it broke", "--- FAIL: TestFails", "FAIL\texample.org/m",
		"1 passed, 1 failed, 1 skipped", "1  EXAMPLE_SERVICE is not set", "example.org/m TestSkips", "Failed (1):\n  example.org/m TestFails\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	write("m_test.go", "package m\n\nimport \"testing\"\n\nfunc TestPasses(t *testing.T) {}\n")
	out.Reset()
	if code := testAndSummarize([]string{"./..."}, dir, &out, &errb); code != 0 || !strings.HasSuffix(out.String(), "\nPASS\n") ||
		!strings.HasPrefix(out.String(), "ok  \texample.org/m\t") {
		t.Errorf("a passing run: exit %d, want 0 and plain go test's \"ok\" line first\n%s", code, out.String())
	}
}
