package upgrade

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// applyUnified applies the unified diffs found in text to a tree of files,
// checking every context and removed line; it is the reader the tests use
// to prove the printed diffs are correct.
func applyUnified(files map[string]string, text string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "--- ") || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "+++ ") {
			continue
		}
		from := strings.TrimSpace(strings.TrimPrefix(lines[i], "--- "))
		to := strings.TrimSpace(strings.TrimPrefix(lines[i+1], "+++ "))
		i += 2
		var old []string
		name := strings.TrimPrefix(to, "b/")
		if from != "/dev/null" {
			name = strings.TrimPrefix(from, "a/")
			old = splitLines([]byte(out[name]))
			if _, ok := out[name]; !ok {
				return nil, fmt.Errorf("%s: no such file", name)
			}
		}
		var res []string
		pos := 0
		for i < len(lines) && strings.HasPrefix(lines[i], "@@ ") {
			var as, an, bs, bn int
			f := strings.Fields(lines[i])
			parse := func(s string) (int, int) {
				a, b, ok := strings.Cut(s[1:], ",")
				x, _ := strconv.Atoi(a)
				if !ok {
					return x, 1
				}
				y, _ := strconv.Atoi(b)
				return x, y
			}
			as, an = parse(f[1])
			bs, bn = parse(f[2])
			start := as - 1
			if an == 0 {
				start = as
			}
			if start < pos {
				return nil, fmt.Errorf("%s: hunks overlap", name)
			}
			res = append(res, old[pos:start]...)
			pos = start
			i++
			gotA, gotB := 0, 0
			for i < len(lines) && (gotA < an || gotB < bn) && len(lines[i]) > 0 && strings.ContainsRune(" -+", rune(lines[i][0])) {
				l := lines[i][1:]
				noNL := i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`)
				if noNL {
					l = strings.TrimSuffix(l, "\n")
				}
				switch lines[i][0] {
				case ' ':
					if pos >= len(old) || old[pos] != l {
						return nil, fmt.Errorf("%s: context line %q does not match", name, l)
					}
					res = append(res, l)
					pos++
					gotA++
					gotB++
				case '-':
					if pos >= len(old) || old[pos] != l {
						return nil, fmt.Errorf("%s: removed line %q does not match", name, l)
					}
					pos++
					gotA++
				case '+':
					res = append(res, l)
					gotB++
				}
				i++
				if noNL {
					i++
				}
			}
			if gotA != an || gotB != bn {
				return nil, fmt.Errorf("%s: hunk -%d,%d +%d,%d holds %d/%d lines", name, as, an, bs, bn, gotA, gotB)
			}
		}
		i--
		res = append(res, old[pos:]...)
		if to == "/dev/null" {
			delete(out, name)
		} else {
			out[strings.TrimPrefix(to, "b/")] = strings.Join(res, "")
		}
	}
	return out, nil
}

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{"equal files give no diff", "x\n", "x\n", ""},
		{"a changed line shows up to three lines of context", "1\n2\n3\n4\n5\n6\n7\n8\n", "1\n2\n3\n4\nfive\n6\n7\n8\n",
			"--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"an insertion at the start keeps the following line as context", "b\n", "a\nb\n", "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n+a\n b\n"},
		{"a missing final newline is marked", "a\n", "a", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"},
		{"distant changes make separate hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\nten\n",
			"--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+ten\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unifiedDiff("f", []byte(tt.a), []byte(tt.b))
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if got != "" {
				res, err := applyUnified(map[string]string{"f": tt.a}, got)
				if err != nil || res["f"] != tt.b {
					t.Errorf("applying the diff gives %q (%v), want %q", res["f"], err, tt.b)
				}
			}
		})
	}
}

func TestUnifiedDiffOfNewAndRemovedFiles(t *testing.T) {
	d := unifiedDiff("n", nil, []byte("a\nb\n"))
	if !strings.HasPrefix(d, "--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n") {
		t.Errorf("new file diff:\n%s", d)
	}
	d = unifiedDiff("o", []byte("a\n"), nil)
	if !strings.HasPrefix(d, "--- a/o\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n") {
		t.Errorf("removed file diff:\n%s", d)
	}
}
