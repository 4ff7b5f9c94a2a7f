package config

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Keys of ours, with no counterpart in NotifyBC: what a deployment sets to
// close the attacks the original leaves open (README, "differs on
// purpose"). Each has a default that is safe and keeps NotifyBC's clients
// working, so an existing deployment needs none of them.

// Guard is the typed view of those keys.
type Guard struct {
	// AllowedHosts (allowedHosts) are more names by which browsers reach
	// the service, besides httpHost's host, the loopback names and the
	// listen host: a browser request addressed to any other name gets no
	// admin-address or SiteMinder authority (package notify/access), and
	// links never point at it.
	AllowedHosts []string
	// LoginTokenTTL (loginTokenTtlHours) bounds the life of the access
	// tokens POST /administrators/login issues (the console's password
	// sign-in).
	LoginTokenTTL time.Duration
	// CreationLimit (subscription.creationLimit) bounds the subscriptions
	// a caller who is not an administrator creates, per client.
	CreationLimit Limit
	// ConfirmationLimit (subscription.confirmationRequestLimit) bounds the
	// confirmation requests such callers make the service send to one
	// address.
	ConfirmationLimit Limit
	// SMSNumber (sms.allowedNumberRegex) is the pattern the number of an
	// SMS subscription written by a caller who is not an administrator
	// must match, spaces, dashes, dots and parentheses removed; nil
	// admits any.
	SMSNumber *regexp.Regexp
}

// Limit is at most Max events per Duration milliseconds; a disabled limit
// counts nothing.
type Limit struct {
	Enabled  bool
	Max      int
	Duration int // milliseconds, as throttles are written
}

// Period is Duration as a time.Duration.
func (l Limit) Period() time.Duration { return time.Duration(l.Duration) * time.Millisecond }

// Defaults of the Guard keys, and why:
//
//   - 8 hours for a password sign-in: a working day, so the console asks
//     once a day, while a token copied out of a browser or a log is dead by
//     the next morning. NotifyBC's never expired.
//   - 20 subscriptions per client per hour: one person subscribes to a few
//     services; an office behind one address gets a few dozen an hour. The
//     attack was 40 in 0.1 s.
//   - 10 confirmation requests per address per hour: a person who retries,
//     or subscribes one address to several services, is never stopped; a
//     mailbox or phone cannot be flooded (at most 240 a day, and only by
//     someone who does not stop).
const (
	DefaultLoginTokenTTL = 8 * time.Hour
)

var (
	DefaultCreationLimit     = Limit{Enabled: true, Max: 20, Duration: 3_600_000}
	DefaultConfirmationLimit = Limit{Enabled: true, Max: 10, Duration: 3_600_000}
)

func (r *reader) guard() Guard {
	g := Guard{
		AllowedHosts:      r.strings("allowedHosts"),
		LoginTokenTTL:     DefaultLoginTokenTTL,
		CreationLimit:     r.limit("subscription.creationLimit", DefaultCreationLimit),
		ConfirmationLimit: r.limit("subscription.confirmationRequestLimit", DefaultConfirmationLimit),
	}
	for i, h := range g.AllowedHosts {
		if strings.TrimSpace(h) != "" && !validHostEntry(h) {
			r.bad(fmt.Sprintf("allowedHosts[%d]", i), fmt.Sprintf("%q is not a host name or address: write it without scheme, path or wildcard (.example.org admits every name below example.org)", h))
		}
	}
	if _, ok := r.get("loginTokenTtlHours"); ok {
		n := len(r.problems)
		h := r.number("loginTokenTtlHours")
		if len(r.problems) > n {
			// not a number: said
		} else if h <= 0 || h > 24*366 {
			r.bad("loginTokenTtlHours", "must be a number of hours above 0 and at most a year")
		} else {
			g.LoginTokenTTL = time.Duration(h * float64(time.Hour))
		}
	}
	if s := r.str("sms.allowedNumberRegex"); s != "" {
		re, err := regexp.Compile(s)
		if err != nil {
			r.bad("sms.allowedNumberRegex", "is not a valid regular expression: "+err.Error())
		} else {
			g.SMSNumber = re
		}
	}
	return g
}

// validHostEntry: a host name or address, perhaps with a port, or
// ".domain"; no scheme, path, user or wildcard.
func validHostEntry(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && s != "." && !strings.ContainsAny(s, "/?#@*\\ \t") && !strings.HasPrefix(s, "..")
}

// limit reads {enabled, max, duration}; keys left out keep def's values.
func (r *reader) limit(p string, def Limit) Limit {
	if r.object(p) == nil {
		return def
	}
	l := def
	if _, ok := r.get(p + ".enabled"); ok {
		l.Enabled = r.boolean(p + ".enabled")
	}
	if _, ok := r.get(p + ".max"); ok {
		l.Max = r.integer(p + ".max")
	}
	if _, ok := r.get(p + ".duration"); ok {
		l.Duration = r.integer(p + ".duration")
	}
	if l.Enabled && (l.Max < 1 || l.Duration < 1) {
		r.bad(p, "an enabled limit needs max and duration (milliseconds) of at least 1")
	}
	return l
}
