package subscription

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"regexp"
	"regexp/syntax"
	"strings"
)

// maxExtraRepeat bounds how far an unbounded repetition (*, +, {n,}) goes
// beyond its minimum when generating a code.
const maxExtraRepeat = 5

// maxCodeLen bounds a generated code: codes are typed or clicked by people.
const maxCodeLen = 256

var errTooLong = fmt.Errorf("codes longer than %d characters are not generated", maxCodeLen)

// GenerateCode returns a random string matching the regular expression
// expr, as the original generates confirmation and unsubscription codes
// from their configured regexes (default \d{5}). Anchors and word
// boundaries generate nothing; unbounded repetitions stop a few beyond their
// minimum. Randomness comes from crypto/rand: the codes guard subscriptions.
//
// Anchors and boundaries in the middle of an expression can make a
// generated string miss (a\bb matches nothing); each string is checked
// against the expression and a few attempts are made before giving up with
// an error naming the expression.
func GenerateCode(expr string) (string, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", fmt.Errorf("code regex %q: %w", expr, err)
	}
	check, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil {
		return "", fmt.Errorf("code regex %q: %w", expr, err)
	}
	for range 20 {
		var b strings.Builder
		if err := gen(&b, re); err != nil {
			return "", fmt.Errorf("code regex %q: %w", expr, err)
		}
		if check.MatchString(b.String()) {
			return b.String(), nil
		}
	}
	return "", fmt.Errorf("code regex %q: cannot generate a matching code", expr)
}

func randInt(n int) int {
	if n <= 1 {
		return 0
	}
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return int(v.Int64())
}

func gen(b *strings.Builder, re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpNoMatch:
		return fmt.Errorf("the expression matches nothing")
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil
	case syntax.OpLiteral:
		if b.Len()+len(re.Rune) > maxCodeLen {
			return errTooLong
		}
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && randInt(2) == 1 {
				r = swapCase(r)
			}
			b.WriteRune(r)
		}
		return nil
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return fmt.Errorf("the expression matches nothing")
		}
		b.WriteRune(pickFromClass(re.Rune))
		return nil
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		// printable ASCII, so codes survive URLs and SMS
		b.WriteRune(rune(' ' + 1 + randInt('~'-' ')))
		return nil
	case syntax.OpCapture:
		return gen(b, re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if err := gen(b, s); err != nil {
				return err
			}
		}
		return nil
	case syntax.OpAlternate:
		return gen(b, re.Sub[randInt(len(re.Sub))])
	case syntax.OpStar:
		return repeat(b, re.Sub[0], 0, -1)
	case syntax.OpPlus:
		return repeat(b, re.Sub[0], 1, -1)
	case syntax.OpQuest:
		return repeat(b, re.Sub[0], 0, 1)
	case syntax.OpRepeat:
		return repeat(b, re.Sub[0], re.Min, re.Max)
	}
	return fmt.Errorf("unsupported construct %v", re.Op)
}

func repeat(b *strings.Builder, re *syntax.Regexp, lo, hi int) error {
	if hi < 0 {
		hi = lo + maxExtraRepeat
	}
	n := lo + randInt(hi-lo+1)
	for range n {
		if b.Len() > maxCodeLen {
			return errTooLong
		}
		if err := gen(b, re); err != nil {
			return err
		}
	}
	return nil
}

// pickFromClass picks a rune from a class given as ranges [lo0,hi0,lo1,hi1…],
// preferring printable ASCII when the class has any, so that a negated class
// ([^a]) does not produce control characters.
func pickFromClass(ranges []rune) rune {
	var printable []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := max(ranges[i], '!'), min(ranges[i+1], '~')
		if lo <= hi {
			printable = append(printable, lo, hi)
		}
	}
	if len(printable) > 0 {
		ranges = printable
	}
	total := 0
	for i := 0; i+1 < len(ranges); i += 2 {
		total += int(ranges[i+1]-ranges[i]) + 1
	}
	k := randInt(total)
	for i := 0; i+1 < len(ranges); i += 2 {
		size := int(ranges[i+1]-ranges[i]) + 1
		if k < size {
			return ranges[i] + rune(k)
		}
		k -= size
	}
	return ranges[0]
}

func swapCase(r rune) rune {
	switch {
	case r >= 'a' && r <= 'z':
		return r - 'a' + 'A'
	case r >= 'A' && r <= 'Z':
		return r - 'A' + 'a'
	}
	return r
}
