package upgrade

import (
	"fmt"
	"strings"
)

// unifiedDiff returns the changes from a to b in unified format with three
// lines of context, as `diff -u` writes them. A nil side is a file that does
// not exist (/dev/null). The result is empty when a and b are equal.
func unifiedDiff(name string, a, b []byte) string {
	if a != nil && b != nil && string(a) == string(b) {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	ops := diffLines(al, bl)
	var out strings.Builder
	from, to := "a/"+name, "b/"+name
	if a == nil {
		from = "/dev/null"
	}
	if b == nil {
		to = "/dev/null"
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	const ctx = 3
	// Group edits into hunks separated by more than 2*ctx equal lines.
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := i - ctx
		if start < 0 {
			start = 0
		}
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end += min(ctx, run-end)
				break
			}
			end = run
		}
		aStart, bStart := ops[start].ai, ops[start].bi
		var aN, bN int
		var body strings.Builder
		for _, o := range ops[start:end] {
			switch o.kind {
			case ' ':
				aN++
				bN++
				writeLine(&body, ' ', al[o.ai])
			case '-':
				aN++
				writeLine(&body, '-', al[o.ai])
			case '+':
				bN++
				writeLine(&body, '+', bl[o.bi])
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aN), hunkRange(bStart, bN))
		out.WriteString(body.String())
		i = end
	}
	return out.String()
}

func writeLine(b *strings.Builder, mark byte, l string) {
	b.WriteByte(mark)
	if strings.HasSuffix(l, "\n") {
		b.WriteString(l)
		return
	}
	b.WriteString(l + "\n\\ No newline at end of file\n")
}

// hunkRange writes a hunk's start and length; an empty range names the
// line before it, as diff does.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.SplitAfter(string(b), "\n")[:strings.Count(string(b), "\n")+boolInt(!strings.HasSuffix(string(b), "\n"))]
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// diffOp is one line of an edit script. ai and bi are the positions in a
// and b the line is at (for an insertion, ai is where it goes in a).
type diffOp struct {
	kind   byte // ' ', '-' or '+'
	ai, bi int
}

// diffLines computes a shortest edit script by longest common subsequence.
// Config files are small; larger inputs fall back to replacing everything.
func diffLines(a, b []string) []diffOp {
	n, m := len(a), len(b)
	var ops []diffOp
	if n*m > 25_000_000 {
		for i := range a {
			ops = append(ops, diffOp{'-', i, 0})
		}
		for j := range b {
			ops = append(ops, diffOp{'+', n, j})
		}
		return ops
	}
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, diffOp{' ', i, j})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j]):
			ops = append(ops, diffOp{'+', i, j})
			j++
		default:
			ops = append(ops, diffOp{'-', i, j})
			i++
		}
	}
	return ops
}
