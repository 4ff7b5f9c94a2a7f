package config

import (
	"fmt"
	"strings"
)

// Problem is one finding about the configuration: where (file, line when
// known, key path) and what.
type Problem struct {
	File    string // "" when the value is a built-in default or the finding is about the merged result
	Line    int    // 0 when unknown
	Path    string // dotted key path; "" for the file as a whole
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is returned by Load when the configuration cannot be used. It lists
// every problem found, so a deployment is fixed in one round, and the
// warnings found on the way.
type Error struct {
	Problems []Problem
	Warnings []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	if len(e.Problems) == 1 {
		b.WriteString("notify config: 1 problem:")
	} else {
		fmt.Fprintf(&b, "notify config: %d problems:", len(e.Problems))
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}
