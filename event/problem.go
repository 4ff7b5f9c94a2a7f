package event

import (
	"errors"
	"strconv"
	"strings"
)

// Rule names the rule a [Problem] breaks. Rules 1 to 8 are the validity
// rules listed in the package documentation; the other values name checks
// that are not validity rules of the Event itself.
type Rule int

// The validity rules, numbered as in the package documentation.
const (
	RuleOneStart     Rule = 1 // exactly one of start_date, start_datetime
	RuleDateForm     Rule = 2 // end_date only together with start_date
	RuleDateTimeForm Rule = 3 // end_datetime only together with start_datetime
	RuleNoMixing     Rule = 4 // no date property together with a datetime property
	RuleFormat       Rule = 5 // every value is a string of its format
	RuleNoUnknown    Rule = 6 // no other properties
	RuleNoDuplicate  Rule = 7 // no key twice in one object
	RuleNoNull       Rule = 8 // null is not a string
)

// Checks that are not validity rules.
const (
	// RuleJSON: the record is not a JSON object at all (bad syntax, an
	// array, a string, ...), so no property rule could be checked.
	RuleJSON Rule = -1
	// RuleOrder: the optional ordering check of [Event.CheckOrder].
	RuleOrder Rule = -2
	// RuleConvert: a conversion ([Event.ToDateForm]) or a constructor
	// could not produce a valid Event.
	RuleConvert Rule = -3
)

// String returns "1" to "8" for the validity rules and "json", "order" or
// "convert" for the other checks; the CLI prints these in its "rule" field.
func (r Rule) String() string {
	switch r {
	case RuleJSON:
		return "json"
	case RuleOrder:
		return "order"
	case RuleConvert:
		return "convert"
	}
	return strconv.Itoa(int(r))
}

// Sentinel errors. Every [Problem] wraps exactly one of them, so callers
// test for a kind of problem with errors.Is on the error returned by
// [Parse], [Validate] or [Event.UnmarshalJSON].
var (
	ErrSyntax          = errors.New("not valid JSON")
	ErrNotObject       = errors.New("not a JSON object")
	ErrNoStart         = errors.New("neither start_date nor start_datetime is present")
	ErrTwoStarts       = errors.New("start_date and start_datetime are both present")
	ErrEndWithoutStart = errors.New("an end without its start")
	ErrMixedForms      = errors.New("date and datetime properties mixed")
	ErrNotString       = errors.New("value is not a string")
	ErrFormat          = errors.New("value does not have the property's format")
	ErrUnknownProperty = errors.New("unknown property")
	ErrDuplicate       = errors.New("duplicate property")
	ErrNull            = errors.New("value is null")
	ErrOrder           = errors.New("end is before start")
	ErrOutOfRange      = errors.New("year outside 0000-9999")
)

// PropertyRecord is the Property of a problem that concerns the record as a
// whole (it is not a JSON object) rather than one property.
const PropertyRecord = "(record)"

// A Problem is one broken rule: which property, which rule, and what is
// wrong with it in words. It wraps one of the package's sentinel errors.
type Problem struct {
	Property string // start_date, ..., an unknown key (quoted if not a plain word), or PropertyRecord
	Rule     Rule
	Err      error  // the sentinel error, for errors.Is
	Detail   string // the problem in words, naming the offending value
}

// Error returns "PROPERTY: detail (rule N)".
func (p Problem) Error() string {
	return p.Property + ": " + p.Detail + " (rule " + p.Rule.String() + ")"
}

// Unwrap returns the sentinel error.
func (p Problem) Unwrap() error { return p.Err }

// Problems is every problem found in one record, in the order they were
// found: syntax and per-property problems in input order, then the shape
// rules (1 to 4). It is never empty when returned as an error.
type Problems []Problem

// Error joins the problems with "; ".
func (ps Problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap lets errors.Is and errors.As look at every problem.
func (ps Problems) Unwrap() []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}

// Has reports whether one of the problems breaks rule r.
func (ps Problems) Has(r Rule) bool {
	for _, p := range ps {
		if p.Rule == r {
			return true
		}
	}
	return false
}
